#pragma once
// The holder tracker's bookkeeping (daemon/holder_tracker): what the kernel's events say about
// GPU-file holders, and what the engine is asked to scan because of them. It is handed batches
// of events as the sources read them (track::FanotifyWatch's opens and final closes,
// track::ProcEvents' forks and exits) and the scans the engine made, and keeps the state and its
// rules; it owns no source, thread or lock (HolderTracker does, and calls it under its mutex),
// so what it makes of any batch, an overflow included, can be played as the kernel would have
// sent it. It reads /proc (its proc root) only to confirm exits and read start times.
//
// A final close of an open file is the moment its driver frees what it held: it is recorded with
// the process that held it last. A holder's child whose parent then exits was reparented: the
// join's evidence that it is an orphan, which /proc does not keep. The connector reports each
// thread's exit, so an exit is recorded only once /proc shows the thread group gone
// (daemon/process_exit). Lost events (a queue overflow) ask for a full scan; every full scan
// counts what events missed (drift).
//
// A PID is no identity: the kernel hands a number out again once its process has ended, and
// says so by that process's exit event. Lost exits (the connector's queue overran) leave every
// number recorded before them unvouched: the process recorded under it may have ended unseen
// and another have its number now, whose exit, fork or open would then be taken for the
// recorded one's (its end recorded with that one's start time, held, and another's wait status
// and time). Until /proc shows the recorded start time under the number again (read at the
// number's next event, or by a full scan taken after the loss), no end is recorded for it; one
// /proc shows gone or another's is forgotten, with no end recorded either: when it ended is not
// known, and the engine's ScanLineage records its end, bounded by the scan that sees it gone.
// A fork that hands out a number recorded with a start time other than the one /proc now shows
// proves the same. Lost file events (fanotify's overflow) lose no exit: every number stays
// vouched for.
//
// A scan can read /proc ahead of the events: the number's next process read before the exit of
// the one before it is read (and so can the read of a parent's start time when its fork is
// read). The connector stamps each event with its time (a batch's boot_ticks()), so an exit is
// the end of the newest process known under its number that started no later than the exit's
// clock tick (start times are rounded down to theirs), and /proc showing one that started in a
// later tick shows it ended. One that started in a later tick is another process; where every
// one known did, the exit is an earlier one's whose start time the book no longer has: nothing
// is recorded of it (the scans' lineage records that end, bounded by the scan that saw the
// number change hands), and the later ones stay as they were. Within the exit's own tick the two
// cannot be told apart: a number handed out again in the tick of its exit, and read by a scan
// before the exit was, is the one case this leaves.
//
// Each source's events come in the kernel's order, but the two are not in order with each other:
// an open is handed after every fork and exit the connector reported before it (HolderTracker
// reads the connector after each read of file events), but one made before a fork may come
// after it. So an open under a number that a fork handed out again is the new process's, and the
// recent forks of the number's earlier process are ended by that fork
// (daemon/holder_book_recent_forks).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/snapshot.h"
#include "daemon/holder_book_recent_forks.h"
#include "daemon/unconfirmed_ends.h"
#include "engine/scan_hints.h"
#include "procfs/proc_fs.h"
#include "track/fanotify_watch.h"
#include "track/proc_events.h"

namespace gpureap::daemon {

// A final close of a GPU file: the open file description is released, its driver frees what
// it held.
struct Release {
  std::string path;
  pid_t pid = 0;  // the process that held it last
  std::chrono::system_clock::time_point at;
};

struct TrackerCounters {
  uint64_t opens = 0;
  uint64_t closes = 0;     // final closes
  uint64_t forks = 0;      // forks of holders followed
  uint64_t overflows = 0;  // times events were lost (each asked for a full scan)
  uint64_t drift = 0;      // holders a full scan found that events had missed, or the reverse
};

class HolderBook {
 public:
  // `proc`: the daemon's proc root, where exits are confirmed.
  explicit HolderBook(procfs::ProcFs proc) : proc_(std::move(proc)) {}

  // What a batch of events says. on_procs: true when a collection should follow at once.
  void on_files(track::FanotifyWatch::Batch batch);
  bool on_procs(const track::ProcEvents::Batch& batch);
  // The unconfirmed ends whose check is due by `now`, checked again: whether a collection
  // should follow, and when the next check is due.
  struct Rechecked {
    bool changed = false;
    std::optional<std::chrono::steady_clock::time_point> next;
  };
  Rechecked recheck_unconfirmed(std::chrono::steady_clock::time_point now);

  // engine::ScanHints' calls (HolderTracker forwards them).
  engine::ScanRequest take();
  void scanned(const core::ProcView& view, bool full);
  const std::map<pid_t, pid_t>& exited_parents() const { return exited_parents_; }
  // The ends of holders whose start time was known, confirmed by /proc: at most kKeptEnds
  // numbers (the oldest forgotten first), the latest kEndsPerPid of each. Each is dated by its
  // exit event's time, or (no event: a check found it gone) by the check, which it came before.
  const std::map<pid_t, std::vector<core::ProcessEnd>>& ends() const { return ends_; }
  static constexpr size_t kKeptEnds = 4096;
  static constexpr size_t kEndsPerPid = 4;

