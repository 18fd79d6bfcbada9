// Several backends read together: each keeps its own availability, GPUs are numbered across
// them, and a backend that stops answering keeps its place in the numbering.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "backend/backend_set.h"

namespace gpureap::backend {
namespace {

struct Scripted {
  std::mutex m;
  core::BackendReport report;
};

class ScriptedBackend : public GpuBackend {
 public:
  explicit ScriptedBackend(std::shared_ptr<Scripted> s) : s_(std::move(s)) {}
  core::BackendReport collect() override {
    std::lock_guard lock(s_->m);
    return s_->report;
  }

 private:
  std::shared_ptr<Scripted> s_;
};

std::shared_ptr<Scripted> scripted(const std::string& name, unsigned gpus) {
  auto s = std::make_shared<Scripted>();
  s->report.name = name;
  s->report.vendor = name;
  s->report.available = true;
  for (unsigned i = 0; i < gpus; ++i) {
    core::Gpu g;
    g.index = i;
    g.uuid = name + "-" + std::to_string(i);
    s->report.gpus.push_back(g);
  }
  return s;
}

void go_down(Scripted& s) {
  std::lock_guard lock(s.m);
  s.report.available = false;
  s.report.error = "the driver did not answer";
  s.report.gpus.clear();
}

std::vector<std::string> keys_by_index(const core::DriverReading& r) {
  std::vector<std::string> out;
  for (const auto& g : r.gpus) out.push_back(std::to_string(g.index) + "=" + g.key);
  return out;
}

TEST(BackendSet, NumbersGpusAcrossBackendsInOrder) {
  auto a = scripted("alpha", 2), b = scripted("beta", 1);
  BackendSet set({std::make_shared<ScriptedBackend>(a), std::make_shared<ScriptedBackend>(b)});
  auto r = set.read();
  EXPECT_EQ(keys_by_index(r),
            (std::vector<std::string>{"0=alpha:alpha-0", "1=alpha:alpha-1", "2=beta:beta-0"}));
  ASSERT_EQ(r.backends.size(), 2u);
  EXPECT_EQ(r.gpus[2].backend, "beta");
  EXPECT_EQ(r.gpus[2].backend_index, 0u);
}

TEST(BackendSet, ABackendThatGoesDownKeepsItsPlaceInTheNumbering) {
  auto a = scripted("alpha", 2), b = scripted("beta", 1);
  BackendSet set({std::make_shared<ScriptedBackend>(a), std::make_shared<ScriptedBackend>(b)});
  set.read();
  go_down(*a);
  auto r = set.read();
  EXPECT_FALSE(r.backends[0].available);
  EXPECT_TRUE(r.backends[1].available);
  // beta's GPU is still GPU 2: policies, alerts and metrics that name it keep meaning it.
  EXPECT_EQ(keys_by_index(r), (std::vector<std::string>{"2=beta:beta-0"}));
}

TEST(BackendSet, ABackendNeverSeenTakesNoPlace) {
  auto a = scripted("alpha", 2), b = scripted("beta", 1);
  go_down(*a);
  BackendSet set({std::make_shared<ScriptedBackend>(a), std::make_shared<ScriptedBackend>(b)});
  EXPECT_EQ(keys_by_index(set.read()), (std::vector<std::string>{"0=beta:beta-0"}));
}

TEST(BackendSet, WithNoBackendOneStatusSaysSo) {
  BackendSet set;
  auto r = set.read();
  ASSERT_EQ(r.backends.size(), 1u);
  EXPECT_FALSE(r.backends[0].available);
  EXPECT_EQ(r.backends[0].error_code, core::BackendErrorCode::NotConfigured);
  EXPECT_TRUE(r.gpus.empty());
}

}  // namespace
}  // namespace gpureap::backend
