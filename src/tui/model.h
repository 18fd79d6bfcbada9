#pragma once
// The state of `top` and what each key does to it. Pure: the terminal layer turns key codes
// into Keys and performs the Effects (plan a kill, start it, quit); everything else — moving,
// sorting, filtering, tagging, the dialogs — happens here and is unit-tested.
#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "doctor/examine.h"
#include "procfs/host_stats.h"
#include "tui/frame.h"
#include "tui/key.h"
#include "tui/key_bindings.h"
#include "tui/layout.h"
#include "tui/trend.h"
#include "tui/view.h"

namespace gpureap::tui {

// The signal the kill dialog's answer chose: the reaper's escalation (SIGTERM, then SIGKILL
// after the grace), or one signal alone.
struct KillChoice {
  int signal = SIGTERM;
  bool escalate = true;
  std::string name() const;  // "SIGTERM, then SIGKILL", "SIGINT"
};

enum class Mode {
  Table,        // the process table (and the detail pane when open)
  FilterInput,  // typing a filter after '/'
  Help,
  Plan,     // a kill plan, waiting for y/n
  Running,  // the kill runs
  Outcome,  // what the kill did
};

struct Effect {
  enum Kind {
    None,
    Quit,
    PlanKill,     // plan a kill of `pids` and call show_plan()
    ExecuteKill,  // the user confirmed the plan shown
  };
  Kind kind = None;
  std::vector<pid_t> pids;
};

// How sampling goes, as the engine tells it.
struct SamplingStatus {
  std::optional<std::chrono::seconds> driver_stuck;  // a driver call has been blocked this long
  std::optional<std::chrono::seconds> stalled;       // no new sample for this long
  std::optional<std::string> error;                  // the last collection failed
  bool from_daemon = false;                          // the daemon's snapshots are shown
};

struct TopSettings {
  bool readonly = false;
  bool unicode = true;
  std::chrono::milliseconds interval{1000};
  Viewer viewer;
};

class TopModel {
 public:
  explicit TopModel(TopSettings settings);

  void set_size(size_t width, size_t height);
  // A new sample: the previous one is kept for the doctor's second look.
  void set_snapshot(std::shared_ptr<const core::Snapshot> snapshot);
  // What else was read about the latest sample (doctor::read_evidence), for the detail pane.
  void set_evidence(std::shared_ptr<const doctor::Evidence> evidence);
  // The detail pane is open on a sample whose evidence beyond the snapshots was not read yet.
  bool wants_evidence() const;
  // The latest sample's evidence: what set_evidence gave for it, else its snapshot and the one
  // before alone.
  doctor::Evidence evidence() const;
  void set_host(procfs::HostStats host) { host_ = host; }
  void set_sampling(SamplingStatus status) { sampling_ = std::move(status); }

  Effect handle(const Key& key);

  // After PlanKill: the plan as text, and how many processes it would signal (0: the dialog
  // only informs). `error`: planning failed; shown instead.
  void show_plan(std::vector<std::string> lines, size_t to_signal);
  void show_plan_error(std::string message);
  void kill_progress(std::string text);
  void show_outcome(std::vector<std::string> lines, bool all_released);
  // A message on the status line: it goes with the next key, or after kMessageFor
  // (expire_message); a kill's progress stays until its outcome.
  void set_message(std::string text, Role role = Role::Normal);
  static constexpr std::chrono::seconds kMessageFor{5};
  // True when a message expired at `now` (the screen must be redrawn).
  bool expire_message(std::chrono::steady_clock::time_point now);

  Frame compose() const;

