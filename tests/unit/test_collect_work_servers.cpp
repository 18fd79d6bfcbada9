// Servers of other processes' GPU work (NVIDIA's MPS server): which listed process is one
// (collect/work_servers), the ghost a gone client leaves (core/ghost_verdict), the doctor's
// finding for it and for a server that hit an Xid, and the footer that names it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "backend/registry.h"
#include "collect/work_servers.h"
#include "doctor/diagnose.h"
#include "doctor/fixable.h"
#include "export/metrics.h"
#include "output/ghost_summary.h"
#include "output/ps_view.h"
#include "snapshot_builders.h"
#include "tui/model.h"

namespace gpureap::collect {
namespace {

using namespace gpureap::testing;

constexpr pid_t kDaemon = 50, kServer = 51, kClient = 60, kGone = 61, kJob = 70;

core::HostProcess running(core::HostProcess p, const std::string& exe) {
  p.details->exe = core::ExecutableFile{exe, true};
  return p;
}

core::DriverProcess client(pid_t pid, uint64_t bytes) {
  auto d = listed(pid, bytes);
  d.kind = core::GpuProcessKind::ServerClient;
  return d;
}

const WorkServers& builtin() {
  static const WorkServers servers = backend::work_servers(backend::builtin_backends());
  return servers;
}

// The MPS scene: the control daemon (50) and its server (51, holding nvidia0), a live client
// (60), a gone one (61), an unrelated job (70), and an orphan (80) that holds nvidia0 unlisted.
struct Scene {
  std::vector<core::HostProcess> processes;
  core::DriverReading reading;
};

Scene scene(const std::string& daemon_exe = "/usr/bin/nvidia-cuda-mps-control") {
  Scene sc;
  sc.processes = {proc(1, 0, 1),
                  running(proc(kDaemon, 1, kDaemon), daemon_exe),
                  running(holder(kServer, kDaemon, kDaemon), "/usr/bin/nvidia-cuda-mps-server"),
                  running(proc(kClient, 1, kClient), "/usr/bin/python3"),
                  running(holder(kJob, 1, kJob), "/usr/bin/python3"),
                  holder(80, 1, 80)};
  sc.reading = drivers({gpu(0, 0, 20 * GiB,
                            {listed(kServer, GiB / 2), client(kClient, 4 * GiB),
                             client(kGone, 6 * GiB), listed(kJob, 8 * GiB)})});
  return sc;
}

core::Snapshot joined(Scene sc) {
  std::sort(sc.processes.begin(), sc.processes.end(),
            [](const core::HostProcess& a, const core::HostProcess& b) {
              return a.stat.pid < b.stat.pid;
            });
  core::ProcView v;
  v.processes = std::move(sc.processes);
  v.driver_device_files = {"nvml"};
  mark_work_servers(v, sc.reading, builtin());
  return core::join(std::move(v), std::move(sc.reading), "host",
                    std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)));
}

const core::DriverProcess* listing(const core::Snapshot& s, pid_t pid) {
  for (const auto& p : s.drivers.gpus[0].processes)
    if (p.pid == pid) return &p;
  return nullptr;
}

TEST(WorkServers, TheServerIsTheMpsServerProgramUnderTheControlDaemon) {
  auto s = joined(scene());
  ASSERT_TRUE(listing(s, kServer)->serves_clients);
  EXPECT_EQ(*listing(s, kServer)->serves_clients, "MPS server");
  EXPECT_EQ(listing(s, kClient)->server, kServer);
  EXPECT_EQ(listing(s, kGone)->server, kServer);
  EXPECT_FALSE(listing(s, kJob)->server) << "a compute process is no client";
  const auto& use = s.row(kServer)->gpus[0];
  EXPECT_EQ(use.clients, (std::vector<pid_t>{kClient, kGone}));
  EXPECT_EQ(use.used_bytes, GiB / 2) << "the server's own memory";
  EXPECT_EQ(output::role_text(*s.row(kServer)), "MPS server · 2 clients");
  EXPECT_EQ(output::role_text(*s.row(kGone)), "client of 51");
  EXPECT_EQ(output::role_text(*s.row(kJob)), "");
}

