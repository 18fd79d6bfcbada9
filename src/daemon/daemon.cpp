#include "daemon/daemon.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <memory>
#include <thread>

#include "alert/alert_consumer.h"
#include "audit/writer.h"
#include "backend/registry.h"
#include "backend/settings.h"
#include "base/hostname.h"
#include "base/log.h"
#include "core/duration.h"
#include "daemon/config.h"
#include "daemon/holder_tracking.h"
#include "daemon/http_content.h"
#include "daemon/local_protocol.h"
#include "daemon/local_server.h"
#include "daemon/sample_publisher.h"
#include "daemon/sd_notify.h"
#include "daemon/sightings_file.h"
#include "engine/engine.h"
#include "engine/listed_since.h"
#include "export/http_server.h"
#include "history/history.h"
#include "policy/runner.h"
#include "text/plural.h"

namespace gpureap::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The config file a (re)load reads; a missing default file means the built-in defaults.
core::Result<DaemonConfig> load(const DaemonOptions& o) {
  std::string path = o.config_path.value_or(kDefaultConfigPath);
  struct stat st {};
  if (!o.config_path && ::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    DaemonConfig defaults;
    if (o.listen) defaults.listen = *o.listen;
    return defaults;
  }
  auto config = load_config(path);
  if (config && o.listen) config->listen = *o.listen;
  return config;
}

// Many scrapers (or a flood of idle connections) each take a descriptor: the soft limit is
// raised to the hard one, as services do, so the HTTP server can keep its connection bound.
void raise_descriptor_limit() {
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_cur >= nofile.rlim_max) return;
  nofile.rlim_cur = std::min<rlim_t>(nofile.rlim_max, 65536);
  ::setrlimit(RLIMIT_NOFILE, &nofile);
}

