#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "backend/backend_set.h"
#include "daemon/sample_publisher.h"
#include "engine/engine.h"

namespace gpureap::daemon {
namespace {

using namespace std::chrono_literals;

// A driver whose report the test sets.
struct Script {
  std::mutex m;
  core::BackendReport report;
};

class ScriptedBackend : public backend::GpuBackend {
 public:
  explicit ScriptedBackend(std::shared_ptr<Script> s) : s_(std::move(s)) {}
  core::BackendReport collect() override {
    std::lock_guard lock(s_->m);
    return s_->report;
  }

 private:
  std::shared_ptr<Script> s_;
};

class Recorder : public sample::SampleConsumer {
 public:
  void on_sample(const sample::Sample& s, const history::History&) override {
    sequences.push_back(s.sequence);
  }
  void add_metrics(std::vector<exporter::MetricFamily>& out) const override {
    out.push_back(
        exporter::MetricFamily{"gpureap_test_consumer", "a consumer's metric"}.add({}, 7));
  }
  std::vector<uint64_t> sequences;
};

// The daemon's pipeline: the engine on the daemon's cadence (its own watchdog over the
// driver), the publisher as its consumer.
struct Daemonish {
  std::unique_ptr<engine::Engine> engine;
  std::shared_ptr<SamplePublisher> samples;

  void sample_once() { engine->collect_once(); }
  std::shared_ptr<const sample::Sample> latest() const { return samples->latest(); }
};

class DaemonSamplePublisher : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-sampler-XXXXXX";
    dev_ = ::mkdtemp(tmpl);
    // Stand-in device files: matched by device and inode, as under a test dev root.
    std::ofstream(dev_ + "/nvidia0") << "stand-in\n";
    std::ofstream(dev_ + "/nvidiactl") << "stand-in\n";
    set_listed({});
  }
  void TearDown() override { std::filesystem::remove_all(dev_); }

  void set_listed(std::vector<pid_t> pids) {
    std::lock_guard lock(script_->m);
    core::BackendReport r;
    r.available = true;
    core::Gpu g;
    g.index = 0;
    g.uuid = "GPU-test";
    g.device_major = 195;  // as NVML says when it cannot tell the minor: any /dev/nvidia<N>
    g.memory.total_bytes = 80ull << 30;
    g.memory.used_bytes = 0;
    for (pid_t p : pids) {
      core::DriverProcess d;
      d.pid = p;
      d.used_bytes = 1ull << 30;
      *g.memory.used_bytes += 1ull << 30;
      g.processes.push_back(d);
    }
    r.gpus.push_back(g);
    script_->report = r;
  }

  Daemonish make(engine::Cadence cadence = {1s, 10s, 1min, 5s, true}) {
    // The script as a registered driver backend: called behind a watchdog, as NVML is.
    auto script = script_;
    backend::Registry registry{{"nvml", "nvidia", true, [script](const backend::BackendSettings&) {
                                  return std::make_unique<ScriptedBackend>(script);
                                }}};
    auto drivers = backend::BackendSet::make(registry, {}, backend::WatchdogOptions{});
    auto collector = collect::Collector::open({"/proc", dev_}, drivers);
    EXPECT_TRUE(collector.ok());
    Daemonish d;
    d.engine = std::make_unique<engine::Engine>(std::move(*collector), cadence);
    d.samples =
        std::make_shared<SamplePublisher>(PublishSettings{}, std::make_shared<history::History>());
    d.engine->add_consumer(d.samples);
    return d;
  }

  std::string dev_;
  std::shared_ptr<Script> script_ = std::make_shared<Script>();
};

TEST_F(DaemonSamplePublisher, PublishesSnapshotFindingsAndMetrics) {
  auto sampler = make();
  EXPECT_EQ(sampler.latest(), nullptr);
  sampler.sample_once();
  auto s = sampler.latest();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->sequence, 1u);
  EXPECT_TRUE(s->holder_scan);
  EXPECT_EQ(s->previous, nullptr);
  EXPECT_TRUE(s->snapshot->drivers.any_available());
  EXPECT_NE(s->snapshot->find(::getpid()), nullptr);  // /proc was scanned
  EXPECT_NE(s->metrics_text.find("\ngpureap_up 1\n"), std::string::npos) << s->metrics_text;
  EXPECT_NE(s->metrics_text.find("gpureap_gpu_memory_total_bytes{gpu=\"0\",uuid=\"GPU-test\","
                                 "pci_bus_id=\"\",vendor=\"\"} 85899345920\n"),
            std::string::npos)
      << s->metrics_text;
  EXPECT_NE(s->metrics_text.find("gpureap_collect_duration_seconds{collector=\"holder_scan\"}"),
            std::string::npos);
  sampler.sample_once();
  EXPECT_EQ(sampler.latest()->previous, s->snapshot);
}

