// The evidence wire: what the daemon holds for doctor comes back on the client as it was, and a
// document of another version or shape is refused by the field's path.
#include <gtest/gtest.h>

#include "output/evidence_wire.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"
#include "snapshot_builders.h"
#include "wire_described.h"

namespace gpureap::output {
namespace {

using namespace gpureap::testing;
using nlohmann::json;

doctor::Evidence rich() {
  doctor::Evidence e;
  e.last = std::make_shared<const core::Snapshot>(
      make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})}));
  e.first = std::make_shared<const core::Snapshot>(make_snapshot(
      {holder(10, 1, 10)}, {gpu(0, 0, 6 * GiB, {listed(10, 4 * GiB), listed(77, 2 * GiB)})}));
  procfs::IpcResidue ipc;
  ipc.segments.push_back({-5, 32769, 64 * MiB, 4242, 4243, 0, 1001});
  ipc.files.push_back({"/dev/shm/torch_\xff\x01", 8 * MiB, 1001, false});
  ipc.uninspected = {4194303};
  e.ipc = std::make_shared<const procfs::IpcResidue>(ipc);
  core::KernelLog log;
  log.read = true;
  log.problem = "part of the log was overwritten";
  log.records = 1234;
  log.malformed = 2;
  core::KernelGpuEvent x;
  x.vendor = "nvidia";
  x.kind = "xid";
  x.label = "Xid";
  x.code = 79;
  x.pci_address = "0000:17:00";
  x.gpu = 0;
  x.seq = 99;
  x.since_boot_usec = 123456789;
  x.time = std::chrono::system_clock::time_point(std::chrono::seconds(1765000000));
  x.stamp = core::KernelStamp::ThisBoot;
  x.pid = 10;
  x.process_name = "python\xc3";
  x.detail = "GPU has fallen off the bus.";
  x.name = "GPU has fallen off the bus";
  x.level = core::KernelEventLevel::Critical;
  x.needs_reboot = true;
  log.events.push_back(x);
  log.oom_kills.push_back({4243, "python\xc3", 1001u, true, 100, 123456000, "Memory cgroup out"});
  log.oom_kills.push_back({4244, "x", std::nullopt, false, 101, 123457000, ""});
  e.kernel = std::make_shared<const core::KernelLog>(log);
  e.work_server_log = {"line one", "bytes \xfe"};
  return e;
}

TEST(EvidenceWire, EveryFieldComesBackAsItWas) {
  const auto e = rich();
  // Through text, as on the socket.
  auto back = evidence_from_wire(json::parse(dump_json(evidence_to_wire(e), -1)));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(snapshot_to_json(*back->first), snapshot_to_json(*e.first));
  EXPECT_EQ(snapshot_to_json(*back->last), snapshot_to_json(*e.last));
  ASSERT_TRUE(back->ipc);
  EXPECT_TRUE(SameByDescription(*back->ipc, *e.ipc));
  ASSERT_TRUE(back->kernel);
  EXPECT_TRUE(SameByDescription(*back->kernel, *e.kernel));
  EXPECT_EQ(back->work_server_log, e.work_server_log);
}

TEST(EvidenceWire, TheSameFirstAndNothingReadTravelAsNull) {
  doctor::Evidence e;
  e.last = std::make_shared<const core::Snapshot>(make_snapshot({}, {}));
  e.first = e.last;
  auto wire = evidence_to_wire(e);
  EXPECT_TRUE(wire["first"].is_null());
  EXPECT_TRUE(wire["ipc"].is_null());
  EXPECT_TRUE(wire["kernel"].is_null());
  auto back = evidence_from_wire(wire);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->first, back->last);
  EXPECT_FALSE(back->ipc);
  EXPECT_FALSE(back->kernel);
}

TEST(EvidenceWire, RefusesAnotherVersionAndAnyOtherShapeByThePath) {
  auto wire = evidence_to_wire(rich());
  auto other = wire;
  other["evidence"] = kEvidenceWireVersion + 1;
  auto refused = evidence_from_wire(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("evidence: version"), std::string::npos);
  EXPECT_NE(refused.error().hint.find("another gpureap version"), std::string::npos);
  auto old_snapshot = wire;
  old_snapshot["last"]["wire"] = kSnapshotWireVersion - 1;
  refused = evidence_from_wire(old_snapshot);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().hint.find("another gpureap version"), std::string::npos);
  auto unknown = wire;
  unknown["kernel"]["events"][0]["extra"] = 1;
  refused = evidence_from_wire(unknown);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("kernel.events[0].extra: unknown field"),
            std::string::npos)
      << refused.error().message;
  auto bad_level = wire;
  bad_level["kernel"]["events"][0]["level"] = "fatal";
  EXPECT_FALSE(evidence_from_wire(bad_level).ok());
  auto missing = wire;
  missing["ipc"].erase("files");
  refused = evidence_from_wire(missing);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("ipc.files: missing"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::output
