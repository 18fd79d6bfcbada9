#include "supervise/report_text.h"

#include <fmt/format.h>

#include <csignal>

#include "core/duration.h"
#include "reap/arguments.h"
#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::supervise {
namespace {

constexpr const char* kPrefix = "gpureap: ";

std::string outcome_line(const RunReport& r) {
  std::string cmd = "`" + command_text(r.command, 60) + "`";
  std::string runtime = core::format_duration(r.runtime);
  std::string line;
  switch (r.exit.cause) {
    case EndCause::Exited:
      line = fmt::format("{} exited with status {} after {}", cmd, *r.exit.status, runtime);
      break;
    case EndCause::Signaled:
      line = fmt::format("{} was killed by {} after {}", cmd, reap::signal_name(*r.exit.signal),
                         runtime);
      break;
    case EndCause::TimedOut:
      line = fmt::format("{} timed out after {} (exit {})", cmd, runtime, r.exit.code);
      break;
    case EndCause::NotFound:
    case EndCause::NotExecutable:
    case EndCause::StartFailed:
      return "";  // start failures are printed as errors
  }
  if (r.stop.reason == StopReason::Signal && r.stop.signal)
    line +=
        fmt::format("; gpureap received {} and forwarded it", reap::signal_name(*r.stop.signal));
  if (r.stop.reason == StopReason::Timeout) line += "; gpureap sent SIGTERM";
  if (r.failed) {
    const auto& f = *r.failed;
    line += fmt::format("; PID {}{} {} after {}", f.pid,
                        f.comm.empty() ? "" : " (" + text::terminal_safe(f.comm) + ")",
                        f.signal ? "was killed by " + reap::signal_name(*f.signal)
                                 : fmt::format("exited with status {}", f.status.value_or(0)),
                        core::format_duration(f.at));
    if (f.ended_job) line += ", so gpureap ended the whole job (--fail-fast)";
  }
  if (r.stop.killed_after_grace) line += ", then SIGKILL when the grace period ended";
  return line;
}

std::string gpu_line(const RunReport& r) {
  const auto& g = r.gpu;
  if (!g.available) {
    if (g.samples == 0) return "GPU memory not sampled: the GPU backend never answered";
    // The common case on a machine without that vendor's GPUs: one short line, details in --report.
    if (g.error_code == "library-not-found")
      return "GPU memory not sampled: no GPU driver is installed (its library was not found)";
    return "GPU memory not sampled: " + text::terminal_safe(g.error.value_or("no GPU backend"));
  }
  if (g.peaks.empty())
    return "peak GPU memory: none (no process of the job was listed by the driver)";
  std::string line = "peak GPU memory:";
  for (size_t i = 0; i < g.peaks.size(); ++i) {
    const auto& p = g.peaks[i];
    line += fmt::format("{} GPU {}", i ? "," : "", p.index);
    if (p.name) line += " (" + text::terminal_safe(*p.name) + ")";
    line += " " + text::human_bytes(p.peak_bytes);
  }
  return line;
}

std::string signals_text(const std::vector<int>& signals) {
  std::string out;
  for (int s : signals) {
    if (s == SIGCONT) continue;  // sent with SIGTERM so a stopped process acts on it
    if (!out.empty()) out += ", then ";
    out += reap::signal_name(s);
  }
  return out.empty() ? "exited before being signalled" : out;
}

// `unread`: /proc could not be read at the end, so a process not seen gone may have ended since.
void leftover_lines(std::string& out, const std::vector<Leftover>& list, bool kept, bool unread) {
  for (const auto& l : list) {
    std::string cmd =
        l.cmdline.empty() ? "[" + text::terminal_safe(l.comm) + "]" : command_text(l.cmdline, 60);
    std::string what = kept ? "left running" : signals_text(l.signals);
    if (!l.devices.empty()) {
      what += "; held";
      for (const auto& d : l.devices) what += " " + text::terminal_safe(d);
    }
    if (!kept && !l.ended)
      what += unread ? "; NOT SEEN TO END (/proc could not be read)"
                     : "; STILL ALIVE (uninterruptible sleep?)";
    out += fmt::format("{}  {:>7}  {}  ({})\n", kPrefix, l.pid, cmd, what);
  }
}

// What gpureap could not verify, why, what may be true instead and what to do: the teardown's
// and the release's failures say it alike.
void unverified_lines(std::string& out, const std::string& what, const core::Error& error,
                      const std::string& consequence) {
  out += std::string(kPrefix) + "COULD NOT VERIFY " + what + ": " +
         text::terminal_safe(error.message) + "\n";
  out += "  " + consequence;
  if (!error.hint.empty()) out += "; " + text::terminal_safe(error.hint);
  out += "\n";
}

void release_lines(std::string& out, const RunReport& r) {
  const auto& c = r.release;
  if (c.skipped_because && !c.performed) {
    out += std::string(kPrefix) + "GPU release not checked: " + *c.skipped_because + "\n";
    return;
  }
  if (c.error) {
    unverified_lines(out, "that the job's GPU memory was released", *c.error,
                     "no process of the job was seen holding a GPU device file, but the scan "
                     "did not see everything");
    return;
  }
  std::string how = c.method == "driver" ? "checked with the driver"
                                         : "no driver answered; checked the device files";
  std::string after =
      c.took && c.took->count() > 0 ? " " + core::format_duration(*c.took) + " after teardown" : "";
  if (c.released && c.method == "driver") {
    out += fmt::format("{}GPU memory released{} (checked with the driver)\n", kPrefix, after);
    return;
  }
  if (c.released) {
    out += fmt::format("{}no process of the job holds a GPU device file (no driver to ask)\n",
                       kPrefix);
    return;
  }
  out += fmt::format("{}STILL HELD {} ({}):\n", kPrefix,
                     c.skipped_because ? std::string("when the wait was interrupted")
                                       : core::format_duration(c.timeout) + " after teardown",
                     how);
  for (const auto& m : c.memory) {
    std::string amount = m.used_bytes ? text::human_bytes(*m.used_bytes) : "memory";
    std::string state = m.process_alive ? "alive" : "gone";
    for (const auto& a : m.anomalies) state += ", " + a;
    out += fmt::format("{}  GPU {}: {} listed for pid {} ({})\n", kPrefix, m.gpu, amount, m.pid,
                       state);
  }
  for (const auto& f : c.files) {
    std::string paths;
    for (const auto& p : f.paths) paths += (paths.empty() ? "" : ", ") + text::terminal_safe(p);
    out += fmt::format("{}  pid {} ({}) holds {}\n", kPrefix, f.pid, text::terminal_safe(f.comm),
                       paths);
  }
  out += std::string(kPrefix) +
         "`gpureap doctor` explains why; a leaked context needs a GPU reset to be freed\n";
}

}  // namespace

