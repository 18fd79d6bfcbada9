// NVML's loader out of file descriptors (`ulimit -n 6`): the loader says "cannot open shared
// object file" alike for a library that is missing and one it had no descriptor to open, so
// gpureap must tell them apart by the error of the loader's open(), never advise installing the
// driver or checking the path, and give the remedy for the limit. The NVML test double stands in
// for the library.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "backend/nvml/library.h"
#include "backend/nvml/nvml_backend.h"
#include "core/gpu.h"
#include "fake_nvml_fixture.h"
#include "no_free_fd.h"
#include "skip_sanitized.h"

namespace gpureap::backend::nvml {
namespace library_shortage_test {

using gpureap::testing::fake_nvml_library;
using gpureap::testing::with_no_free_fd;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// "EMFILE\n<message: hint>", "loaded", or "<errno>\n<message: hint>".
std::string open_answer(const std::optional<std::string>& path) {
  auto library = Library::open(path);
  if (library) return "loaded";
  const auto& e = library.error();
  return (e.code == EMFILE ? std::string("EMFILE") : std::to_string(e.code)) + "\n" + e.text();
}

void expect_told_as_shortage(const std::string& answer) {
  EXPECT_EQ(answer.rfind("EMFILE\n", 0), 0u) << answer;
  EXPECT_TRUE(has(answer, "could not be loaded")) << answer;
  EXPECT_TRUE(has(answer, "Too many open files")) << answer;
  EXPECT_TRUE(has(answer, "ulimit -n")) << answer;
  EXPECT_TRUE(has(answer, "LimitNOFILE=")) << answer;
  EXPECT_FALSE(has(answer, "install the NVIDIA driver")) << answer;
  EXPECT_FALSE(has(answer, "check the path")) << answer;
}

TEST(NvmlLibraryShortage, ANamedLibraryOutOfDescriptorsSaysSoNotCheckThePath) {
  SKIP_UNDER_SANITIZERS();
  const std::string path = fake_nvml_library();
  // With descriptors to spare the double loads: what fails below is the shortage alone.
  EXPECT_EQ(open_answer(path), "loaded");
  expect_told_as_shortage(with_no_free_fd([] {}, [&] { return open_answer(path); }));
}

TEST(NvmlLibraryShortage, TheLoadersSearchOutOfDescriptorsSaysSoNotInstallTheDriver) {
  SKIP_UNDER_SANITIZERS();
  expect_told_as_shortage(with_no_free_fd([] {}, [] { return open_answer(std::nullopt); }));
}

// The backend's report: not library-not-found (which `run` words as "no GPU driver is
// installed"), nor no-device for want of the descriptors that would read the device nodes.
TEST(NvmlLibraryShortage, TheBackendReportsOutOfResources) {
  SKIP_UNDER_SANITIZERS();
  char dir[] = "/tmp/gpureap-nvml-short-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);  // a dev root without NVIDIA nodes
  NvmlOptions options;
  options.library_path = fake_nvml_library();
  options.dev_root = dir;
  auto answer = with_no_free_fd(
      [] {},
      [&] {
        auto report = make_nvml_backend(options)->collect();
        if (report.available) return std::string("available");
        return std::string(report.error_code ? core::to_string(*report.error_code) : "none") +
               "\n" + report.error.value_or("");
      });
  ::rmdir(dir);
  EXPECT_EQ(answer.rfind("out-of-resources\n", 0), 0u) << answer;
  EXPECT_TRUE(has(answer, "ulimit -n")) << answer;
  EXPECT_FALSE(has(answer, "no NVIDIA GPU")) << answer;
}

// The library loaded (a daemon keeps it loaded across failed inits; a process may have loaded it
// before), then its init had no descriptor for the driver's control device: the double returns
// what NVML does, DRIVER_NOT_LOADED, and the backend says what really failed and what to do, not
// "load the driver", nor "no NVIDIA GPU" for a dev root it could not have read.
class NvmlInitShortage : public gpureap::testing::FakeNvmlFixture {};

TEST_F(NvmlInitShortage, AnInitWithoutADescriptorSaysSoNotLoadTheDriver) {
  SKIP_UNDER_SANITIZERS();
  write_scenario({{"gpus", nlohmann::json::array({{{"name", "NVIDIA H200"}}})}});
  char dir[] = "/tmp/gpureap-nvml-init-short-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);  // a dev root without NVIDIA nodes
  NvmlOptions options;
  options.library_path = fake_nvml_library();
  options.dev_root = dir;
  auto collect = [&] {
    auto report = make_nvml_backend(options)->collect();
    if (report.available) return std::string("available");
    return std::string(report.error_code ? core::to_string(*report.error_code) : "none") + "\n" +
           (report.shortage ? core::to_string(*report.shortage) : "-") + "\n" +
           report.error.value_or("");
  };
  // With descriptors to spare it answers: what fails below is the shortage alone.
  EXPECT_EQ(collect(), "available");
  const std::string path = options.library_path.value();
  auto answer = with_no_free_fd(
      [&] {
        if (::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) ::_exit(4);
      },
      collect);
  ::rmdir(dir);
  EXPECT_EQ(answer.rfind("out-of-resources\nown-descriptors\n", 0), 0u) << answer;
  EXPECT_TRUE(has(answer, "library could not initialise")) << answer;
  EXPECT_TRUE(has(answer, "file descriptors open")) << answer;
  EXPECT_TRUE(has(answer, "returned NVML_ERROR_DRIVER_NOT_LOADED")) << answer;
  EXPECT_TRUE(has(answer, "ulimit -n")) << answer;
  EXPECT_TRUE(has(answer, "LimitNOFILE=")) << answer;
  EXPECT_FALSE(has(answer, "is not loaded")) << answer;
  EXPECT_FALSE(has(answer, "modprobe")) << answer;
  EXPECT_FALSE(has(answer, "no NVIDIA GPU")) << answer;
}

// The loader leaves errno as it found it, and the scan's threads may close a descriptor before
// gpureap asks for one: its message's tail is what says why its open() failed, whatever the
// name before it.
TEST(NvmlLibraryShortage, TheLoadersMessageTellsAShortageFromAMissingFile) {
  const std::string emfile = std::strerror(EMFILE);
  const std::string enfile = std::strerror(ENFILE);
  const std::string enoent = std::strerror(ENOENT);
  EXPECT_EQ(
      loader_descriptor_shortage("/x/libnvidia-ml.so.1: cannot open shared object file: " + emfile),
      EMFILE);
  EXPECT_EQ(
      loader_descriptor_shortage("libnvidia-ml.so.1: cannot open shared object file: " + enfile),
      ENFILE);
  // A dependency the library needs, out of descriptors: still no descriptor.
  EXPECT_EQ(loader_descriptor_shortage("libm.so.6: cannot open shared object file: " + emfile),
            EMFILE);
  // A name that reads as a shortage does not make a missing file one.
  EXPECT_EQ(
      loader_descriptor_shortage("/tmp/: " + emfile +
                                 "/libnvidia-ml.so.1: cannot open shared object file: " + enoent),
      0);
  EXPECT_EQ(loader_descriptor_shortage("/x/libnvidia-ml.so.1: invalid ELF header"), 0);
  EXPECT_EQ(loader_descriptor_shortage(""), 0);
}

}  // namespace library_shortage_test
}  // namespace gpureap::backend::nvml