  // The processes taken for holders now: the latest scan's, with the events read since.
  const std::set<pid_t>& holders() const { return holders_; }
  const TrackerCounters& counters() const { return counters_; }
  // The latest final closes, oldest first (at most kKeptReleases).
  std::vector<Release> releases() const { return {releases_.begin(), releases_.end()}; }
  // When `pid` last finally closed a GPU file (held one last), if that is still kept, and not
  // before `since`: a number names a process only from its start, and an earlier process under
  // it released what it held before then.
  std::optional<std::chrono::system_clock::time_point> released_by(
      pid_t pid, std::chrono::system_clock::time_point since) const;
  static constexpr size_t kKeptReleases = 256;
  // When `pid` began holding GPU files as the events saw it: its first open, or the fork that
  // gave it a holder's files. Forgotten when it exits; at most kKeptBeginnings, newest kept.
  std::optional<std::chrono::system_clock::time_point> began_holding(pid_t pid) const;
  static constexpr size_t kKeptBeginnings = 4096;
  // Forks are read at once, file events later (up to WakePacer::kFileReadGap under a storm,
  // longer under its bounded batches): a process that opens a GPU file and forks at once is no
  // holder yet when its fork is read. Forks by processes not known to hold are kept this long (at
  // most kKeptRecentForks, newest kept), so the open read after them still names the children. A
  // fork storm elsewhere (a PID-cycling job) can push a record out inside its window: its parent is
  // then remembered, and when that parent turns out to hold, a full scan finds the children the
  // record would have named.
  static constexpr std::chrono::milliseconds kRecentForkWindow{2000};
  static constexpr size_t kKeptRecentForks = 4096;
  // The kernel reports an open before it puts the new fd in the opener's table, and the
  // woken tracker can preempt the opener right there: a scan answering the event at once may
  // find no GPU file yet. An open no scan has confirmed keeps its process a holder (its forks
  // followed) and read again at each collection until a scan sees it holding, the file's
  // final close by it is read, it ends, or kOpenConfirmWindow passes (it then passed the file
  // on and closed its own fd). At most kKeptRecentForks such processes, the newer kept.
  static constexpr std::chrono::milliseconds kOpenConfirmWindow{2000};

 private:
  void count_drift(const core::ProcView& view);
  // The kernel reported the exit of `pid`'s leader, or of a thread of a process whose leader's
  // exit was not its end, with that thread's wait status, at `at_ticks` (clock ticks since
  // boot). True: a collection should follow.
  bool on_exit(pid_t pid, std::optional<int> wait_status, uint64_t at_ticks);
  // An unconfirmed end whose check is due, checked again by its own start time: gone from /proc
  // (or no thread of it left), it ended; another process under the number, it ended when no
  // one knows, and no end is recorded. True: a collection should follow.
  bool recheck(pid_t pid, const UnconfirmedEnds::End& end);
  // What on_exit() and recheck() share: the exit (`at_ticks`: of an event) of the process
  // recorded under `pid` with `start`, checked against /proc, and what it ends.
  bool settle_exit(pid_t pid, std::optional<int> wait_status, std::optional<uint64_t> start,
                   std::optional<uint64_t> at_ticks);
  // An unconfirmed end's process (`start`) that /proc shows replaced under its number, found with
  // no event: what the events kept of it goes, with no end recorded; the scans' lineage bounds it.
  bool ended_replaced(pid_t pid, uint64_t start);
  // An exit under a number whose every process recorded started after it: the exit is no end
  // of any of them (see above). True: a collection should follow.
  bool exit_before_start(pid_t pid);
  bool exited(pid_t pid);  // `pid`, a holder or a holder's parent, ended now.
  // `wait_status`: empty where the exit that ended it was lost; `start`: its known_start();
  // `end_ticks`: when it ended (its exit event's time), or no later (a check's).
  void note_end(pid_t pid, bool holder, std::optional<int> wait_status,
                std::optional<uint64_t> start, uint64_t end_ticks);
  // `pid`'s start time, where a scan, a fork (its parent's, read when the fork was read) or an
  // unconfirmed end kept it. They can name different processes: a scan and that read can each
  // have read the number's next process before the events said that the one before had ended.
  // The latest start wins: of those that had started by `by_ticks`, where given (an exit's time).
  std::optional<uint64_t> known_start(pid_t pid,
                                      std::optional<uint64_t> by_ticks = std::nullopt) const;
  // `child`, forked by a holder, holds what its parent held at the fork.
  void add_forked_holder(pid_t child, pid_t parent, std::chrono::system_clock::time_point at);
  // After `opener`'s open, the recent forks whose parent is now a holder (and theirs): the
  // children may hold what it opened, and are read again.
  void claim_recent_forks(pid_t opener);
  // `pid` is a new holder; when a fork record of it was pushed out, asks for a full scan (lost_).
  void check_dropped_forks(pid_t pid);
  // A fork by a process not known to hold, kept for claim_recent_forks().
  void remember_fork(pid_t child, pid_t parent);
  // The exit of a process not known to hold, kept (as forks are) for an open of it read later:
  // a process that opens a GPU file, forks and exits at once may be gone before its open is
  // read, and its exit, read first, recorded nothing.
  void remember_exit(pid_t pid);
  // `pid`, whose open was just read, had exited before (and /proc shows it gone).
  bool ended_before_read(pid_t pid);
  // What its exit would have recorded had it been read after the open: no holder kept for it,
  // and the children the open made holders reparented (orphans).
  void exited_unseen(pid_t pid);
  // `pid` began holding at `at`, unless an earlier beginning is kept.
  void note_beginning(pid_t pid, std::chrono::system_clock::time_point at);
  // `pid` opened `path`, which no scan has shown yet (kOpenConfirmWindow).
  void note_open(pid_t pid, const std::string& path);
  // From scanned(): the opens `view` does not confirm yet, to read again.
  std::vector<pid_t> opens_to_confirm(const core::ProcView& view);
  // Exits were lost: every number recorded is unvouched, and the records of parents go.
  void exits_lost();
  // An event names `pid`; if it is unvouched, /proc says whether the process recorded under it
  // is still there (vouched again) or ended (forgotten). True: it ended, and was forgotten.
  bool revouch(pid_t pid);
  // A fork gave `child` its number: what was recorded under it with another start time than the
  // one /proc shows ended. True: a collection should follow.
  bool number_reused(pid_t child);
  // The process recorded under `pid` (with `start`, where known) ended unseen: what is kept of
  // it goes, and no end is recorded. True: the engine should read the number again.
  bool forget_process(pid_t pid, std::optional<uint64_t> start);
  // `pid` was named by events: read again at the next collection (changed_), and not counted as
  // drift by the next scan (touched_).
  void read_again(pid_t pid) {
    changed_.insert(pid);
    touched_.insert(pid);
  }
  // The latest scan's start time of `pid`, where it is `start`: nobody's now, so that another
  // process under the number is not taken for it.
  void forget_scanned_start(pid_t pid, std::optional<uint64_t> start);
  // `pid` (with `start`, where known), a holder or a process of the view, ended: the scan of the
  // collection in progress may have read it before, and must not bring it back.
  void ended_since_take(pid_t pid, std::optional<uint64_t> start);
  // From scanned(), for a full scan taken after the latest loss: each unvouched number that
  // `view` shows with its recorded start is vouched again, the others are forgotten.
  void vouch_by_scan(const core::ProcView& view);

