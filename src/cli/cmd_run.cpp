#include "cli/cmd_run.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/announce.h"
#include "core/duration.h"
#include "output/snapshot_json.h"
#include "report/html_page.h"
#include "report/run_page.h"
#include "supervise/report_json.h"
#include "supervise/report_text.h"
#include "supervise/supervisor.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

constexpr std::chrono::milliseconds kMinSampleInterval{100};

// --report FILE.html writes the job's page; any other name the gpureap.run/v1 JSON.
bool is_html(const std::string& path) {
  auto dot = path.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "html" || ext == "htm";
}

int run_failed(const core::Error& error) {
  fail(error);
  return kExitRunFailed;
}

core::Result<supervise::RunOptions> to_run_options(const GlobalOptions& g, const RunCliOptions& o) {
  if (g.json || g.csv)
    return core::Error{"--json and --csv do not apply to `run`: stdout belongs to the job",
                       "write the run report as JSON with --report FILE"};
  supervise::RunOptions r;
  r.command = o.command;
  r.keep_descendants = o.keep_descendants;
  r.quiet = o.quiet;
  // The daemon hears of the teardown before its first signal: who ended the job's leftovers.
  r.announce_teardown = [by = "gpureap run " + supervise::command_text(o.command, 60)](
                            const std::vector<core::ProcessStat>& live) {
    daemon::AnnounceRequest a;
    a.by = by.substr(0, 256);
    a.signal = "SIGTERM";
    a.reason = "run's teardown: the job's processes left when it ended";
    for (const auto& st : live) {
      if (a.targets.size() == daemon::kMaxAnnouncedTargets) {
        ++a.more;
        continue;
      }
      a.targets.push_back({st.pid, st.start_ticks, st.comm.substr(0, 64), std::nullopt});
    }
    announce(a);
  };
  auto duration = [](const std::string& option,
                     const std::string& text) -> core::Result<std::chrono::milliseconds> {
    auto d = core::parse_duration(text);
    if (!d) return core::Error{option + ": " + d.error().message, d.error().hint};
    return d;
  };
  auto grace = duration("--grace", o.grace);
  if (!grace) return grace.error();
  r.grace = *grace;
  if (!o.timeout.empty()) {
    auto timeout = duration("--timeout", o.timeout);
    if (!timeout) return timeout.error();
    if (timeout->count() == 0)
      return core::Error{"--timeout 0 would end the job at once",
                         "give a positive duration, or leave it out"};
    r.timeout = *timeout;
  }
  auto release = duration("--release-timeout", o.release_timeout);
  if (!release) return release.error();
  r.release_timeout = *release;
  auto sample = duration("--sample", o.sample);
  if (!sample) return sample.error();
  if (sample->count() != 0 && *sample < kMinSampleInterval)
    return core::Error{"--sample " + o.sample + " is too frequent: each sample scans every process",
                       "use 100ms or more, or 0 to sample only when the job ends"};
  r.sample_interval = *sample;
  if (!o.report.empty()) r.report_path = o.report;
  auto fail_fast_grace = duration("--fail-fast-grace", o.fail_fast_grace);
  if (!fail_fast_grace) return fail_fast_grace.error();
  if (o.fail_fast) r.fail_fast = *fail_fast_grace;
  return r;
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunCliOptions& o) {
  auto* run = app.add_subcommand(
      "run",
      "run a command so that every process it creates is gone when it ends, and its GPU "
      "memory is back");
  run->add_option("--grace", o.grace, "after SIGTERM, wait this long before SIGKILL")
      ->default_str("30s");
  run->add_option("--timeout", o.timeout, "end the job after this long (exit status 124)");
  run->add_flag("--keep-descendants", o.keep_descendants,
                "leave the job's other processes running when the command exits");
  run->add_option("--release-timeout", o.release_timeout,
                  "wait up to this long for the job's GPU memory to be released")
      ->default_str("60s");
  run->add_option("--sample", o.sample,
                  "sample the job's GPU memory this often (0: only when the command exits)")
      ->default_str("1s");
  run->add_option("--report", o.report,
                  "write a JSON report (gpureap.run/v1) to FILE, or the job's page of GPU "
                  "memory over time when FILE ends in .html");
  run->add_flag("--fail-fast", o.fail_fast,
                "when a process of the job exits abnormally while others hold GPU files, end the "
                "whole job (the ranks of a distributed job would wait for it)");
  run->add_option("--fail-fast-grace", o.fail_fast_grace,
                  "with --fail-fast, give the job this long to end on its own first")
      ->default_str("10s");
  run->add_flag("-q,--quiet", o.quiet, "no summary on stderr (errors are still printed)");
  // Named "command": CLI11 says "command is required", which usage_error.cpp words.
  run->add_option("command", o.command, "the command and its arguments, after `--`")->required();
  run->footer(
      "Durations: 500ms, 30s, 5m, 1h, 2d. Options of gpureap go before `--`; "
      "everything after it is the command, untouched.");
  return run;
}

int run_run(const GlobalOptions& g, const RunCliOptions& o) {
  auto options = to_run_options(g, o);
  if (!options) return run_failed(options.error());
  // Opened now so an unwritable path fails before the job runs, not after hours of it.
  int report_fd = -1;
  if (options->report_path) {
    report_fd =
        ::open(options->report_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (report_fd < 0)
      return run_failed({"cannot write the report to " +
                             text::terminal_safe(*options->report_path) + ": " +
                             std::strerror(errno),
                         "choose a writable path for --report"});
  }
  auto collector = open_collector(g);
  if (!collector) {
    if (report_fd >= 0) ::close(report_fd);
    return run_failed(collector.error());
  }
  supervise::Supervisor supervisor(*options, std::move(*collector));
  auto report = supervisor.run();

  if (report_fd >= 0) {
    const std::string text = is_html(*options->report_path)
                                 ? gpureap::report::render_html(gpureap::report::build_run_page(
                                       report, std::chrono::system_clock::now()))
                                 : output::dump_json(supervise::run_report_to_json(report)) + "\n";
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::write(report_fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::cerr << "gpureap: cannot write the report to "
                  << text::terminal_safe(*options->report_path) << ": " << std::strerror(errno)
                  << "\n";
        break;
      }
      done += static_cast<size_t>(n);
    }
    ::close(report_fd);
  }
  std::cerr << (options->quiet ? supervise::render_error(report)
                               : supervise::render_summary(report));
  std::cerr.flush();
  return report.exit.code;
}

}  // namespace gpureap::cli
