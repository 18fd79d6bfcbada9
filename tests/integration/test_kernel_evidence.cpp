// The kernel log as evidence, through the real binary: `--kmsg FILE` (a saved log in the real
// record format), doctor joining an Xid to a gone PID the NVML test double lists, ps's note,
// and the daemon following a log that grows.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json kernel_scenario(json processes) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"pci_bus_id", "00000000:17:00.0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", processes}}}}};
}

// A record as /dev/kmsg gives it; `usec` since boot.
std::string kmsg_record(uint64_t seq, uint64_t usec, const std::string& text) {
  return "4," + std::to_string(seq) + "," + std::to_string(usec) + ",-;" + text + "\n";
}

// A minute ago plus `usec`, on the log's clock: a record stamped `usec` after boot would be days
// old on a machine up for days, and an Xid older than a day is history, not a warning.
uint64_t recent(uint64_t usec) {
  const uint64_t now = boot_usec_now(), minute = 60'000'000;
  return (now > minute ? now - minute : 0) + usec;
}

struct DoctorRun {
  int exit_code = -1;
  json doc;
};

// `gpureap doctor --json` reading the kernel log `kmsg`.
DoctorRun doctor_reading(const FakeDevRoot& dev, const FakeNvml& nvml, const std::string& kmsg) {
  auto r = run_gpureap(
      {"doctor", "--json", "--dev-root", dev.path(), "--kmsg", kmsg, "--settle", "0s"}, nvml.env());
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  return {r.exit_code, doc.is_discarded() ? json::object() : doc};
}

bool any_has(const json& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

TEST(KernelEvidence, DoctorJoinsAnXidToTheGonePidAndWhoKeepsItsMemory) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  Child parent([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    pid_t c = ::fork();
    if (c == 0) {
      for (;;) ::pause();
    }
    ready.send(c);
    ::_exit(0);
  });
  pid_t ghost = parent.pid();
  pid_t worker = static_cast<pid_t>(ready.receive());
  parent.kill_and_reap();
  FakeNvml nvml(kernel_scenario(
      json::array({{{"pid", ghost}, {"used_bytes", 8 * GiB}, {"holders", {ghost, worker}}}})));
  TempDir logs;
  std::ofstream(logs.file("kmsg"))
      << kmsg_record(1, recent(1000), "Linux version 6.1.0") << " SUBSYSTEM=cpu\n"
      << "garbage that is no record\n"
      << kmsg_record(2, recent(2'000'000),
                     "NVRM: Xid (PCI:0000:17:00): 31, pid=" + std::to_string(ghost) +
                         ", name=trainer, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS")
      << kmsg_record(3, recent(3'000'000),
                     "NVRM: Xid (PCI:0000:17:00): 45, pid=" + std::to_string(ghost) +
                         ", name=trainer, Ch 00000008");
  auto r = run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--kmsg", logs.file("kmsg"),
                        "--settle", "300ms"},
                       nvml.env());
  json doc = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out << r.err;
  const auto* f = finding(doc, "gpu-xid");
  ASSERT_NE(f, nullptr) << doc["findings"].dump(2);
  EXPECT_EQ((*f)["gpus"], json::array({0}));
  EXPECT_EQ((*f)["severity"], "warning");
  EXPECT_TRUE(any_has((*f)["evidence"], "PID " + std::to_string(ghost) + " hit Xid 45"))
      << (*f).dump(2);
  EXPECT_TRUE(any_has((*f)["evidence"], "still held by PID " + std::to_string(worker)))
      << (*f).dump(2);
  EXPECT_TRUE(any_has((*f)["remedy"], "gpureap kill --ghosts"));
  EXPECT_NE(finding(doc, "no-such-process"), nullptr);
  EXPECT_EQ(r.err.find("kmsg"), std::string::npos) << r.err;  // the log was read: nothing to say
  ::kill(worker, SIGKILL);
  wait_gone(worker);
}

