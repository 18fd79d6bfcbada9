#include "cli/help_format.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <utility>
#include <vector>

#include "backend/registry.h"
#include "cli/exit_status_table.h"
#include "text/display_width.h"

namespace gpureap::cli {
namespace {

constexpr size_t kNameColumn = 30;  // where descriptions start
constexpr size_t kNarrowest = 60;
constexpr size_t kWidest = 100;  // wider text is harder to read, whatever the terminal
constexpr size_t kPipeWidth = 80;

// The type names CLI11 gives values by their C++ type: they say nothing to a user.
bool is_generic_type(const std::string& t) {
  return t == "TEXT" || t == "INT" || t == "UINT" || t == "FLOAT" || t == "NUMBER" ||
         t == "BOOLEAN" || t == "CHAR" || t == "ENUM" || t.empty();
}

// What a value is, for options whose C++ type is a string or a number (by their long name; the
// same name means the same kind of value in every subcommand).
const std::pair<const char*, const char*> kPlaceholders[] = {
    {"proc-root", "DIR"},
    {"dev-root", "DIR"},
    {"sys-root", "DIR"},
    {"runtime-root", "DIR"},
    {"kmsg", "FILE"},
    {"config", "FILE"},
    {"check-config", "FILE"},
    {"report", "FILE"},
    {"file", "FILE"},
    {"from", "FILE"},
    {"out", "FILE"},
    {"audit-log", "FILE"},
    {"driver-timeout", "DURATION"},
    {"grace", "DURATION"},
    {"timeout", "DURATION"},
    {"wait-release", "DURATION"},
    {"release-timeout", "DURATION"},
    {"sample", "DURATION"},
    {"settle", "DURATION"},
    {"delay", "DURATION"},
    {"since", "TIME"},
    {"listen", "HOST:PORT"},
    {"daemon", "HOST:PORT"},
    {"signal", "SIGNAL"},
    {"user", "USER"},
    {"policy", "NAME"},
    {"only", "CODE"},
    {"unattributed-threshold", "SIZE"},
    {"gpu", "N"},
    {"pid", "PID"},
    {"processes", "N"},
    {"prometheus", "URL"},
    {"token-file", "FILE"},
    {"basic-auth-file", "FILE"},
    {"job", "NAME"},
    {"node", "NODE"},
    {"pod", "POD"},
    {"stale-after", "DURATION"},
    {"interval", "DURATION"},
};

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The type name split: what CLI11 calls the value, and the validators' descriptions after it
// ("UINT:INT in [1 - 12]" -> "UINT", {"INT in [1 - 12]"}). A type name of gpureap's own
// ("HOST:PORT", "[INTERVAL]") is kept whole.
std::pair<std::string, std::vector<std::string>> split_type(const CLI::Option* opt) {
  std::string full = opt->get_type_name();
  auto colon = full.find(':');
  std::string base = full.substr(0, colon);
  if (colon == std::string::npos || !is_generic_type(base)) return {full, {}};
  std::vector<std::string> checks;
  std::string rest = full.substr(colon + 1);
  // A set's description may hold ':' inside its braces; split only outside them.
  int depth = 0;
  std::string cur;
  for (char c : rest) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == ':' && depth == 0) {
      checks.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) checks.push_back(cur);
  return {base, checks};
}

std::string placeholder(const CLI::Option* opt) {
  auto [base, checks] = split_type(opt);
  if (!is_generic_type(base)) return base;
  for (const auto& name : opt->get_lnames()) {
    for (const auto& [option, word] : kPlaceholders)
      if (name == option) return word;
    for (const auto& entry : backend::builtin_backends())  // a driver library's path
      if (entry.library && name == entry.library->option) return "PATH";
  }
  if (opt->get_positional()) return upper(opt->get_name(true, false));
  if (base == "INT" || base == "UINT" || base == "NUMBER") return "N";
  return "VALUE";
}

// "INT in [1 - 12]" -> "1 to 12"; "{a,b,c}" -> "one of a, b, c".
std::string check_sentence(const std::string& check) {
  auto in = check.find(" in [");
  if (in != std::string::npos && check.back() == ']') {
    std::string range = check.substr(in + 5, check.size() - in - 6);
    auto dash = range.find(" - ");
    if (dash != std::string::npos) return range.substr(0, dash) + " to " + range.substr(dash + 3);
  }
  if (check.size() > 2 && check.front() == '{' && check.back() == '}') {
    std::string out = "one of ";
    std::string inner = check.substr(1, check.size() - 2);
    for (char c : inner) out += c == ',' ? std::string(", ") : std::string(1, c);
    return out;
  }
  return check;
}

bool mentions_default(const std::string& desc) {
  return desc.find("default") != std::string::npos;
}

// Words of `text` in lines of at most `width` columns, the first starting after `first_used`
// columns and the others after `indent` spaces; a word longer than a line stands alone.
// Existing line breaks are kept.
std::string wrap(const std::string& text, size_t width, size_t first_used, size_t indent) {
  std::string out;
  size_t used = first_used;
  bool line_start = true;
  std::istringstream paragraphs(text);
  std::string paragraph;
  bool first_paragraph = true;
  while (std::getline(paragraphs, paragraph)) {
    if (!first_paragraph) {
      out += "\n" + std::string(indent, ' ');
      used = indent;
      line_start = true;
    }
    first_paragraph = false;
    // A line laid out by hand (an example, columns: it starts with or holds two spaces) is
    // kept as it is.
    if (paragraph.starts_with(' ') || paragraph.find("  ") != std::string::npos) {
      if (!line_start) {
        out += "\n" + std::string(indent, ' ');
        used = indent;
      }
      out += paragraph;
      used += text::text_width(paragraph);
      line_start = false;
      continue;
    }
    std::istringstream words(paragraph);
    std::string word;
    while (words >> word) {
      size_t w = text::text_width(word);
      if (!line_start && used + 1 + w > width) {
        out += "\n" + std::string(indent, ' ');
        used = indent;
        line_start = true;
      }
      if (!line_start) {
        out += ' ';
        ++used;
      }
      out += word;
      used += w;
      line_start = false;
    }
  }
  return out;
}

// "policy test" for that subcommand, "" for gpureap itself.
std::string command_path(const CLI::App* app) {
  std::string out;
  for (const CLI::App* at = app; at && at->get_parent(); at = at->get_parent())
    out = at->get_name() + (out.empty() ? "" : " " + out);
  return out;
}

// The subcommand whose statuses apply: `policy test` reports as `policy` does.
std::string status_command(const CLI::App* app) {
  std::string path = command_path(app);
  return path.substr(0, path.find(' '));
}

}  // namespace

