#pragma once
// The holder book's recent forks (HolderBook::kRecentForkWindow): forks by processes not known to
// hold, kept so that an open read after them still names the children (forks are read at once,
// opens later: a process that opens a GPU file and forks at once is no holder yet when its fork
// is read).
//
// A record names its parent and child by number, and a number is no identity: the kernel hands it
// out again once its process has ended, and says so in order, the process's exit first and the
// fork that hands the number out after. So an exit ends what the records say of the number: a
// child that exited holds nothing (it is kept only as the link between its parent and its own
// children), and a parent that exited holds nothing either: only its own open, read after its
// exit, was made before its forks and names its children; that another process holds under its
// number (a scan read the number's next process) names none. A fork that hands a number out
// again ends every record that names it: an open under the number after that fork is the new
// process's, which forked none of them. Lost events (an overflow) clear every record.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gpureap::daemon {

class RecentForks {
 public:
  using Clock = std::chrono::steady_clock;
  struct Fork {
    pid_t child = 0, parent = 0;
    Clock::time_point at;  // when its event was read
  };

  // A fork by a process not known to hold, read at `now`. Records older than `window` go; past
  // `kept` records the oldest goes too, and is returned (inside its window).
  std::optional<Fork> add(pid_t child, pid_t parent, Clock::time_point now, Clock::duration window,
                          size_t kept);
  // The kernel reported the exit of `pid`'s leader (its number is handed out again only after).
  void exited(pid_t pid);
  // A fork handed `pid` out: every record that names it goes.
  void handed_out(pid_t pid);
  // `opener`'s open was read at `now`: the forks whose parent holds (`holds`: a holder the book
  // knows, for a parent whose exit was not read; `opener` itself, for one whose exit was), or is
  // a child this claim reached, oldest first (parents before their children). Their records go,
  // and so do those of exited children it reached through, whose own children it returns.
  std::vector<Fork> claim(pid_t opener, const std::function<bool(pid_t)>& holds,
                          Clock::time_point now, Clock::duration window);
  void clear();

 private:
  struct Record {
    Fork fork;
    uint64_t seq = 0;           // in the order of the events
    bool child_exited = false;  // a link to its children only
  };
  using Records = std::list<Record>;
  // What the events said of a parent's number since its records: each mark is the seq the next
  // record had then, so the records before it are of the process the event was about. Marked,
  // not walked: an event costs the same however many children the parent forked.
  struct Parent {
    size_t records = 0;
    uint64_t exited_before = 0;      // its exit was read
    uint64_t handed_out_before = 0;  // a fork handed its number out again: those records are void
  };
  Records::iterator remove(Records::iterator it);
  void expire(Clock::time_point now, Clock::duration window);

  Records records_;                                        // oldest first
  std::unordered_map<pid_t, Records::iterator> by_child_;  // each child's record
  std::unordered_map<pid_t, Parent> parents_;              // each parent's number
  uint64_t next_seq_ = 0;
};

}  // namespace gpureap::daemon
