#pragma once
// The boot and PID namespace of the processes a procfs mount shows (core/pid_space.h): what a
// view read elsewhere (the node's daemon's) must match to name them.
#include <string>

#include "core/pid_space.h"

namespace gpureap::collect {

// Both unknown where `proc_root` cannot be opened.
core::PidSpace own_pid_space(const std::string& proc_root);

}  // namespace gpureap::collect