// An Xid names the process at its PID only if that process was already running then: one
// started after the Xid has a reused PID, and one of a log whose clock time is unknown cannot
// be confirmed.
TEST(KernelEvidence, AnXidNamesOnlyAProcessThatRanAtItsTime) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child early = holding(dev, "nvidia0");
  // The late one starts once the clock of start times has moved 200 ms past the early one's.
  const uint64_t early_start = started_usec(early.pid());
  ASSERT_TRUE(wait_until([&] { return boot_usec_now() >= early_start + 200'000; }));
  Child late = holding(dev, "nvidia0");
  // Halfway between the two starts, far from either at the clock's 10 ms resolution.
  const uint64_t at = (started_usec(early.pid()) + started_usec(late.pid())) / 2;
  ASSERT_GT(started_usec(late.pid()), started_usec(early.pid()) + 100'000);
  FakeNvml nvml(kernel_scenario(json::array({{{"pid", early.pid()}, {"used_bytes", 2 * GiB}},
                                             {{"pid", late.pid()}, {"used_bytes", 2 * GiB}}})));
  auto xid = [](pid_t pid) {
    return "NVRM: Xid (PCI:0000:17:00): 31, pid=" + std::to_string(pid) +
           ", name=python, Ch 00000008";
  };
  TempDir logs;
  std::ofstream(logs.file("kmsg"))
      << kmsg_record(1, at, xid(early.pid())) << kmsg_record(2, at, xid(late.pid()));
  // A stamp no clock time can have (past a century of uptime): the Xid's time is unknown.
  std::ofstream(logs.file("timeless")) << kmsg_record(1, 4'000'000'000'000'000, xid(early.pid()));
  auto doctor = [&](const std::string& kmsg) {
    json doc = doctor_reading(dev, nvml, kmsg).doc;
    const auto* f = finding(doc, "gpu-xid");
    EXPECT_NE(f, nullptr) << doc.dump(2);
    return f ? *f : json::object();
  };
  const std::string e = std::to_string(early.pid()), l = std::to_string(late.pid());
  json f = doctor(logs.file("kmsg"));
  EXPECT_TRUE(any_has(f["evidence"], "PID " + e + " hit Xid 31 at ")) << f.dump(2);
  EXPECT_TRUE(any_has(f["evidence"], "; it still runs and the driver lists it")) << f.dump(2);
  EXPECT_TRUE(any_has(f["evidence"], "PID " + l + " hit Xid 31 at ")) << f.dump(2);
  EXPECT_TRUE(any_has(f["evidence"], "the process now at PID " + l)) << f.dump(2);
  EXPECT_TRUE(any_has(f["evidence"], "the PID was reused, and the Xid is not about that process"))
      << f.dump(2);
  EXPECT_EQ(f["pids"], json::array({early.pid()})) << f.dump(2);

  f = doctor(logs.file("timeless"));
  EXPECT_TRUE(any_has(f["evidence"], "whether that was the process now at PID " + e)) << f.dump(2);
  EXPECT_TRUE(any_has(f["evidence"], "cannot be confirmed: the Xid's clock time is unknown"))
      << f.dump(2);
  EXPECT_FALSE(any_has(f["evidence"], "still runs")) << f.dump(2);
}

TEST(KernelEvidence, PsNotesACriticalXidAndAnUnreadableLogIsSaidOnce) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(kernel_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}}})));
  TempDir logs;
  std::ofstream(logs.file("kmsg")) << kmsg_record(
      7, recent(5'000'000),
      "NVRM: Xid (PCI:0000:17:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
      "bus.");
  std::ofstream(logs.file("quiet")) << kmsg_record(1, 1, "NVRM: loading NVIDIA UNIX Kernel Module");
  auto ps = run_gpureap({"ps", "--dev-root", dev.path(), "--kmsg", logs.file("kmsg")}, nvml.env());
  EXPECT_NE(ps.err.find("note: GPU 0 had Xid 79 (GPU has fallen off the bus) since boot"),
            std::string::npos)
      << ps.err;
  auto quiet =
      run_gpureap({"ps", "--dev-root", dev.path(), "--kmsg", logs.file("quiet")}, nvml.env());
  EXPECT_EQ(quiet.err.find("Xid"), std::string::npos) << quiet.err;
  // doctor: the reset advice of the GPU becomes a reboot, and a missing log is said once.
  auto doc = run_gpureap(
      {"doctor", "--dev-root", dev.path(), "--kmsg", logs.file("kmsg"), "--settle", "0s"},
      nvml.env());
  EXPECT_NE(doc.out.find("Xid 79"), std::string::npos) << doc.out;
  EXPECT_EQ(doc.exit_code, 2) << doc.out;  // critical
  auto missing = run_gpureap(
      {"doctor", "--dev-root", dev.path(), "--kmsg", logs.file("absent"), "--settle", "0s"},
      nvml.env());
  EXPECT_EQ(missing.exit_code, 0) << missing.out << missing.err;
  EXPECT_NE(missing.err.find(logs.file("absent") + ": no such file"), std::string::npos)
      << missing.err;
}