std::string command_text(const std::vector<std::string>& argv, size_t width) {
  std::string joined;
  for (const auto& a : argv) {
    if (!joined.empty()) joined += ' ';
    // Quoted as a shell would need it, so `sh -c 'a; b'` reads as one argument.
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789-_./=:,+@%") == std::string::npos;
    if (plain) {
      joined += text::terminal_safe(a);
    } else {
      std::string q;
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      joined += "'" + text::terminal_safe(q) + "'";
    }
  }
  if (joined.size() <= width) return joined;
  size_t cut = width > 1 ? width - 1 : 0;
  // Never cut inside a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(joined[cut]) & 0xC0) == 0x80) --cut;
  return joined.substr(0, cut) + "…";
}

std::string render_error(const RunReport& r) {
  std::string out;
  if (!r.exit.error) return out;
  out += std::string(kPrefix) + text::terminal_safe(r.exit.error->message) + "\n";
  if (!r.exit.error->hint.empty()) out += "  " + text::terminal_safe(r.exit.error->hint) + "\n";
  return out;
}

std::string render_summary(const RunReport& r) {
  std::string out = render_error(r);
  if (!r.pid) return out;  // CMD never ran: nothing else to say
  if (auto line = outcome_line(r); !line.empty()) out += kPrefix + line + "\n";
  out += kPrefix + gpu_line(r) + "\n";
  if (!r.leftovers.empty()) {
    out += fmt::format("{}ended {} leftover process{} of the job:\n", kPrefix, r.leftovers.size(),
                       r.leftovers.size() == 1 ? "" : "es");
    leftover_lines(out, r.leftovers, false, r.teardown_error.has_value());
  }
  if (!r.kept.empty()) {
    out += fmt::format("{}left {} process{} running (--keep-descendants):\n", kPrefix,
                       r.kept.size(), r.kept.size() == 1 ? "" : "es");
    leftover_lines(out, r.kept, true, false);
  }
  if (r.teardown_error)
    unverified_lines(out, "that the job's processes are gone", *r.teardown_error,
                     "processes of the job may still run and hold GPU memory; `gpureap ps` shows "
                     "them");
  release_lines(out, r);
  for (const auto& w : r.warnings)
    out += std::string(kPrefix) + "warning: " + text::terminal_safe(w) + "\n";
  return out;
}

}  // namespace gpureap::supervise
