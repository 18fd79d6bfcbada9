#pragma once
// Long output on a terminal goes through a pager, as git and systemctl do: $PAGER, else
// `less -FRX` (quits when it fits one screen, keeps colour, leaves the text on the screen).
// Never when stdout is not a terminal, never with --no-pager; output that fits the screen is
// written as it is. A reusable piece: a command renders its text, then hands it to page().
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gpureap::output {

inline constexpr const char* kDefaultPager = "less -FRX";

// The pager command: none when stdout is not a terminal or `no_pager`; else `pager_env`
// ($PAGER) unless it is empty or "cat"; else kDefaultPager when `less` is on the PATH
// (`on_path` tells).
std::optional<std::string> choose_pager(bool stdout_is_terminal, bool no_pager,
                                        const char* pager_env,
                                        const std::function<bool(const std::string&)>& on_path);
// The same for this process: stdout, $PAGER and $PATH.
std::optional<std::string> pager_for_stdout(bool no_pager);
// More lines than `rows` (a terminal's height): too long for one screen.
bool longer_than(std::string_view text, size_t rows);
// The rows of the terminal on stdout, when it is one.
std::optional<size_t> terminal_rows();

// Writes `text` to stdout: through `pager` (run by /bin/sh) when given and the text is longer
// than the terminal, else directly. A pager that cannot start leaves the text on stdout; one
// the user quits early is no error.
void page(std::string_view text, const std::optional<std::string>& pager);

}  // namespace gpureap::output
