#include "cli/usage_error.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "text/escape.h"
#include "text/suggest.h"

namespace gpureap::cli {
namespace {

// The innermost subcommand being parsed when the error came (`policy test`), or none.
const CLI::App* parsed_subcommand(const CLI::App& app) {
  const CLI::App* sub = nullptr;
  for (const CLI::App* at = &app;;) {
    auto subs = at->get_subcommands();
    if (subs.empty()) return sub;
    sub = at = subs.front();
  }
}

// "gpureap policy test"
std::string command_of(const CLI::App* sub) {
  std::string out;
  for (const CLI::App* at = sub; at && at->get_parent(); at = at->get_parent())
    out = " " + at->get_name() + out;
  return "gpureap" + out;
}

std::string help_of(const CLI::App* sub) {
  return "`" + command_of(sub) + " --help`";
}

std::string after(const std::string& what, const std::string& marker) {
  auto at = what.find(marker);
  return at == std::string::npos ? std::string() : what.substr(at + marker.size());
}

std::string backticked(const std::string& s) {
  return "`" + s + "`";
}

// Which kind of value an option wants, from its type name ("PID", "N", "INTERVAL", ...).
std::string wanted(const CLI::Option* option) {
  std::string type = option ? option->get_type_name() : "";
  for (auto& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (type.find("PID") != std::string::npos) return "a PID";
  if (type == "N" || type.find("INT") == 0 || type.find("UINT") == 0) return "a number";
  return "";
}

const CLI::Option* find_option(const CLI::App& app, const CLI::App* sub, const std::string& name) {
  for (const CLI::App* at = sub; at; at = at->get_parent())
    if (const auto* o = at->get_option_no_throw(name)) return o;
  return app.get_option_no_throw(name);
}

// CLI11 starts its messages with a capital; gpureap's follow "gpureap: " in lower case. A
// name in capitals ("CMD") stays as it is.
std::string lower_first(std::string s) {
  if (s.size() > 1 && std::isupper(static_cast<unsigned char>(s[0])) &&
      std::islower(static_cast<unsigned char>(s[1])))
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

// Every spelling of the options `sub` accepts, with gpureap's global ones (they are accepted
// after the subcommand too).
std::vector<std::string> option_names(const CLI::App& app, const CLI::App* sub) {
  std::vector<std::string> names;
  auto add = [&](const CLI::App* from) {
    for (const CLI::Option* o : from->get_options()) {
      if (o->get_positional() && o->get_lnames().empty() && o->get_snames().empty()) continue;
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      for (const auto& s : o->get_snames()) names.push_back("-" + s);
    }
  };
  for (const CLI::App* at = sub; at; at = at->get_parent()) add(at);
  if (!sub) add(&app);
  return names;
}

std::vector<std::string> subcommand_names(const CLI::App& from) {
  std::vector<std::string> names;
  for (const CLI::App* s : from.get_subcommands({}))
    if (!s->get_name().empty()) names.push_back(s->get_name());
  return names;
}

// "; did you mean `--tree`? Run `gpureap ps --help` for the options", or without a close match
// "; run `gpureap ps --help` for the options".
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates,
                         const std::string& help, const std::string& for_what) {
  auto match = text::closest_match(typed, candidates);
  if (!match) return "; run " + help + " " + for_what;
  return "; did you mean " + backticked(*match) + "? Run " + help + " " + for_what;
}

std::string join_words(const std::vector<std::string>& words, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < words.size(); ++i)
    out += (out.empty() ? "" : " ") + text::shell_quote(words[i]);
  return out;
}

// `gpureap run CMD ARGS` where ARGS has an option gpureap does not know: the option was the
// command's, which belongs after `--`. The command line as it should have been written, or none
// when the unknown option came before the command (then it is gpureap's, mistyped).
std::optional<std::string> run_rewritten(const CLI::App& app, const CLI::App* run,
                                         const std::vector<std::string>& args,
                                         const std::string& unknown) {
  auto at = std::find(args.begin(), args.end(), run->get_name());
  if (at == args.end()) return std::nullopt;
  const size_t first = static_cast<size_t>(at - args.begin()) + 1;
  size_t i = first;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--") return std::nullopt;  // the command is already after `--`
    if (a.size() < 2 || a[0] != '-') break;
    const std::string name = a.substr(0, a.find('='));
    const CLI::Option* o = find_option(app, run, name);
    if (!o) return std::nullopt;  // an unknown option before the command: gpureap's, mistyped
    i += (o->get_type_size() != 0 && a.find('=') == std::string::npos) ? 2 : 1;
  }
  if (i >= args.size()) return std::nullopt;
  bool after_command = false;
  for (size_t j = i + 1; j < args.size(); ++j)
    if (args[j].substr(0, args[j].find('=')) == unknown) after_command = true;
  if (!after_command) return std::nullopt;
  // What came before `run` (global options) stays where it was.
  std::string before = join_words(args, 0, first);
  std::string options = join_words(args, first, i);
  return "gpureap " + before + " " + (options.empty() ? "" : options + " ") + "-- " +
         join_words(args, i, args.size());
}

// For the first argument the parser could not place.
std::string extras_text(const CLI::App& app, const CLI::App* sub, const std::string& first,
                        const std::vector<std::string>& args) {
  if (first.size() > 1 && first[0] == '-') {
    std::string name = first.substr(0, first.find('='));
    if (sub && sub->get_name() == "run")
      if (auto rewritten = run_rewritten(app, sub, args, name))
        return backticked(name) +
               " is not an option of gpureap: gpureap's options go before `--`, the command "
               "and its arguments after it:\n  " +
               *rewritten;
    return "unknown option " + backticked(name) +
           did_you_mean(name, option_names(app, sub), help_of(sub), "for the options");
  }
  const CLI::App& level = sub ? *sub : app;
  auto subs = subcommand_names(level);
  if (!sub)
    return "unknown subcommand " + backticked(first) +
           did_you_mean(first, subs, "`gpureap --help`", "for the list");
  if (!subs.empty())
    return "unknown subcommand " + backticked(first) + " of `" + command_of(sub) + "`" +
           did_you_mean(first, subs, help_of(sub), "for the list");
  return "unexpected argument " + backticked(first) + "; run " + help_of(sub) + " for the usage";
}

// The arguments the parser could not place, where it kept them (the subcommand, or gpureap
// itself when the subcommand passed them up).
std::vector<std::string> unplaced(const CLI::App& app, const CLI::App* sub) {
  auto rest = sub->remaining();
  return rest.empty() ? app.remaining() : rest;
}

}  // namespace

