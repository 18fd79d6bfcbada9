#include "reap/arguments.h"

#include <signal.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace gpureap::reap {
namespace {

struct NamedSignal {
  const char* name;
  int number;
};

// The signals a user may reasonably ask for by name (Linux numbering).
constexpr std::array<NamedSignal, 31> kSignals{{
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ILL", SIGILL},
    {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"BUS", SIGBUS},   {"FPE", SIGFPE},
    {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
    {"IO", SIGIO},     {"PWR", SIGPWR},       {"SYS", SIGSYS},
}};

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

}  // namespace

core::Result<int> parse_signal(std::string_view text) {
  core::Error bad{"invalid signal \"" + std::string(text) + "\"",
                  "use a name (TERM, INT, KILL, HUP, USR1, ...) or a number (15)"};
  if (text.empty()) return bad;
  if (std::isdigit(static_cast<unsigned char>(text.front()))) {
    int n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > SIGRTMAX) return bad;
    return n;
  }
  std::string name = upper(text);
  if (name.starts_with("SIG")) name.erase(0, 3);
  for (const auto& s : kSignals)
    if (name == s.name) return s.number;
  if (name.starts_with("RTMIN")) {
    int offset = 0;
    std::string_view rest = std::string_view(name).substr(5);
    if (rest.empty()) return SIGRTMIN;
    if (rest.front() != '+') return bad;
    rest.remove_prefix(1);
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), offset);
    if (ec != std::errc() || end != rest.data() + rest.size() || SIGRTMIN + offset > SIGRTMAX)
      return bad;
    return SIGRTMIN + offset;
  }
  return bad;
}

std::string signal_name(int signal) {
  for (const auto& s : kSignals)
    if (s.number == signal) return std::string("SIG") + s.name;
  if (signal >= SIGRTMIN && signal <= SIGRTMAX)
    return signal == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+" + std::to_string(signal - SIGRTMIN);
  return "signal " + std::to_string(signal);
}

std::vector<std::string> signal_names() {
  std::vector<std::string> out;
  for (const auto& s : kSignals) out.emplace_back(s.name);
  return out;
}

}  // namespace gpureap::reap