TEST(KernelEvidence, TheDaemonFollowsAGrowingLogAndCountsEachXidOnce) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  FakeNvml nvml(kernel_scenario(json::array()));
  TempDir dir;
  std::ofstream(dir.file("config.toml")) << "interval = \"200ms\"\n";
  const std::string kmsg = dir.file("kmsg");
  std::ofstream(kmsg) << kmsg_record(1, recent(1000), "Linux version 6.1.0")
                      << kmsg_record(2, recent(2'000'000),
                                     "NVRM: Xid (PCI:0000:17:00): 31, pid=4242, "
                                     "name=python, Ch 00000008");
  DaemonProcess d({"--config", dir.file("config.toml"), "--dev-root", dev.path(), "--kmsg", kmsg},
                  nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  auto series = [](const char* code) {
    return std::string(
               "gpureap_gpu_kernel_events_total{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id="
               "\"0000:17:00\",vendor=\"nvidia\",kind=\"xid\",code=\"") +
           code + "\"}";
  };
  const std::string xid31 = series("31");
  ASSERT_TRUE(wait_until([&] { return d.metric(xid31) == 1; })) << d.get("/metrics").body;
  EXPECT_EQ(d.metric("gpureap_kernel_log_readable "), 1);
  // Several samples later, nothing was counted twice.
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ").has_value(); }));
  std::ofstream(kmsg, std::ios::app)
      << kmsg_record(3, recent(3'000'000),
                     "NVRM: Xid (PCI:0000:17:00): 31, pid=4243, name=python, Ch 1")
      << kmsg_record(4, recent(4'000'000),
                     "NVRM: Xid (PCI:0000:17:00): 79, pid='<unknown>', GPU has fallen "
                     "off the bus.");
  const std::string xid79 = series("79");
  ASSERT_TRUE(wait_until([&] { return d.metric(xid79) == 1; })) << d.get("/metrics").body;
  EXPECT_EQ(d.metric(xid31), 2);
  EXPECT_TRUE(d.metric("gpureap_gpu_kernel_last_event_timestamp_seconds{gpu=\"0\"").has_value());
  // The names of 0.1 stay for one release (docs/config.md).
  EXPECT_EQ(d.metric("gpureap_xid_events_total{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"0000:"
                     "17:00\",xid=\"31\"}"),
            2);
  // doctor's findings in the daemon have it too (alert rules on finding "gpu-xid" see it).
  auto findings = json::parse(d.get("/api/v1/findings").body, nullptr, false);
  ASSERT_FALSE(findings.is_discarded());
  EXPECT_NE(findings.dump().find("gpu-xid"), std::string::npos) << findings.dump(2);
}

// Microseconds since boot now (the clock of /dev/kmsg's stamps).
uint64_t uptime_usec() {
  double seconds = 0;
  std::ifstream("/proc/uptime") >> seconds;
  return static_cast<uint64_t>(seconds * 1e6);
}

