#pragma once
// How a row's owner and container are named where a short label is wanted: the metrics' `user`
// and `container` labels, the history's process tracks.
#include <string>

#include "core/snapshot.h"

namespace gpureap::core {

// The user name, else the uid, else "unknown" (a PID the driver lists that /proc does not have).
std::string user_label(const ProcessRow& row);
// The container id (else the runtime name) of a row, or "" outside a verified container.
std::string container_label(const ProcessRow& row);

}  // namespace gpureap::core
