#pragma once
// The daemon's answer to one `gpureap ps` request: the latest published sample rendered by
// the function `ps` itself renders with (output/ps_render.h).
#include <chrono>
#include <string>
#include <string_view>

#include "engine/sample.h"

namespace gpureap::daemon {

// The answer document to `request` (one line, as read from the socket) on `sample` (null
// before the first one), `now` giving its age. Never throws: every failure is ok:false.
std::string ps_answer(std::string_view request, const engine::Sample* sample,
                      std::chrono::steady_clock::time_point now);

}  // namespace gpureap::daemon