std::string usage_error_text(const CLI::App& app, const CLI::ParseError& e,
                             const std::vector<std::string>& args) {
  const CLI::App* sub = parsed_subcommand(app);
  const std::string what = e.what();
  const std::string usage = "; run " + help_of(sub) + " for the usage";
  std::string out;
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // The first argument the parser could not place, in the order given (CLI11's message lists
    // them last first).
    auto rest = app.remaining(true);
    std::string list = after(what, "expected: ");
    std::string first = rest.empty() ? list.substr(list.rfind(' ') + 1) : rest.front();
    out = extras_text(app, sub, first, args);
  } else if (dynamic_cast<const CLI::ConversionError*>(&e) &&
             what.starts_with("Could not convert: ")) {
    std::string rest = after(what, "Could not convert: ");
    auto eq = rest.find(" = ");
    std::string name = rest.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : rest.substr(eq + 3);
    std::string kind = wanted(find_option(app, sub, name));
    out = backticked(value) + " is not " + (kind.empty() ? "a valid value for " + name : kind) +
          (kind.empty() ? "" : " (" + name + ")") + usage;
  } else if (dynamic_cast<const CLI::RequiredError*>(&e) && what.ends_with(" is required")) {
    std::string name = what.substr(0, what.size() - std::string(" is required").size());
    const CLI::Option* o = find_option(app, sub, name);
    if (sub && sub->get_name() == "run" && o && o->get_positional())
      out = "a command is required: `gpureap run [OPTIONS] -- COMMAND [ARGUMENTS...]`" + usage;
    else if (name == "A subcommand" && sub && !unplaced(app, sub).empty())
      out = extras_text(app, sub, unplaced(app, sub).front(), args);  // `policy tset`
    else if (name == "A subcommand" && sub)
      out = "`" + command_of(sub) + "` needs a subcommand; run " + help_of(sub) + " for the list";
    else
      out = (o ? backticked(name) : lower_first(name)) + " is required" + usage;
  } else if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.ends_with(" missing") &&
             what.find(": ") != std::string::npos) {
    // "--grace: 1 required TEXT missing"
    out = backticked(what.substr(0, what.find(": "))) + " needs a value" + usage;
  } else if (dynamic_cast<const CLI::ExcludesError*>(&e) &&
             what.find(" excludes ") != std::string::npos) {
    auto at = what.find(" excludes ");
    out = backticked(what.substr(0, at)) + " and " + backticked(what.substr(at + 10)) +
          " cannot be used together" + usage;
  } else if (dynamic_cast<const CLI::RequiresError*>(&e) &&
             what.find(" requires ") != std::string::npos) {
    auto at = what.find(" requires ");
    out = backticked(what.substr(0, at)) + " needs " + backticked(what.substr(at + 10)) + usage;
  } else {
    out = lower_first(what) + usage;
  }
  return text::terminal_safe_lines(out);
}

}  // namespace gpureap::cli
