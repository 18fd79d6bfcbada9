#pragma once
#include <optional>
#include <string_view>

namespace gpureap::core {

// What is wrong with one row of the joined view. Names are part of the JSON schema.
enum class Anomaly {
  Stopped,           // state T/t: alive, holds its memory forever
  Uninterruptible,   // state D: signals wait until the kernel call returns
  Orphan,            // the job that started it is gone (core/orphan.h)
  ZombieChildren,    // has unreaped zombie children
  NoSuchProcess,     // listed by the driver, absent from /proc
  ForeignNamespace,  // listed, absent, and gpureap runs in a child PID namespace
  InheritedHolder,   // holds device files, unlisted, keeps someone else's context alive
  Leaked,            // listed, gone, and nothing alive can be keeping the context
  StalledJob,        // of a distributed job one of whose ranks is gone (core/distributed_job.h)
};

std::string_view to_string(Anomaly a);
std::optional<Anomaly> anomaly_from_string(std::string_view s);
// Anomalies that mean memory is held by something that should be gone.
bool is_ghost(Anomaly a);

}  // namespace gpureap::core
