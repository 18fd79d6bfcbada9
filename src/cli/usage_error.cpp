#include "cli/usage_error.h"

#include <cctype>

#include "text/escape.h"

namespace gpureap::cli {
namespace {

// The subcommand being parsed when the error came, or none.
const CLI::App* parsed_subcommand(const CLI::App& app) {
  for (const auto* sub : app.get_subcommands()) return sub;
  return nullptr;
}

std::string help_of(const CLI::App* sub) {
  return sub ? "`gpureap " + sub->get_name() + " --help`" : "`gpureap --help`";
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
  if (sub)
    if (const auto* o = sub->get_option_no_throw(name)) return o;
  return app.get_option_no_throw(name);
}

std::string lower_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

std::string usage_error_text(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* sub = parsed_subcommand(app);
  const std::string what = e.what();
  std::string out;
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::string args = after(what, "expected: ");
    std::string first = args.substr(0, args.find(' '));
    if (first.starts_with("-"))
      out = "unknown option " + backticked(first) + "; run " + help_of(sub) + " for the options";
    else if (!sub)
      out = "unknown subcommand " + backticked(first) + "; run `gpureap --help` for the list";
    else
      out = "unexpected argument " + backticked(first) + "; run " + help_of(sub) + " for the usage";
  } else if (dynamic_cast<const CLI::ConversionError*>(&e) &&
             what.starts_with("Could not convert: ")) {
    std::string rest = after(what, "Could not convert: ");
    auto eq = rest.find(" = ");
    std::string name = rest.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : rest.substr(eq + 3);
    std::string kind = wanted(find_option(app, sub, name));
    out = backticked(value) + " is not " + (kind.empty() ? "a valid value for " + name : kind) +
          (kind.empty() ? "" : " (" + name + ")") + "; run " + help_of(sub) + " for the usage";
  } else {
    out = lower_first(what) + "; run " + help_of(sub) + " for the usage";
  }
  return text::terminal_safe_lines(out);
}

}  // namespace gpureap::cli
