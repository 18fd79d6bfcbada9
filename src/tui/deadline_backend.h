#pragma once
// A GPU backend whose calls cannot hang their caller. NVML calls block forever when the driver
// is wedged; this runs the wrapped backend on a thread of its own and, when it has not answered
// within the deadline, reports the backend as down ("not-answering") so the /proc view stays
// live. A call in flight is never duplicated: later callers wait for it (up to its deadline).
// Destruction joins the thread (the backend is destroyed on the owner's thread, never under a
// running call); a thread stuck in a call is left behind, and the program should then leave
// with _exit.
#include <chrono>
#include <memory>
#include <optional>

#include "backend/gpu_backend.h"

namespace gpureap::tui {

class DeadlineBackend final : public backend::GpuBackend {
 public:
  DeadlineBackend(std::shared_ptr<backend::GpuBackend> inner, std::chrono::milliseconds deadline);
  DeadlineBackend(const DeadlineBackend&) = delete;
  DeadlineBackend& operator=(const DeadlineBackend&) = delete;
  ~DeadlineBackend() override;
  core::BackendReport collect() override;
  // How long the call in flight has run, once it is past the deadline.
  std::optional<std::chrono::steady_clock::duration> stuck_for() const;
  // A call is running on the backend's thread (stuck or not).
  bool in_flight() const;

  struct State;  // shared with the worker thread

 private:
  std::shared_ptr<State> state_;
  std::chrono::milliseconds deadline_;
};

// The report of a backend that does not answer.
core::BackendReport not_answering_report(std::chrono::steady_clock::duration blocked);

}  // namespace gpureap::tui