// The driver's words for a GPU off the bus, naming `pid`: what a user wants doctor to believe.
std::string forged_xid(pid_t pid) {
  return "NVRM: Xid (PCI:0000:17:00): 79, pid=" + std::to_string(pid) +
         ", name=python, GPU has fallen off the bus.";
}

bool names(const json& doc, const std::string& text) {
  for (const auto& f : doc["findings"])
    for (const char* field : {"evidence", "remedy"})
      if (any_has(f[field], text)) return true;
  return false;
}

// Kernel messages quote text a user chose: a segfault report names the file of the mapping it
// faulted in, the once-per-boot NULL-argv warning the exec path, and many messages begin with a
// process's name. Inside them the driver's words are no Xid: doctor believes only a record that
// begins with the driver's prefix, from the kernel itself.
TEST(KernelEvidence, TextAUserChoseInsideAKernelRecordIsNoXid) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(kernel_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}}})));
  const std::string pid = std::to_string(job.pid());
  TempDir logs;
  // Kernel records (facility 0), as the kernel words them.
  std::ofstream(logs.file("kmsg"))
      << kmsg_record(1, recent(2'000'000),
                     "python[" + pid +
                         "]: segfault at 0 ip 00007f3a10000000 sp 00007ffc2a5e1f08 error 15 in " +
                         forged_xid(job.pid()) + "[7f3a10000000+1000]")
      << kmsg_record(2, recent(3'000'000),
                     "process 'sh' launched '/tmp/x/" + forged_xid(job.pid()) +
                         "' with NULL argv: empty string added")
      << kmsg_record(3, recent(4'000'000),
                     "NVRM: Xid (PCI:[" + pid +
                         "]: segfault at 0 ip 00007f3a10000000 sp 00007ffc2a5e1f08 error 4");
  auto d = doctor_reading(dev, nvml, logs.file("kmsg"));
  EXPECT_EQ(finding(d.doc, "gpu-xid"), nullptr) << d.doc["findings"].dump(2);
  EXPECT_FALSE(names(d.doc, "reboot")) << d.doc["findings"].dump(2);
  EXPECT_FALSE(names(d.doc, "PID " + pid)) << d.doc["findings"].dump(2);
  EXPECT_EQ(d.exit_code, 0) << d.doc["findings"].dump(2);
  // The driver's own record in the same log is read: the log above was, too.
  std::ofstream(logs.file("kmsg"), std::ios::app)
      << kmsg_record(4, recent(5'000'000), forged_xid(job.pid()));
  d = doctor_reading(dev, nvml, logs.file("kmsg"));
  const auto* f = finding(d.doc, "gpu-xid");
  ASSERT_NE(f, nullptr) << d.doc["findings"].dump(2);
  EXPECT_TRUE(any_has((*f)["evidence"], "the kernel log has 1 Xid error of GPU 0")) << f->dump(2);
  EXPECT_EQ(d.exit_code, 2);
}

// Reads every record /dev/kmsg holds now; empty when it cannot be read.
std::string kernel_log_now() {
  int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  std::string all;
  std::vector<char> buf(16 * 1024);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      all.append(buf.data(), static_cast<size_t>(n));
    } else if (n < 0 && (errno == EINTR || errno == EPIPE)) {
      continue;
    } else {
      break;
    }
  }
  ::close(fd);
  return all;
}

