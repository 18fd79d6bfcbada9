#pragma once
// How every `--help` of gpureap reads: CLI11's formatter, with the parser's leftovers
// ("Excludes: --group", "UINT:INT in [1 - 12]=5", "REQUIRED") turned into sentences after each
// option, a placeholder that says what a value is (DIR, FILE, DURATION, N, PID), text wrapped
// at word boundaries, and the command's exit statuses at the end.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

namespace gpureap::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  // Lines are wrapped at `width` columns (the terminal's, or 80 into a pipe).
  explicit HelpFormatter(size_t width);

  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
  std::string make_option_usage(const CLI::Option* opt) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_usage(const CLI::App* app, std::string name) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_footer(const CLI::App* app) const override;

 private:
  size_t width_;
};

// The formatter for gpureap's help at this terminal width (none: not a terminal).
std::shared_ptr<HelpFormatter> make_help_formatter(std::optional<size_t> terminal_width);

// "Exit status:" and one line per status of `command` ("ps", "policy test", "" for gpureap
// itself), as exit_codes.h defines them.
std::string exit_status_text(const std::string& command, size_t width);

}  // namespace gpureap::cli