TEST(WorkServers, ANameAloneIsNoServer) {
  // The server program under a parent that is not the control daemon: anyone can make that.
  auto s = joined(scene("/home/eve/nvidia-cuda-mps-controller"));
  EXPECT_FALSE(listing(s, kServer)->serves_clients);
  EXPECT_FALSE(listing(s, kGone)->server);
  EXPECT_TRUE(s.ghost(kGone)->servers.empty());

  // A user's process named like the control daemon, whose exe cannot be read, is not root's.
  auto sc = scene();
  sc.processes[1].details->exe.reset();
  sc.processes[1].stat.comm = "nvidia-cuda-mps";
  sc.processes[1].details->uid = 1000;
  EXPECT_FALSE(listing(joined(sc), kServer)->serves_clients);
  // Root's daemon, whose exe another user cannot read, is the control daemon by its name.
  sc.processes[1].details->uid = 0;
  EXPECT_TRUE(listing(joined(sc), kServer)->serves_clients);
}

TEST(WorkServers, AClientNamesTheServerOfItsUser) {
  auto sc = scene();
  auto other = running(holder(52, kDaemon, kDaemon), "/usr/bin/nvidia-cuda-mps-server");
  other.details->uid = 1000;
  sc.processes.push_back(other);
  sc.processes[3].details->uid = 1000;  // the live client is user 1000's
  sc.reading.gpus[0].processes.push_back(listed(52, GiB / 2));
  auto s = joined(sc);
  EXPECT_EQ(listing(s, kClient)->server, 52);
  EXPECT_FALSE(listing(s, kGone)->server) << "a gone client's user is unknown: two servers";
  EXPECT_EQ(s.ghost(kGone)->servers, (std::vector<pid_t>{kServer, 52}));
}

TEST(WorkServers, OnASplitGpuAClientNamesTheServerOfItsInstance) {
  // MIG: a server per GPU instance, both root's; the gone client's user is unknown, but the
  // driver lists it in GPU instance 3, where one server runs.
  auto sc = scene();
  sc.processes.push_back(running(holder(52, kDaemon, kDaemon), "/usr/bin/nvidia-cuda-mps-server"));
  sc.reading.gpus[0].processes.push_back(listed(52, GiB / 2));
  for (auto& p : sc.reading.gpus[0].processes) {
    p.gpu_instance_id = p.pid == 52 ? 5u : 3u;
    p.compute_instance_id = 0u;
  }
  auto s = joined(sc);
  EXPECT_EQ(listing(s, kGone)->server, kServer);
  EXPECT_EQ(listing(s, kClient)->server, kServer);
  EXPECT_EQ(s.ghost(kGone)->servers, std::vector<pid_t>{kServer});
}

TEST(WorkServers, AGoneClientIsKeptByItsServerNotByHoldersAndIsNotLeaked) {
  auto s = joined(scene());
  const core::Ghost* g = s.ghost(kGone);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->servers, std::vector<pid_t>{kServer});
  EXPECT_TRUE(g->keepers.empty()) << "the unlisted holder 80 keeps no client's context";
  EXPECT_TRUE(g->listed_keepers.empty());
  EXPECT_FALSE(g->leaked);
  EXPECT_FALSE(s.row(80)->has(core::Anomaly::InheritedHolder));
  auto m = s.memory_summary(*s.gpu(0));
  EXPECT_EQ(m.ghost_bytes, 6 * GiB);
  EXPECT_EQ(m.leaked_bytes, 0u);

  auto notices = output::ghost_notices(s);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].kind, output::GhostCase::Served);
  EXPECT_EQ(notices[0].servers, std::vector<pid_t>{kServer});
  EXPECT_NE(notices[0].headline.find("by MPS server PID 51"), std::string::npos)
      << notices[0].headline;

  // Without a live server, a gone MPS client is judged as any gone PID: 80, no kin of it, is
  // only another holder, and the memory is a leak.
  auto sc = scene();
  sc.processes.erase(sc.processes.begin() + 2);
  sc.reading.gpus[0].processes.erase(sc.reading.gpus[0].processes.begin());
  auto without = joined(sc);
  EXPECT_TRUE(without.ghost(kGone)->servers.empty());
  EXPECT_TRUE(without.ghost(kGone)->keepers.empty());
  EXPECT_EQ(without.ghost(kGone)->other_holders, std::vector<pid_t>{80});
  EXPECT_TRUE(without.ghost(kGone)->leaked);
}