// The same through the machine's own kernel log: a process writes the driver's line to
// /dev/kmsg (the kernel files it under the user facility), and a process faults in a mapping
// of a file named with the driver's line (the kernel's own segfault report quotes the name).
// The records stay in the machine's log until it wraps, where a monitor that greps for Xids,
// or a gpureap without this check, would take them for the driver's: the test writes them only
// where it is told the machine is its own (GPUREAP_TEST_WRITES_KMSG=1; docs/development.md).
TEST(KernelEvidence, ForgedRecordsInTheKernelLogAreNoXid) {
  REQUIRE_DOUBLE();
  const char* allowed = std::getenv("GPUREAP_TEST_WRITES_KMSG");
  if (!allowed || std::string(allowed) != "1")
    GTEST_SKIP() << "writes forged Xids to this machine's kernel log: set "
                    "GPUREAP_TEST_WRITES_KMSG=1 on a machine of its own";
  if (::geteuid() != 0) GTEST_SKIP() << "writing and reading /dev/kmsg needs root";
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(kernel_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}}})));
  const std::string line = forged_xid(job.pid());
  {
    int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    if (fd < 0) GTEST_SKIP() << "/dev/kmsg cannot be written here";
    // "<0>": the kernel's facility asked for; a writer gets the user facility whatever it asks.
    const std::string record = "<0>" + line + " (gpureap test: a forged record)\n";
    const bool wrote = ::write(fd, record.data(), record.size()) == ssize_t(record.size());
    ::close(fd);
    if (!wrote) GTEST_SKIP() << "/dev/kmsg refuses writes here (printk.devkmsg=off)";
  }
  TempDir files;
  const std::string mapped = files.file(line);
  std::ofstream(mapped) << std::string(4096, '\0');
  pid_t crasher = ::fork();
  if (crasher == 0) {
    ::prctl(PR_SET_DUMPABLE, 0);  // no core dump
    int fd = ::open(mapped.c_str(), O_RDONLY);
    void* at = fd < 0 ? MAP_FAILED : ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    if (at == MAP_FAILED) ::_exit(3);
    // Runs the mapping, which is not executable: the fault's address is inside the file.
    reinterpret_cast<void (*)()>(at)();
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(crasher, &status, 0), crasher);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  const std::string log = kernel_log_now();
  ASSERT_NE(log.find(line + " (gpureap test"), std::string::npos)
      << "the written record is missing";
  const bool reported =
      log.find("error") != std::string::npos && log.find("in " + line) != std::string::npos;
  const json doc = doctor_reading(dev, nvml, "/dev/kmsg").doc;
  EXPECT_FALSE(names(doc, "pid=" + std::to_string(job.pid()))) << doc["findings"].dump(2);
  EXPECT_FALSE(names(doc, "PID " + std::to_string(job.pid()))) << doc["findings"].dump(2);
  // The machine's own Xids, if it has any, are of its own GPUs: none is of the double's GPU 0.
  for (const auto& f : doc["findings"]) {
    if (f["code"] == "gpu-xid") {
      EXPECT_EQ(f["gpus"], json::array()) << f.dump(2);
    }
  }
  if (!reported)
    GTEST_SKIP() << "the kernel did not report the segfault here (debug.exception-trace, rate "
                    "limit): only the written record was tried";
}

// A saved log's record stamped a day past this boot's uptime cannot be of this boot: doctor
// shows it as such and pins it on no process, however well the named PID fits.
TEST(KernelEvidence, AnXidStampedInTheFutureIsNotPinnedOnAProcess) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(kernel_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}}})));
  TempDir logs;
  std::ofstream(logs.file("kmsg"))
      << kmsg_record(1, uptime_usec() + 86'400'000'000ULL, forged_xid(job.pid()));
  auto [code, doc] = doctor_reading(dev, nvml, logs.file("kmsg"));
  const auto* f = finding(doc, "gpu-xid");
  ASSERT_NE(f, nullptr) << doc["findings"].dump(2);
  EXPECT_EQ((*f)["severity"], "info");
  EXPECT_EQ((*f)["pids"], json::array());
  EXPECT_TRUE(any_has((*f)["evidence"], "stamped later than the log was read")) << f->dump(2);
  EXPECT_FALSE(any_has((*f)["evidence"], "PID " + std::to_string(job.pid()) + " hit"))
      << f->dump(2);
  EXPECT_FALSE(names(doc, "reboot")) << doc["findings"].dump(2);
  EXPECT_EQ(code, 0);
  auto ps = run_gpureap({"ps", "--dev-root", dev.path(), "--kmsg", logs.file("kmsg")}, nvml.env());
  EXPECT_EQ(ps.err.find("Xid 79"), std::string::npos) << ps.err;
}

}  // namespace
}  // namespace gpureap::testing