  const procfs::ProcFs proc_;
  std::set<pid_t> changed_;                   // since the last take()
  bool lost_ = false;                         // events were lost since the last take()
  std::set<pid_t> holders_;                   // as of the latest scan, with events applied since
  std::set<pid_t> scanned_holders_;           // as of the latest scan alone
  std::map<pid_t, uint64_t> scanned_starts_;  // every process of the latest scan
  std::set<pid_t> touched_;                   // processes events named since the latest scan
  std::set<pid_t> exited_;                    // of the latest scan, seen ending: since take()
  UnconfirmedEnds unconfirmed_;               // processes whose leader's exit was not their end
  std::map<pid_t, uint64_t> parent_starts_;   // parents of forked_by_ the latest scan lacked
  std::map<pid_t, pid_t> forked_by_;          // holders' live children, with their parent
  std::map<pid_t, pid_t> exited_parents_;     // those whose parent exited since
  std::map<pid_t, std::vector<core::ProcessEnd>> ends_;  // see ends()
  std::deque<pid_t> end_order_;                          // ends_'s numbers, oldest first
  RecentForks recent_forks_;  // by processes not known to hold (daemon/holder_book_recent_forks)
  struct UnconfirmedOpen {
    std::set<std::string> paths;  // opened, with no final close by it read since
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<pid_t, UnconfirmedOpen> unconfirmed_opens_;  // see kOpenConfirmWindow
  // Exits of processes not known to hold, with when (at most kKeptRecentForks).
  std::unordered_map<pid_t, std::chrono::steady_clock::time_point> recent_exits_;
  // Parents of records pushed out of recent_forks_ inside their window, with when (at most
  // kKeptRecentForks; past that, every new holder until dropped_all_until_ counts as one).
  std::unordered_map<pid_t, std::chrono::steady_clock::time_point> dropped_fork_parents_;
  std::chrono::steady_clock::time_point dropped_all_until_{};
  bool scanned_once_ = false;
  // Numbers recorded before exits were lost, with the start time known then of the process
  // recorded under each (empty: none known). See above.
  std::map<pid_t, std::optional<uint64_t>> unvouched_;
  // See ended_since_take(): since the latest take(), at most kKeptRecentForks.
  std::unordered_map<pid_t, std::optional<uint64_t>> ended_since_take_;
  uint64_t exit_losses_ = 0;     // times exits were lost
  uint64_t losses_at_take_ = 0;  // exit_losses_ at the latest take()
  std::deque<Release> releases_;
  std::map<pid_t, std::chrono::system_clock::time_point> began_;  // see began_holding()
  TrackerCounters counters_;
};

}  // namespace gpureap::daemon