// The cluster view names who keeps a gone PID's memory from the metric's keepers: for a gone
// client, its server (it is no leak, and no holder keeps it).
TEST(WorkServers, TheProblemMetricNamesTheServerAsTheGoneClientsKeeper) {
  auto s = joined(scene());
  std::vector<doctor::Finding> findings;
  auto m = exporter::build_metrics({s, findings, {}, false});
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& f : m)
    if (f.name == "gpureap_problem_process_memory_bytes")
      for (const auto& sample : f.samples) {
        std::map<std::string, std::string> l;
        for (const auto& label : sample.labels) l[label.name] = label.value;
        problems.push_back({l["pid"] + " " + l["problem"], l["keepers"]});
      }
  using Problem = std::pair<std::string, std::string>;
  EXPECT_EQ(problems,
            (std::vector<Problem>{{std::to_string(kGone) + " ghost", std::to_string(kServer)}}));
}

TEST(WorkServers, DoctorGivesOneFindingAndFixesNothingForAGoneClient) {
  auto s = joined(scene());
  auto found = doctor::diagnose({s, s, {}, std::nullopt, nullptr});
  std::vector<const doctor::Finding*> about;
  for (const auto& f : found)
    if (std::find(f.pids.begin(), f.pids.end(), kGone) != f.pids.end()) about.push_back(&f);
  ASSERT_EQ(about.size(), 1u);
  const auto& f = *about[0];
  EXPECT_EQ(f.code, doctor::FindingCode::KeptByServer);
  EXPECT_EQ(f.pids, (std::vector<pid_t>{kGone, kServer}));
  ASSERT_EQ(f.remedy.size(), 2u);
  EXPECT_EQ(f.remedy[0].command, "echo terminate_client 51 61 | nvidia-cuda-mps-control");
  EXPECT_EQ(f.remedy[1].kind, doctor::StepKind::Or);
  EXPECT_EQ(f.remedy[1].command,
            "echo quit | nvidia-cuda-mps-control && nvidia-cuda-mps-control -d");
  EXPECT_NE(f.remedy[1].why.find("every client of the server loses its work"), std::string::npos);
  EXPECT_NE(f.remedy[1].why.find("it ends the work of PID 60 (p60) of root"), std::string::npos)
      << f.remedy[1].why;
  EXPECT_EQ(f.summary, "GPU 0: 6.0 GiB of gone PID 61 kept by MPS server PID 51");
  EXPECT_TRUE(doctor::fixable(found).empty());
}

// The driver's Xid 31 of the MPS server on GPU 0, ten minutes ago.
core::KernelLog server_xid_log() {
  core::KernelGpuEvent e;
  e.vendor = "nvidia";
  e.kind = "xid";
  e.label = "Xid";  // as its parser names it
  e.code = 31;
  e.gpu = 0;
  e.pid = kServer;
  e.level = core::KernelEventLevel::Warning;
  e.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 - 600));
  core::KernelLog log;
  log.events = {e};
  return log;
}

TEST(WorkServers, AnXidOfAServerWithNoClientsCountsNone) {
  auto sc = scene();
  auto& listed_now = sc.reading.gpus[0].processes;
  std::erase_if(listed_now,
                [](const core::DriverProcess& p) { return p.pid == kClient || p.pid == kGone; });
  auto s = joined(sc);
  s.proc.boot_time = 1'700'000'000 - 100'000;
  core::KernelLog log = server_xid_log();
  doctor::DoctorInput in{s, s, {}, std::nullopt, nullptr, {}, &log};
  const doctor::Finding* xid = nullptr;
  auto found = doctor::diagnose(in);
  for (const auto& f : found)
    if (f.code == doctor::FindingCode::GpuKernelError) xid = &f;
  ASSERT_NE(xid, nullptr);
  bool said = false;
  for (const auto& line : xid->evidence) {
    EXPECT_EQ(line.find("0 client"), std::string::npos) << line;
    EXPECT_EQ(line.find("()"), std::string::npos) << line;
    said = said || line == "MPS server runs no client's GPU work now";
  }
  EXPECT_TRUE(said) << ::testing::PrintToString(xid->evidence);
}