  // For the terminal layer and tests.
  Mode mode() const { return mode_; }
  const std::vector<ViewRow>& view() const { return view_; }
  std::optional<pid_t> selected() const;
  const std::set<pid_t>& tags() const { return tags_; }
  const ViewOptions& options() const { return options_; }
  const std::vector<ColumnSpec>& table_columns() const { return columns_; }
  // What the last confirmed kill dialog chose (y, t, i, 9).
  const KillChoice& kill_choice() const { return kill_choice_; }
  bool detail_open() const { return detail_; }
  size_t scroll() const { return scroll_; }
  const std::string& message() const { return message_; }
  const ScreenLayout& layout() const { return layout_; }
  std::shared_ptr<const core::Snapshot> snapshot() const { return snapshot_; }
  const TopSettings& settings() const { return settings_; }
  bool kill_running() const { return mode_ == Mode::Running || running_hidden_; }

 private:
  void rebuild();
  void relayout();
  void select_index(size_t index);
  void move(long delta);
  Effect dispatch(const Key& key);
  Effect handle_table(const Key& key);
  void navigate(Action action, const Key& key);
  void change_view(const Binding& binding);
  Effect kill_selection();
  Effect handle_filter(const Key& key);
  Effect handle_dialog(const Key& key);
  Effect handle_help(const Key& key);
  bool scroll_dialog(const Key& key, size_t page, size_t last, bool ends);
  size_t help_width() const;  // the help's text columns at this screen width
  size_t help_rows() const;   // its lines at that width
  void cycle_gpu();
  void cycle_user();
  void sort_by(Column column);
  void shift_sort(int delta);
  bool shown(Column column) const;  // the layout keeps it at this width
  void scroll_sideways(int delta);

  // render.cpp
  void compose_header(Frame& f) const;
  void compose_title(Frame& f) const;
  void compose_gpus(Frame& f) const;
  Line gpu_line(const core::Gpu& gpu) const;
  // A split GPU's GPU instance under its GPU's line: its place (0/3), profile and memory.
  Line instance_line(const core::Gpu& gpu, unsigned gpu_instance) const;
  void compose_host(Frame& f) const;
  void compose_status(Frame& f) const;
  void add_sampling_status(Line& status) const;
  void add_filter_status(Line& status) const;
  void compose_table(Frame& f) const;
  Line table_line(const ViewRow& row) const;
  void compose_detail(Frame& f) const;
  void compose_footer(Frame& f) const;
  void compose_dialog(Frame& f) const;
  void draw_dialog(Frame& f, const std::string& title, Role title_role, const std::string& hint,
                   const std::vector<Line>& content) const;

  TopSettings settings_;
  std::shared_ptr<const core::Snapshot> snapshot_, previous_;
  std::shared_ptr<const doctor::Evidence> evidence_;
  std::vector<TopRow> rows_;
  std::vector<ViewRow> view_;
  ViewOptions options_;
  ScreenLayout layout_;
  // The header has a line for each GPU instance of a split GPU under its GPU's (when they all fit).
  bool instance_lines_ = false;
  std::vector<ColumnSpec> columns_;
  procfs::HostStats host_;
  SamplingStatus sampling_;
  MemoryTrend trend_;

  Mode mode_ = Mode::Table;
  size_t index_ = 0;                   // selected position in view_
  std::optional<pid_t> selected_pid_;  // follows the process across refreshes and re-sorts
  size_t scroll_ = 0;                  // first view_ row on screen
  size_t hscroll_ = 0;                 // columns of the commands scrolled off to the left
  std::set<pid_t> tags_;
  bool detail_ = false;
  size_t detail_scroll_ = 0;
  bool quit_armed_ = false;  // q during a kill asks once more
  bool running_hidden_ = false;

  std::string filter_edit_;  // the text being typed after '/'
  std::string message_;
  Role message_role_ = Role::Normal;
  std::chrono::steady_clock::time_point message_at_{};
  unsigned message_serial_ = 0;  // counts set_message: a key that set none clears the last
  bool message_sticky_ = false;  // a hidden kill's progress

  std::string dialog_title_;
  std::vector<std::string> dialog_lines_;
  size_t dialog_scroll_ = 0;
  size_t dialog_signals_ = 0;
  KillChoice kill_choice_;
  Role dialog_role_ = Role::Normal;
};

}  // namespace gpureap::tui