TEST_F(DaemonSamplePublisher, ScansProcAgainOnlyWhenDueOrWhenTheDriversViewMoves) {
  auto sampler = make({1s, 1h, 1h, 5s});
  sampler.sample_once();
  sampler.sample_once();
  EXPECT_FALSE(sampler.latest()->holder_scan);  // nothing moved, next scan in an hour
  // A PID appears: this process, which holds the GPU's file as a listed process does.
  const int held = ::open((dev_ + "/nvidia0").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  set_listed({::getpid()});
  sampler.sample_once();
  EXPECT_TRUE(sampler.latest()->holder_scan);
  const auto* row = sampler.latest()->snapshot->row(::getpid());
  ASSERT_NE(row, nullptr);
  ASSERT_TRUE(row->process && row->process->details);  // details read for the listed PID
  sampler.sample_once();
  EXPECT_FALSE(sampler.latest()->holder_scan);
  set_listed({});  // and goes
  sampler.sample_once();
  EXPECT_TRUE(sampler.latest()->holder_scan);
  ::close(held);
}

// A child that opens the stand-in GPU file when told to (a byte on a pipe), then says so.
struct LateHolder {
  pid_t pid = -1;
  int go[2], done[2];
  explicit LateHolder(const std::string& file) {
    if (::pipe(go) != 0 || ::pipe(done) != 0) throw std::runtime_error("pipe");
    pid = ::fork();
    if (pid == 0) {
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(1);
      if (::open(file.c_str(), O_RDONLY) < 0) ::_exit(2);
      if (::write(done[1], "x", 1) != 1) ::_exit(3);
      for (;;) ::pause();
    }
  }
  void open_now() {
    char c = 'x';
    ASSERT_EQ(::write(go[1], &c, 1), 1);
    ASSERT_EQ(::read(done[0], &c, 1), 1);
  }
  ~LateHolder() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    for (int fd : {go[0], go[1], done[0], done[1]}) ::close(fd);
  }
};

bool holds(const sample::Sample& s, pid_t pid) {
  const auto* p = s.snapshot->find(pid);
  return p && p->holds_device();
}

TEST_F(DaemonSamplePublisher, RescansReadNewProcessesAndFullScansEveryone) {
  // Every sample rescans; a full scan every 2 s (the first, and the last one here).
  auto sampler = make({1s, 100ms, 2s, 5s});
  LateHolder old_process(dev_ + "/nvidia0");
  sampler.sample_once();
  const auto first = std::chrono::steady_clock::now();
  EXPECT_TRUE(sampler.latest()->full_scan);
  EXPECT_FALSE(holds(*sampler.latest(), old_process.pid));

  old_process.open_now();                     // a long-lived process opens the file late
  LateHolder new_process(dev_ + "/nvidia0");  // a new process holds it
  new_process.open_now();
  std::this_thread::sleep_for(150ms);  // the holder scan is due
  sampler.sample_once();
  ASSERT_TRUE(sampler.latest()->holder_scan);
  if (std::chrono::steady_clock::now() - first < 2s) {  // else a loaded machine made it full
    EXPECT_FALSE(sampler.latest()->full_scan);
    EXPECT_TRUE(holds(*sampler.latest(), new_process.pid));
    EXPECT_FALSE(holds(*sampler.latest(), old_process.pid));  // its fd table was not read again
  }

  std::this_thread::sleep_until(first + 2100ms);  // the full scan is due
  sampler.sample_once();
  EXPECT_TRUE(sampler.latest()->full_scan);
  EXPECT_TRUE(holds(*sampler.latest(), old_process.pid));
  EXPECT_TRUE(holds(*sampler.latest(), new_process.pid));
}

TEST_F(DaemonSamplePublisher, ConsumersSeeEverySampleAndAddMetrics) {
  auto sampler = make();
  auto recorder = std::make_shared<Recorder>();
  sampler.samples->add_consumer(recorder);
  sampler.sample_once();
  sampler.sample_once();
  EXPECT_EQ(recorder->sequences, (std::vector<uint64_t>{1, 2}));
  EXPECT_NE(sampler.latest()->metrics_text.find("\ngpureap_test_consumer 7\n"), std::string::npos);
}

// Whether `d` publishes its `n`th sample within a minute (a loaded machine samples late).
bool publishes(const Daemonish& d, uint64_t n) {
  const auto until = std::chrono::steady_clock::now() + 60s;
  while ((!d.latest() || d.latest()->sequence < n) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  return d.latest() && d.latest()->sequence >= n;
}

TEST_F(DaemonSamplePublisher, TheEngineLoopPublishesUntilStopped) {
  auto sampler = make({100ms, 1s, 1s, 1s});
  const auto before = std::chrono::steady_clock::now();
  sampler.engine->start();
  EXPECT_TRUE(publishes(sampler, 3));
  sampler.engine->stop();
  ASSERT_NE(sampler.latest(), nullptr);
  auto n = sampler.latest()->sequence;
  EXPECT_GE(n, 3u);
  EXPECT_GT(sampler.samples->last_progress(), before);
  // Stopped means stopped: while a running one on the same cadence publishes three samples,
  // the stopped one publishes none.
  auto witness = make({100ms, 1s, 1s, 1s});
  witness.engine->start();
  EXPECT_TRUE(publishes(witness, 3));
  witness.engine->stop();
  EXPECT_EQ(sampler.latest()->sequence, n);
  EXPECT_EQ(sampler.samples->history().query({0, {}}).gpus.size(), 1u);
}

}  // namespace
}  // namespace gpureap::daemon