HelpFormatter::HelpFormatter(size_t width) : width_(width) {
  column_width(kNameColumn);
}

// A flag takes no value: CLI11 gives it no type name.
static bool is_flag(const CLI::Option* opt) {
  return opt->get_type_size() == 0 || opt->get_type_name().empty();
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  if (is_flag(opt)) return "";
  return " " + placeholder(opt);
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
  std::string desc = opt->get_description();
  std::vector<std::string> notes;
  for (const auto& check : split_type(opt).second) notes.push_back(check_sentence(check));
  if (!opt->get_default_str().empty() && !mentions_default(desc) && !is_flag(opt))
    notes.push_back("default " + opt->get_default_str());
  if (opt->get_required() && !opt->get_positional()) notes.push_back("required");
  for (const CLI::Option* other : opt->get_excludes())
    notes.push_back("not with " + other->get_name());
  for (const CLI::Option* other : opt->get_needs()) notes.push_back("needs " + other->get_name());
  if (!opt->get_envname().empty()) notes.push_back("also $" + opt->get_envname());
  if (notes.empty()) return desc;
  std::string joined;
  for (const auto& n : notes) joined += (joined.empty() ? "" : "; ") + n;
  return desc + (desc.empty() ? "" : " ") + "(" + joined + ")";
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  std::string name =
      is_positional ? make_option_usage(opt) : make_option_name(opt, false) + make_option_opts(opt);
  std::string out = "  " + name;
  std::string desc = make_option_desc(opt);
  if (desc.empty()) return out + "\n";
  size_t used = text::text_width(out);
  if (used + 2 > kNameColumn) {
    out += "\n";
    used = 0;
  }
  out += std::string(kNameColumn - used, ' ');
  return out + wrap(desc, width_, kNameColumn, kNameColumn) + "\n";
}

std::string HelpFormatter::make_option_usage(const CLI::Option* opt) const {
  std::string name = placeholder(opt);
  if (opt->get_expected_max() >= CLI::detail::expected_max_vector_size) name += "...";
  return opt->get_required() ? name : "[" + name + "]";
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  std::string desc = app->get_description();
  if (desc.empty()) return "";
  return wrap(desc, width_, 0, 0) + "\n";
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
  // `run`'s command is everything after `--`, which CLI11's usage line cannot say.
  if (command_path(app) == "run")
    return "Usage: " + name + " [OPTIONS] -- COMMAND [ARGUMENTS...]\n";
  return CLI::Formatter::make_usage(app, std::move(name));
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  std::string out = "  " + sub->get_display_name(true);
  size_t used = text::text_width(out);
  if (used + 2 > kNameColumn) {
    out += "\n";
    used = 0;
  }
  out += std::string(kNameColumn - used, ' ');
  return out + wrap(sub->get_description(), width_, kNameColumn, kNameColumn) + "\n";
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  std::string out;
  if (!app->get_footer().empty()) out += wrap(app->get_footer(), width_, 0, 0) + "\n\n";
  // A group of subcommands (policy) lists its own statuses only on its subcommands' help.
  return out + exit_status_text(status_command(app), width_);
}

std::shared_ptr<HelpFormatter> make_help_formatter(std::optional<size_t> terminal_width) {
  size_t width = terminal_width ? std::clamp(*terminal_width, kNarrowest, kWidest) : kPipeWidth;
  return std::make_shared<HelpFormatter>(width);
}

std::string exit_status_text(const std::string& command, size_t width) {
  constexpr size_t kCodeColumn = 8;
  std::string out = "Exit status:\n";
  for (const auto& s : exit_statuses(command)) {
    const std::string& code = s.code;
    if (code.empty()) {  // a note under the table
      out += "  " + wrap(s.meaning, width, 2, 2) + "\n";
      continue;
    }
    std::string line = "  " + code;
    line += std::string(kCodeColumn > line.size() ? kCodeColumn - line.size() : 1, ' ');
    out += line + wrap(s.meaning, width, kCodeColumn, kCodeColumn) + "\n";
  }
  return out;
}

}  // namespace gpureap::cli
