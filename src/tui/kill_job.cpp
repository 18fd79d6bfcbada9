#include "tui/kill_job.h"

#include <fmt/format.h>

#include <mutex>
#include <sstream>
#include <thread>

#include "output/kill_view.h"
#include "output/style.h"
#include "reap/arguments.h"
#include "reap/report_json.h"
#include "text/display_width.h"
#include "text/wrap.h"

namespace gpureap::tui {
namespace {

using text::text_width;
using text::wrap;

// Lines of `text`; a line wider than `width` (prose: a table's rows are already cut to fit) is
// wrapped, its continuation indented.
std::vector<std::string> split_lines(const std::string& text, size_t width) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (text_width(line) <= width || width < 20) {
      out.push_back(line);
      continue;
    }
    auto parts = wrap(line, width - 2);
    for (size_t i = 0; i < parts.size(); ++i) out.push_back(i == 0 ? parts[i] : "  " + parts[i]);
  }
  return out;
}

}  // namespace

core::Result<reap::Plan> plan_kill(const core::Snapshot& s, const std::vector<pid_t>& pids,
                                   const reap::World& world) {
  reap::Request request;
  request.pids = pids;
  return reap::Pipeline(world, {}).plan(s, request);
}

std::vector<std::string> plan_lines(const core::Snapshot& s, const reap::Plan& plan,
                                    const std::vector<pid_t>& pids, const KillConfig& config,
                                    size_t width) {
  reap::KillSettings settings;
  settings.request.pids = pids;
  settings.exec = config.exec;
  settings.verify = config.verify;
  auto lines =
      split_lines(output::render_plan(s, plan, settings, output::Style(false), width), width);
  size_t refused = plan.count(reap::Action::Refused),
         denied = plan.count(reap::Action::NotPermitted);
  std::string more;
  if (denied)
    more += fmt::format("{} process{} not yours: only root or the owner may signal them.\n", denied,
                        denied == 1 ? " is" : "es are");
  if (refused) more += fmt::format("{} refused by a safety rule (see why).\n", refused);
  for (auto& l : split_lines(more, width)) lines.push_back(std::move(l));
  return lines;
}

std::vector<std::string> outcome_lines(const reap::Plan& plan, const reap::Report& report,
                                       size_t width) {
  return split_lines(output::render_results(plan, report, output::Style(false), width), width);
}

struct KillJob::State {
  std::shared_ptr<const reap::World> world;
  reap::Plan plan;
  KillConfig config;
  AnnounceKill announce;
  mutable std::mutex mutex;
  bool finished = false;
  std::string progress;
  reap::Report report;
  std::optional<std::string> error;
  std::thread thread;
};

KillJob::KillJob(std::shared_ptr<const reap::World> world, reap::Plan plan, KillConfig config,
                 AnnounceKill announce)
    : state_(std::make_shared<State>()) {
  state_->announce = std::move(announce);
  state_->world = std::move(world);
  state_->plan = std::move(plan);
  state_->config = std::move(config);
}

KillJob::~KillJob() {
  if (!state_->thread.joinable()) return;
  if (finished())
    state_->thread.join();
  else
    state_->thread.detach();
}

void KillJob::start() {
  state_->thread = std::thread([s = state_] {
    auto started = std::chrono::system_clock::now();
    auto set_progress = [&](std::string text) {
      std::lock_guard lock(s->mutex);
      s->progress = std::move(text);
    };
    reap::Progress progress;
    progress.signalling = [&](const reap::Plan& plan) {
      if (s->announce) s->announce(plan, s->config.exec.signal);
      size_t n = plan.count(reap::Action::Signal);
      set_progress(fmt::format("Sent {} to {} process{}; waiting up to {} s for them to exit…",
                               reap::signal_name(s->config.exec.signal), n, n == 1 ? "" : "es",
                               s->config.exec.grace.count() / 1000));
    };
    progress.escalating = [&](size_t n) {
      set_progress(fmt::format("{} process{} outlived the grace: sent SIGKILL; waiting…", n,
                               n == 1 ? "" : "es"));
    };
    progress.awaiting_release = [&](const std::vector<reap::Execution>&) {
      set_progress("The processes are handled; waiting for the GPU memory to come back…");
    };
    reap::Report report;
    std::optional<std::string> error;
    try {
      report = reap::Pipeline(*s->world, s->config, progress).carry_out(s->plan, started).report;
    } catch (const std::exception& e) {
      error = std::string("the kill failed: ") + e.what() + "; `gpureap ps` shows what is left";
      report.exit_code = reap::kExitEnvironment;
    }
    std::lock_guard lock(s->mutex);
    s->report = std::move(report);
    s->error = std::move(error);
    s->finished = true;
  });
}

bool KillJob::finished() const {
  std::lock_guard lock(state_->mutex);
  return state_->finished;
}

std::string KillJob::progress() const {
  std::lock_guard lock(state_->mutex);
  return state_->progress;
}

const reap::Report& KillJob::report() const {
  return state_->report;
}
const reap::Plan& KillJob::plan() const {
  return state_->plan;
}
const std::optional<std::string>& KillJob::error() const {
  return state_->error;
}

}  // namespace gpureap::tui