TEST(WorkServers, AnXidOfTheServerSaysItsClientsWorkFailsWithTheLogAsEvidence) {
  auto s = joined(scene());
  s.proc.boot_time = 1'700'000'000 - 100'000;
  core::KernelLog log = server_xid_log();
  log.events[0].pci_address = "0000:3b:00";
  const core::KernelGpuEvent e = log.events[0];
  doctor::DoctorInput in{s, s, {}, std::nullopt, nullptr, {}, &log};
  EXPECT_TRUE(doctor::wants_work_server_log(in));
  in.work_server_log = {"server.log: [2026-12-05 05:00:00.000 Other 51] \x1b[31mfault\x1b[0m"};
  auto found = doctor::diagnose(in);
  const doctor::Finding* xid = nullptr;
  for (const auto& f : found)
    if (f.code == doctor::FindingCode::GpuKernelError) xid = &f;
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->summary,
            "MPS server PID 51 on GPU 0 hit Xid 31: its clients' work fails until it restarts");
  EXPECT_EQ(xid->severity, doctor::Severity::Critical);
  ASSERT_FALSE(xid->remedy.empty());
  EXPECT_EQ(xid->remedy[0].command,
            "echo quit | nvidia-cuda-mps-control && nvidia-cuda-mps-control -d");
  // A restart ends every client's work: it says whose (the live client; the gone one's is gone).
  EXPECT_NE(xid->remedy[0].why.find("; it ends the work of PID 60 ("), std::string::npos)
      << xid->remedy[0].why;
  EXPECT_EQ(xid->remedy[0].why.find("PID 61"), std::string::npos) << xid->remedy[0].why;
  // The log is root's: its lines are kept apart, for the readers who could read it.
  bool log_line = false;
  for (const auto& line : xid->restricted_evidence)
    if (line.find("server.log: [2026-12-05") != std::string::npos) {
      log_line = true;
      EXPECT_EQ(line.find('\x1b'), std::string::npos) << "log lines are escaped";
    }
  EXPECT_TRUE(log_line) << ::testing::PrintToString(xid->restricted_evidence);
  for (const auto& line : xid->evidence) EXPECT_EQ(line.find("server.log"), std::string::npos);

  // The log is read only for a recent fault of a live server: not for another process's, nor
  // for one more than a day old.
  auto other = e;
  other.pid = kJob;
  log.events = {other};
  EXPECT_FALSE(doctor::wants_work_server_log(in)) << "an Xid of a job, not of the server";
  auto old = e;
  old.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 - 90'000));
  log.events = {old};
  EXPECT_FALSE(doctor::wants_work_server_log(in)) << "an Xid of yesterday";
  log.events = {e};

  // A server started after the Xid is not the process it names.
  s.proc.boot_time = 1'700'000'000 - 300;
  doctor::DoctorInput later{s, s, {}, std::nullopt, nullptr, {}, &log};
  for (const auto& f : doctor::diagnose(later)) {
    if (f.code == doctor::FindingCode::GpuKernelError) {
      EXPECT_EQ(f.summary.find("MPS server"), std::string::npos) << f.summary;
    }
  }
}

TEST(WorkServers, TopShowsTheServerItsClientsAndWhoHoldsTheGoneClientsMemoryIn80Columns) {
  tui::TopModel m(tui::TopSettings{false, true, std::chrono::milliseconds(1000), {0, 0}});
  m.set_size(80, 24);
  m.set_snapshot(std::make_shared<const core::Snapshot>(joined(scene())));
  auto f = m.compose();
  bool server_row = false, client_row = false, status = false;
  for (const auto& l : f.lines) {
    EXPECT_LE(l.width(), 80u) << l.text();
    const std::string t = l.text();
    server_row = server_row || (t.find(" 51 ") != std::string::npos &&
                                t.find("[MPS server · 2 clients]") != std::string::npos);
    client_row = client_row || (t.find(" 61 ") != std::string::npos &&
                                t.find("[client of 51]") != std::string::npos);
    status = status ||
             t.find("6.0 GiB on GPU 0 held for gone clients by server 51") != std::string::npos;
  }
  EXPECT_TRUE(server_row) << f.text();
  EXPECT_TRUE(client_row) << f.text();
  EXPECT_TRUE(status) << f.text();
}

}  // namespace
}  // namespace gpureap::collect
