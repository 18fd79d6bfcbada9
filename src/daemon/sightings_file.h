#pragma once
// The daemon's sightings (core::CarriedSightings), kept for its next run on this boot. A
// restart (an upgrade, a crash, `systemctl restart`) would otherwise forget when each listing
// was first seen and whose its number was: a process that had taken a gone job's number, and
// that this run disowned, would pass for the listed one at the next run's first sighting.
//
// The file lies beside the local socket, in the runtime directory that systemd keeps across
// restarts (RuntimeDirectoryPreserve=restart) and that a reboot empties. It is rewritten a
// second at most after a change, every kRefresh while nothing changes, and at a stop; a file
// left by a crash lacks at most the last second's changes (engine::ListedSince::carry_over says
// how the next run takes it on).
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/listed_sightings.h"
#include "core/result.h"
#include "engine/collection.h"
#include "procfs/proc_fs.h"

namespace gpureap::daemon {

// The file for the local socket at `socket`: "sightings.json" in its directory; "" where the
// daemon serves no socket.
std::string sightings_file_for(const std::string& socket);

// A previous run older than this says too little of now: its listings may have ended and come
// back meanwhile.
inline constexpr std::chrono::minutes kMaxSightingsAge{10};

// The file at a path, read and written through its directory, opened once: a user who may
// rename files in a directory could put an older file of the daemon's own back, so only a
// directory of this process's user (or root) that nobody else may write is used.
class SightingsFile {
 public:
  // Error: the directory cannot be opened, or others may write it.
  static core::Result<SightingsFile> open(const std::string& path);

  // What a previous run left, where this run may take it on: a regular file of this process's
  // user, writable by nobody else, of this boot and PID namespace, saved at most
  // kMaxSightingsAge before `now_ticks` (boot ticks). Empty when there is none; an error says
  // why it is not taken.
  core::Result<std::optional<core::CarriedSightings>> load(const procfs::ProcFs& proc,
                                                           uint64_t now_ticks) const;
  // Written whole (a new file renamed over the old); the error's text otherwise.
  std::optional<std::string> save(const core::CarriedSightings& carried) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_, name_;
  std::shared_ptr<int> dir_;
};

// Writes each collection's Collection::carried to the file, as often as the header says.
class SightingsKeeper : public engine::CollectionConsumer {
 public:
  static constexpr std::chrono::seconds kRefresh{10};

  SightingsKeeper(SightingsFile file, std::string boot_id)
      : file_(std::move(file)), boot_id_(std::move(boot_id)) {}
  void on_collection(const engine::Collection& collection) override;
  // The latest collection's, now (at a stop).
  void flush();

 private:
  using Clock = std::chrono::steady_clock;
  void write(const core::CarriedSightings& carried, Clock::time_point now);

  const SightingsFile file_;
  const std::string boot_id_;
  std::mutex mutex_;  // flush() comes from the main thread
  std::shared_ptr<const core::CarriedSightings> latest_;
  std::optional<core::CarriedSightings> written_;  // as last written, saved_at_ticks aside
  Clock::time_point written_at_{};
  std::string failed_;  // the last write's error, said once
};

}  // namespace gpureap::daemon
