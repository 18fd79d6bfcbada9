#pragma once
// The controlling terminal, when gpureap runs in its foreground: the job's process group is
// made the foreground group so Ctrl-C and Ctrl-Z reach the job directly, as they would
// without gpureap; gpureap takes the terminal back when the job stops or ends.
#include <sys/types.h>
#include <termios.h>

#include <optional>

namespace gpureap::supervise {

class Terminal {
 public:
  // Opens /dev/tty; interactive only when gpureap's group is the terminal's foreground group
  // (not `gpureap run ... &`, not a batch job without a terminal).
  static Terminal detect();
  Terminal(Terminal&& other) noexcept;
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  ~Terminal();

  bool interactive() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // gpureap's group is the foreground group right now (after `fg`, not after `bg`).
  bool gpureap_in_foreground() const;
  // The terminal's foreground process group; -1 when not interactive.
  pid_t foreground_group() const;
  // tcsetpgrp, with SIGTTOU ignored so a call from the background does not stop gpureap.
  void give_to(pid_t pgid) const;
  void take_back() const;
  // The modes saved at start: a job killed or stopped mid-way can leave the terminal raw.
  void restore_modes() const;

 private:
  Terminal() = default;
  int fd_ = -1;
  std::optional<termios> saved_;
};

}  // namespace gpureap::supervise
