#pragma once
// A daemon in either holder-tracking mode (events or scans), fast samples and scans an hour
// apart, so that what it sees between them it saw through events or its re-reads; and what a
// test reads from it. Shared by the tests that compare the two modes with each other and with
// the one-shot commands.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "support.h"

namespace gpureap::testing {

enum class Mode { Events, Scans };

inline const char* name_of(Mode m) {
  return m == Mode::Events ? "events" : "scans";
}

// A test parameterised by Mode, named by it: INSTANTIATE_TEST_SUITE_P(BothModes, Suite,
// kBothModes, mode_test_name).
inline const auto kBothModes = ::testing::Values(Mode::Events, Mode::Scans);
inline std::string mode_test_name(const ::testing::TestParamInfo<Mode>& info) {
  return name_of(info.param);
}

// How often a daemon in the scans mode reads /proc: only when the driver's view moves (scans
// an hour apart), or at every sample, the reference for a scene the driver does not see change.
enum class Rescan { WhenTheDriverMoves, EverySample };

// A daemon in `mode`, its local socket and audit log in `dir`; `extra` is appended to the
// config (policies).
inline std::unique_ptr<DaemonProcess> mode_daemon(Mode mode, const TempDir& dir,
                                                  const FakeDevRoot& dev, const FakeNvml& nvml,
                                                  const std::string& extra = "",
                                                  Rescan rescan = Rescan::WhenTheDriverMoves) {
  const char* scans = mode == Mode::Scans && rescan == Rescan::EverySample ? "\"200ms\"" : "\"1h\"";
  std::ofstream(dir.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = " << scans
      << "\nfull_scan_interval = " << scans
      << "\nevent_full_scan_interval = \"1h\"\nholder_events = "
      << (mode == Mode::Events ? "true" : "false") << "\nlocal_socket = \""
      << dir.file("gpureap.sock") << "\"\naudit_log = \"" << dir.file("audit.jsonl") << "\"\n"
      << extra;
  auto d = std::make_unique<DaemonProcess>(
      std::vector<std::string>{"--config", dir.file("config.toml"), "--dev-root", dev.path()},
      nvml.env());
  EXPECT_GT(d->port(), 0) << d->log();
  EXPECT_TRUE(d->wait_log(kServingLocalSocket + dir.file("gpureap.sock"))) << d->log();
  return d;
}

// The environment that sends a command to the daemon's socket in `dir`.
inline std::vector<std::string> client_of(const TempDir& dir) {
  return {"GPUREAP_DAEMON_SOCKET=" + dir.file("gpureap.sock")};
}

}  // namespace gpureap::testing