// The daemon stays small under any load. glibc gives each thread that allocates while another
// does an arena of its own (up to 8 per core), and every arena keeps its high-water mark: the
// HTTP workers building pages side by side would each keep one. Two arenas serve the daemon's
// few threads. A large block (a page's body, a scan's buffers) is mapped and unmapped whole
// instead of left in an arena, where glibc's adaptive threshold would put it after the first
// large free. Before any thread exists.
void bound_malloc() {
  ::mallopt(M_ARENA_MAX, 2);
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

// The socket `gpureap ps` asks through; "" for none.
std::string local_socket(const DaemonConfig& c) {
  return c.local_socket.value_or(default_local_socket());
}

// The file a restart takes the sightings on from; "" for none.
std::string sightings_path(const DaemonConfig& c) {
  return c.sightings_file.value_or(sightings_file_for(local_socket(c)));
}

PublishSettings publish_settings(const DaemonConfig& c) {
  return {c.per_process_metrics, c.unattributed_threshold, c.stalled_job_critical_after};
}

history::HistoryLimits history_limits(const DaemonConfig& c) {
  history::HistoryLimits limits;
  limits.window = c.history;
  limits.interval = c.interval;
  limits.max_processes = c.history_max_processes;
  return limits;
}

audit::AuditLogSettings audit_settings(const DaemonConfig& c) {
  return {c.audit_log, c.audit_max_bytes, c.audit_keep};
}

// The audit log's figures in /metrics.
class AuditMetrics : public sample::SampleConsumer {
 public:
  explicit AuditMetrics(std::shared_ptr<const audit::AuditLog> log) : log_(std::move(log)) {}
  void on_sample(const sample::Sample&, const history::History&) override {}
  void add_metrics(std::vector<exporter::MetricFamily>& out) const override {
    log_->add_metrics(out);
  }

 private:
  std::shared_ptr<const audit::AuditLog> log_;
};

// The daemon's URL as alert receivers should see it: the node's name when it listens on
// every address.
std::string external_url(const exporter::ListenAddress& at) {
  exporter::ListenAddress shown = at;
  if (shown.host.empty() || shown.host == "0.0.0.0" || shown.host == "::")
    shown.host = base::host_name();
  return "http://" + shown.text() + "/";
}

bool loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Warnings about a config that works but exposes more than it should.
void warn_about(const DaemonConfig& c) {
  if (!c.auth_token && !loopback(c.listen.host))
    base::log_warning(
        "listening on " + c.listen.text() +
        " without auth_token_file: anyone who can reach it reads process names, users and "
        "containers");
  if (c.auth_token_file) {
    struct stat st {};
    if (::stat(c.auth_token_file->c_str(), &st) == 0 && (st.st_mode & S_IROTH))
      base::log_warning("auth_token_file " + *c.auth_token_file +
                        " is readable by every user: chmod 600 it");
  }
}

std::string describe(const DaemonConfig& c) {
  return "config " + c.source + ": interval " + core::format_duration(c.interval) +
         ", holder scan every " + core::format_duration(c.holder_scan_interval) +
         " (all fds every " + core::format_duration(c.full_scan_interval) + "), history " +
         core::format_duration(c.history) + ", driver timeout " +
         core::format_duration(c.driver_timeout) +
         (c.per_process_metrics ? ", per-process metrics" : "") +
         (c.policies.empty() ? ""
                             : ", " + text::plural(c.policies.size(), "cleanup policy") +
                                   (c.enforce ? " (enforced)" : " (enforce is off: only logged)"));
}

// systemd's one-line STATUS.
std::string status_line(const sample::Sample& s, const exporter::ListenAddress& at) {
  const auto& snap = *s.snapshot;
  size_t listed = 0;
  for (const auto& r : snap.rows) listed += r.listed_by_driver;
  std::string driver = snap.drivers.any_available()
                           ? "driver up, " + text::plural(snap.drivers.gpus.size(), "GPU")
                           : (s.driver_timed_out ? "driver not answering" : "driver unavailable");
  return driver + ", " + text::plural(listed, "GPU process") + ", " +
         text::plural(s.findings.size(), "finding") + "; http://" + at.text() + "/";
}

class Daemon {
 public:
  // `acting_collector` (with backends of its own) is the policy actions' own.
  Daemon(const DaemonOptions& options, DaemonConfig config, collect::Collector collector,
         collect::Collector acting_collector, const std::vector<std::string>& gpu_files)
      : options_(options),
        config_(std::move(config)),
        history_(std::make_shared<history::History>(history_limits(config_))),
        // The sampling engine reads the collector's backends, each driver behind its watchdog.
        engine_(std::move(collector), cadence(config_, nullptr)),
        samples_(std::make_shared<SamplePublisher>(publish_settings(config_), history_)),
        content_(*samples_),
        notifier_(Notifier::from_environment()),
        alerts_(std::make_shared<alert::AlertConsumer>()),
        audit_(std::make_shared<audit::AuditLog>(audit_settings(config_))),
        incidents_(std::make_shared<Incidents>(audit_, history::JournalLimits{config_.history})),
        acting_backends_(acting_collector.drivers()),
        policies_(std::make_shared<policy::PolicyRunner>(
            std::make_unique<policy::ReaperAction>(std::move(acting_collector)))),
        started_(Clock::now()) {
    content_.set_stall_after(stall_threshold(config_.interval, config_.driver_timeout));
    samples_->follow_kernel_log(options_.roots.kmsg,
                                acting_backends_ ? acting_backends_->kernel_log_parsers()
                                                 : backend::BackendSet().kernel_log_parsers());
    samples_->follow_work_server_logs(
        options_.roots.runtime_root.empty() ? backend::folder_above(options_.roots.proc_root)
                                            : options_.roots.runtime_root,
        options_.roots.proc_root,
        acting_backends_ ? acting_backends_->work_servers()
                         : backend::work_servers(backend::builtin_backends()));
    policies_->configure(config_.policies, config_.enforce);
    // Every record is audited; the final ones (not a decision whose action follows, nor an
    // attempt that will be retried) also feed [[alert]] policy_action rules.
    // An action's record carries when the kernel saw its target let go of its GPU files: a
    // final close under its number since it started (an earlier process's is not its own).
    policies_->add_record_sink([this](const audit::Record& r, bool) {
      if (r.event != "action" || !tracker_ || r.process.pid <= 0 || !r.process.start_time) {
        audit_->append(r);
        return;
      }
      audit::Record with = r;
      const auto since = *r.process.start_time;
      with.released_at = tracker_->released_by(r.process.pid, since);
      // The memory is back, so the final close is in the kernel's queue: on a busy machine the
      // tracker's thread may not have read it yet. A moment for it, at most 200 ms.
      for (int i = 0; !with.released_at && r.outcome == "released" && i < 10; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        with.released_at = tracker_->released_by(r.process.pid, since);
      }
      // The kernel's event carries no time: the tracker dates it when it reads it. Read after
      // the record was made, that date is the reading's; the close came before the memory was
      // back, so the record's time bounds it.
      if (with.released_at && *with.released_at > r.time) with.released_at = r.time;
      audit_->append(with);
    });
    policies_->add_record_sink([alerts = alerts_](const audit::Record& r, bool final) {
      if (final) alerts->on_policy_record(r);
    });
    samples_->add_consumer(policies_);
    content_.set_policies(policies_);
    samples_->add_consumer(alerts_);
    samples_->add_consumer(std::make_shared<AuditMetrics>(audit_));
    samples_->add_consumer(incidents_);
    tracker_ = start_holder_tracking(config_, gpu_files, engine_);
    engine_.apply(cadence(config_, tracker_.get()));
    content_.set_tracker(tracker_);
    incidents_->set_tracker(tracker_);
    content_.set_incidents(incidents_);
    samples_->add_consumer(std::make_shared<TrackingMetrics>(tracker_));
    engine_.add_consumer(samples_);
  }

  // The tracker wakes the engine: it stops first.
  ~Daemon() {
    if (tracker_) tracker_->stop();
  }

  int run(const sigset_t& signals) {
    raise_descriptor_limit();
    if (!serve()) return 1;
    keep_sightings();  // in the socket's directory, which serve() made
    engine_.start();
    Liveness live;
    for (;;) {
      int sig = wait_for_signal(signals, live.ready);
      if (sig == SIGTERM || sig == SIGINT) {
        base::log_notice(std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
        break;
      }
      if (sig == SIGHUP) reload();
      tick(live);
    }
    notifier_.stopping();
    if (local_server_) local_server_->stop();
    server_->stop();
    if (tracker_) tracker_->stop();
    engine_.stop();
    if (sightings_) sightings_->flush();
    // A policy action that is verifying a release reads the policies' own drivers: told
    // first, those reads return at once instead of after a slow driver's answer.
    if (acting_backends_) acting_backends_->interrupt();
    policies_->stop();
    alerts_->stop();
    audit_->close();
    base::log_info("stopped");
    return 0;
  }

 private:
  // What the main loop tells systemd, and what it has already said.
  struct Liveness {
    bool ready = false;
    bool stall_logged = false;
    std::string status;
    Clock::time_point next_ping = Clock::now();
  };

  // Starts the HTTP server and the alert sinks; false (said in the log and to systemd) when
  // the address cannot be served.
  bool serve() {
    auto server =
        exporter::HttpServer::start(config_.listen, content_.routes(), {config_.auth_token});
    if (!server) {
      base::log_error(server.error().text());
      notifier_.status("failed: " + server.error().message);
      return false;
    }
    server_ = std::move(*server);
    base::log_info(describe(config_));
    warn_about(config_);
    base::log_notice("listening on http://" + server_->address().text() + "/" +
                     (config_.auth_token ? " (bearer token required)" : ""));
    configure_alerts(config_);
    serve_local_socket(local_socket(config_));
    return true;
  }

  // The local socket is a convenience for `gpureap ps` on this node: when it cannot be served
  // the daemon says so once and goes on (ps then scans on its own), unlike the HTTP port.
  void serve_local_socket(const std::string& path) {
    if (local_server_) local_server_->stop();
    local_server_.reset();
    if (path.empty()) return;
    auto server = LocalServer::start(path, *samples_, tracker_, {}, incidents_);
    if (!server) {
      base::log_warning(
          server.error().text() +
          "; serving without it (`gpureap ps`, `doctor` and `top` scan on their own)");
      return;
    }
    local_server_ = std::move(*server);
    base::log_info("serving `gpureap ps`, `doctor` and `top` on " + path);
  }

  // The next signal, or 0 after a while: often enough for systemd's watchdog, and briefly
  // until the first sample is ready.
  int wait_for_signal(const sigset_t& signals, bool ready) {
    milliseconds wait(1000);
    if (auto wd = notifier_.watchdog())
      wait = std::min(wait, std::chrono::duration_cast<milliseconds>(*wd / 4));
    if (!ready) wait = std::min(wait, milliseconds(50));
    timespec ts{static_cast<time_t>(wait.count() / 1000),
                static_cast<long>((wait.count() % 1000) * 1000000)};
    return ::sigtimedwait(&signals, nullptr, &ts);
  }

  // Readiness, stalls, watchdog pings and the status line; audit records left to retry.
  void tick(Liveness& live) {
    auto latest = samples_->latest();
    if (!live.ready && latest) {
      live.ready = true;
      notifier_.ready();
      base::log_info("first sample taken: ready");
    }
    const auto now = Clock::now();
    const bool fresh = now - std::max(samples_->last_progress(), started_) < content_.stall_after();
    if (!fresh && !live.stall_logged) {
      base::log_error(
          "the sampler has not finished a sample for " +
          core::format_duration(content_.stall_after()) +
          (notifier_.watchdog() ? "; no more watchdog pings, systemd will restart gpureap" : ""));
      live.stall_logged = true;
    }
    if (fresh) live.stall_logged = false;
    if (auto wd = notifier_.watchdog(); wd && now >= live.next_ping) {
      // Half of WatchdogSec, as systemd recommends; stalled sampling stops the pings.
      if (fresh) notifier_.ping_watchdog();
      live.next_ping = now + std::chrono::duration_cast<Clock::duration>(*wd / 2);
    }
    if (latest) {
      std::string line = status_line(*latest, server_->address());
      if (line != live.status) notifier_.status(live.status = line);
    }
    // Audit records that could not be written (a full disk) are retried here, not only
    // when the next policy decision comes.
    if (audit_->counters().pending > 0) audit_->flush();
  }

  // SIGHUP: a new config applies whole, or not at all.
  void reload() {
    notifier_.reloading();
    auto next = load(options_);
    if (!next) {
      base::log_error("reload failed, keeping the configuration from " + config_.source + ": " +
                      next.error().message);
      notifier_.ready();
      return;
    }
    if (next->listen != config_.listen) {
      auto server =
          exporter::HttpServer::start(next->listen, content_.routes(), {next->auth_token});
      if (!server) {
        base::log_error("reload failed, keeping the configuration from " + config_.source + ": " +
                        server.error().text());
        notifier_.ready();
        return;
      }
      server_->stop();
      server_ = std::move(*server);
      base::log_notice("listening on http://" + server_->address().text() + "/");
    }
    server_->set_token(next->auth_token);
    // Another path moves the socket; the same one is retried if it could not be served.
    if (local_socket(*next) != local_socket(config_) || !local_server_)
      serve_local_socket(local_socket(*next));
    // The sightings this run took on came from the file it keeps: another file would hand the
    // next run what it never read. The path is the one the daemon started with.
    if (sightings_path(*next) != started_sightings_path_)
      base::log_notice(
          "sightings_file changes at the next start; until then the sightings are " +
          (sightings_ ? "kept in " + started_sightings_path_ : std::string("not kept")));
    engine_.apply(cadence(*next, tracker_.get()));
    samples_->apply(publish_settings(*next));
    history_->set_limits(history_limits(*next));
    incidents_->set_window(next->history);
    content_.set_stall_after(stall_threshold(next->interval, next->driver_timeout));
    base::set_log_level(next->log_level);
    policies_->configure(next->policies, next->enforce);
    if (acting_backends_) acting_backends_->set_timeout(next->driver_timeout);
    audit_->reconfigure(audit_settings(*next));
    configure_alerts(*next);
    config_ = std::move(*next);
    base::log_notice("configuration reloaded: " + describe(config_));
    warn_about(config_);
    notifier_.ready();
  }

  // A restart takes on what the last run had seen of the listings (daemon/sightings_file.h),
  // and this run keeps its own for the next (sightings_file, by default beside the socket).
  void keep_sightings() {
    const std::string path = started_sightings_path_ = sightings_path(config_);
    const auto boot_id = engine_.procfs().boot_id();
    if (path.empty() || !boot_id) return;
    auto file = SightingsFile::open(path);
    if (!file) {
      base::log_warning(file.error().text());
      return;
    }
    const uint64_t now = engine::boot_ticks_now();
    auto previous = file->load(engine_.procfs(), now);
    if (!previous) {
      // Another boot, namespace or an old file is the normal course; a file this run may not
      // trust is not.
      if (previous.error().hint.empty())
        base::log_info(previous.error().text());
      else
        base::log_warning(previous.error().text());
    } else if (*previous) {
      const auto hz = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
      base::log_info("took on the last run's sightings from " + path + ": " +
                     text::plural((*previous)->listings.size(), "listed PID") + ", saved " +
                     std::to_string((now - (*previous)->saved_at_ticks) / hz) + " s ago");
    }
    engine_.carry_sightings(previous ? std::move(*previous) : std::nullopt);
    sightings_ = std::make_shared<SightingsKeeper>(std::move(*file), *boot_id);
    engine_.add_consumer(sightings_);
  }

  void configure_alerts(const DaemonConfig& c) {
    alerts_->apply(c.alerts, c.sinks, base::host_name(), external_url(server_->address()));
    if (!c.alerts.empty())
      base::log_info(text::plural(c.alerts.size(), "alert rule") + " to " +
                     text::plural(c.sinks.size(), "sink"));
  }

  const DaemonOptions& options_;
  DaemonConfig config_;
  std::shared_ptr<history::History> history_;
  engine::Engine engine_;
  std::shared_ptr<SamplePublisher> samples_;
  HttpContent content_;
  Notifier notifier_;
  std::shared_ptr<alert::AlertConsumer> alerts_;
  std::unique_ptr<exporter::HttpServer> server_;
  std::unique_ptr<LocalServer> local_server_;  // null: no local socket
  std::shared_ptr<audit::AuditLog> audit_;
  std::shared_ptr<Incidents> incidents_;  // the report's journal and the commands' announcements
  std::shared_ptr<backend::BackendSet> acting_backends_;
  std::shared_ptr<policy::PolicyRunner> policies_;
  std::shared_ptr<HolderTracker> tracker_;      // null: holders are found by scans alone
  std::shared_ptr<SightingsKeeper> sightings_;  // null: none kept
  std::string started_sightings_path_;          // sightings_file as the daemon started
  Clock::time_point started_;
};

}  // namespace

int run_daemon(const DaemonOptions& options) {
  bound_malloc();
  // Before any thread exists, so every thread inherits the mask and the signals wait for
  // sigtimedwait in the main loop instead of interrupting a sample.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto config = load(options);
  if (!config) {
    std::cerr << "gpureap: " << config.error().message << "\n  " << config.error().hint << "\n";
    return 2;
  }
  base::set_log_level(config->log_level);
  auto proc = procfs::ProcFs::open(options.roots.proc_root);
  if (!proc) {
    std::cerr << "gpureap: " << proc.error().message << "\n  " << proc.error().hint << "\n";
    return 2;
  }
  backend::BackendSettings settings = options.backends;
  settings.pid_max = proc->pid_max();
  backend::WatchdogOptions watchdog;
  watchdog.timeout = config->driver_timeout;
  // The engine's backends, and the policy actions' own: actions verify releases on their own
  // thread while the engine keeps its pace, each driver behind a watchdog of their own.
  auto collector = collect::Collector::open(
      options.roots, backend::BackendSet::make(backend::builtin_backends(), settings, watchdog));
  if (!collector) {
    std::cerr << "gpureap: " << collector.error().message << "\n  " << collector.error().hint
              << "\n";
    return 2;
  }
  auto acting = collect::Collector::open(
      options.roots, backend::BackendSet::make(backend::builtin_backends(), settings, watchdog));
  if (!acting) {
    std::cerr << "gpureap: " << acting.error().message << "\n  " << acting.error().hint << "\n";
    return 2;
  }
  collector->keep_to_proc();
  acting->keep_to_proc();
  auto gpu_files = collector->device_file_paths();
  Daemon daemon(options, std::move(*config), std::move(*collector), std::move(*acting), gpu_files);
  int status = daemon.run(signals);
  if (status != 0) return status;
  // Everything that writes has stopped (the audit log is closed; the log is written
  // unbuffered). What is left is each driver's shutdown: a library's takes a second or more without
  // persistence mode, on each backend instance, and a wedged driver's never returns. The kernel
  // frees what the process held when it exits, so it exits now, without waiting for them and
  // without running the libraries' exit handlers beside a thread still inside the driver.
  std::cout.flush();
  std::cerr.flush();
  ::_exit(0);
}

int check_config(const std::string& path) {
  auto config = load_config(path);
  if (!config) {
    std::cerr << config.error().message << "\n";
    if (!config.error().hint.empty()) std::cerr << "  " << config.error().hint << "\n";
    return 2;
  }
  std::cout << path << ": ok\n";
  return 0;
}

}  // namespace gpureap::daemon
