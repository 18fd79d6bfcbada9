// DeviceCatalog (src/procfs/device_files.cpp) over a temporary dev root of regular stand-in
// files, plus decoys that must not match.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "procfs/device_files.h"

namespace {

namespace fs = std::filesystem;
using gpureap::procfs::DeviceCatalog;
using gpureap::procfs::GpuDeviceFile;

// The device nodes of the built-in backends, as the collector gets them from the registry.
const gpureap::procfs::DeviceNodes& builtin_nodes() {
  static const auto nodes = gpureap::backend::device_nodes(gpureap::backend::builtin_backends());
  return nodes;
}

std::string proc_root(const std::string& name) {
  return std::string(GPUREAP_FIXTURES) + "/proc/" + name;
}

// A fresh directory under the temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gpureap-dev-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "stand-in\n";
}

// nvidia0, nvidia1, nvidiactl, nvidia-uvm, dri/renderD128 and the decoys.
void make_dev_root(const TempDir& dev) {
  for (const char* f : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "dri/renderD128"})
    touch(dev / f);
  // Decoys: near-miss names, a directory with a GPU name, and GPU names on a char device of
  // another driver (/dev/null, major 1).
  touch(dev / "nvidia-foo");
  touch(dev / "nvidiaX");
  touch(dev / "nvidia");
  touch(dev / "dri/renderDX");
  fs::create_directories(dev / "nvidia2");
  fs::create_symlink("/dev/null", dev / "nvidia7");
  fs::create_symlink("/dev/null", dev / "dri/renderD129");
}

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

struct stat char_device(unsigned major, unsigned minor) {
  struct stat st {};
  st.st_mode = S_IFCHR | 0666;
  st.st_rdev = makedev(major, minor);
  return st;
}

std::string describe(const std::optional<GpuDeviceFile>& f) {
  if (!f) return "none";
  std::string s = f->path + " " + f->kind;
  if (f->minor) s += " minor=" + std::to_string(*f->minor);
  s += f->is_char_device ? " chr" : " file";
  return s;
}

DeviceCatalog enumerate(const TempDir& dev, const std::string& proc = "host") {
  auto cat = DeviceCatalog::enumerate(builtin_nodes(), dev.path(), proc_root(proc));
  EXPECT_TRUE(cat.ok()) << cat.error().text();
  return std::move(*cat);
}

TEST(DeviceCatalogEnumerate, FindsTheStandInsAndNoDecoys) {
  TempDir dev;
  make_dev_root(dev);
  auto cat = enumerate(dev);
  std::vector<std::string> got;
  for (const auto& f : cat.files()) got.push_back(describe(f));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{
                     dev / "dri/renderD128 drm-render minor=128 file",
                     dev / "nvidia-uvm nvidia-uvm file",
                     dev / "nvidia0 nvidia minor=0 file",
                     dev / "nvidia1 nvidia minor=1 file",
                     dev / "nvidiactl nvidiactl file",
                 }));
}

TEST(DeviceCatalogEnumerate, RecordsDeviceAndInodeOfRegularFiles) {
  TempDir dev;
  make_dev_root(dev);
  auto cat = enumerate(dev);
  auto want = stat_of(dev / "nvidia1");
  auto it = std::find_if(cat.files().begin(), cat.files().end(),
                         [&](const GpuDeviceFile& f) { return f.path == dev / "nvidia1"; });
  ASSERT_NE(it, cat.files().end());
  EXPECT_EQ(it->dev, want.st_dev);
  EXPECT_EQ(it->ino, want.st_ino);
  EXPECT_FALSE(it->is_char_device);
  EXPECT_EQ(it->rdev, 0u);
}

TEST(DeviceCatalogEnumerate, EmptyDevRootIsAnEmptyCatalogue) {
  TempDir dev;
  auto cat = DeviceCatalog::enumerate(builtin_nodes(), dev.path(), proc_root("host"));
  ASSERT_TRUE(cat.ok()) << cat.error().text();
  EXPECT_TRUE(cat->files().empty());
}

TEST(DeviceCatalogEnumerate, MissingDevRootIsAnErrorNamingThePath) {
  TempDir dev;
  const std::string missing = dev / "no-such-dev";
  auto cat = DeviceCatalog::enumerate(builtin_nodes(), missing, proc_root("host"));
  ASSERT_FALSE(cat.ok());
  EXPECT_NE(cat.error().message.find(missing), std::string::npos) << cat.error().message;
  EXPECT_FALSE(cat.error().hint.empty());
}

TEST(DeviceCatalogEnumerate, DevRootThatIsAFileIsAnError) {
  TempDir dev;
  touch(dev / "file");
  auto cat = DeviceCatalog::enumerate(builtin_nodes(), dev / "file", proc_root("host"));
  ASSERT_FALSE(cat.ok());
  EXPECT_NE(cat.error().message.find(dev / "file"), std::string::npos);
}

TEST(DeviceCatalogEnumerate, MissingProcRootIsNotAnError) {
  TempDir dev;
  make_dev_root(dev);
  auto cat = DeviceCatalog::enumerate(builtin_nodes(), dev.path(), dev / "no-such-proc");
  ASSERT_TRUE(cat.ok()) << cat.error().text();
  EXPECT_EQ(cat->files().size(), 5u);
}

TEST(DeviceCatalogMayMatch, LinkTexts) {
  TempDir dev;
  auto cat = enumerate(dev);
  EXPECT_TRUE(cat.may_match("/dev/nvidia0"));
  EXPECT_TRUE(cat.may_match("/dev/nvidia0 (deleted)"));
  EXPECT_TRUE(cat.may_match("/dev/nvidiactl"));
  EXPECT_TRUE(cat.may_match("/dev/nvidia-uvm"));
  EXPECT_TRUE(cat.may_match("/dev/dri/renderD128"));
  EXPECT_TRUE(cat.may_match("/dev/dri/card0"));
  EXPECT_TRUE(cat.may_match(dev / "nvidia1"));  // a stand-in under a temporary root

  EXPECT_FALSE(cat.may_match("socket:[123]"));
  EXPECT_FALSE(cat.may_match("pipe:[4567]"));
  EXPECT_FALSE(cat.may_match("anon_inode:[eventfd]"));
  EXPECT_FALSE(cat.may_match("anon_inode:nvidia"));
  EXPECT_FALSE(cat.may_match("/dev/null"));
  EXPECT_FALSE(cat.may_match("/dev/pts/3"));
  EXPECT_FALSE(cat.may_match("/home/alice/nvidia/train.log"));  // only the basename counts
  EXPECT_FALSE(cat.may_match("/"));
  EXPECT_FALSE(cat.may_match(""));
  EXPECT_FALSE(cat.may_match("nvidia0"));  // not an absolute path
}

TEST(DeviceCatalogMatch, RegularStandInsByDeviceAndInode) {
  TempDir dev;
  make_dev_root(dev);
  auto cat = enumerate(dev);
  EXPECT_EQ(describe(cat.match(stat_of(dev / "nvidia0"))), dev / "nvidia0 nvidia minor=0 file");
  EXPECT_EQ(describe(cat.match(stat_of(dev / "nvidia1"))), dev / "nvidia1 nvidia minor=1 file");
  EXPECT_EQ(describe(cat.match(stat_of(dev / "nvidiactl"))), dev / "nvidiactl nvidiactl file");
  EXPECT_EQ(describe(cat.match(stat_of(dev / "nvidia-uvm"))), dev / "nvidia-uvm nvidia-uvm file");
  EXPECT_EQ(describe(cat.match(stat_of(dev / "dri/renderD128"))),
            dev / "dri/renderD128 drm-render minor=128 file");
}

TEST(DeviceCatalogMatch, DecoysDoNotMatch) {
  TempDir dev;
  make_dev_root(dev);
  auto cat = enumerate(dev);
  for (const char* decoy : {"nvidia-foo", "nvidiaX", "nvidia", "nvidia2", "dri/renderDX"})
    EXPECT_EQ(describe(cat.match(stat_of(dev / decoy))), "none") << decoy;
  // A file created after enumeration, even with a GPU name, is not in the catalogue.
  touch(dev / "nvidia3");
  EXPECT_EQ(describe(cat.match(stat_of(dev / "nvidia3"))), "none");
}

TEST(DeviceCatalogMatch, CharDeviceOfAnotherDriverDoesNotMatch) {
  TempDir dev;
  make_dev_root(dev);
  auto cat = enumerate(dev);
  EXPECT_EQ(describe(cat.match(stat_of(dev / "nvidia7"))), "none");  // -> /dev/null, major 1
  EXPECT_EQ(describe(cat.match(char_device(1, 3))), "none");
  EXPECT_EQ(describe(cat.match(char_device(196, 0))), "none");
}

TEST(DeviceCatalogMatch, StandInRootNeverNamesTheMachinesRealDevices) {
  // A dev root of regular stand-ins has no char nodes of any driver, so a real GPU char
  // device (an fd of some other process) is not attributed to it.
  TempDir dev;
  make_dev_root(dev);
  auto cat = enumerate(dev);
  EXPECT_EQ(describe(cat.match(char_device(195, 0))), "none");
  EXPECT_EQ(describe(cat.match(char_device(195, 255))), "none");
  EXPECT_EQ(describe(cat.match(char_device(508, 0))), "none");
  EXPECT_EQ(describe(cat.match(char_device(226, 128))), "none");
}

// Char device nodes need CAP_MKNOD; they are only stat'ed, never opened.
bool make_node(const std::string& path, unsigned major, unsigned minor) {
  fs::create_directories(fs::path(path).parent_path());
  return ::mknod(path.c_str(), S_IFCHR | 0600, makedev(major, minor)) == 0;
}

class CharDevRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    // host fixture: /proc/devices lists nvidia-uvm as major 508.
    if (!make_node(dev / "nvidia0", 195, 0) || !make_node(dev / "nvidiactl", 195, 255) ||
        !make_node(dev / "nvidia-uvm", 508, 0) || !make_node(dev / "dri/renderD128", 226, 128) ||
        !make_node(dev / "nvidia-caps/nvidia-cap12", 234, 12))
      GTEST_SKIP() << "cannot mknod (no CAP_MKNOD)";
    // Decoys: GPU names on another driver's numbers.
    ASSERT_TRUE(make_node(dev / "nvidia5", 1, 3));
    ASSERT_TRUE(make_node(dev / "nvidia-uvm-tools", 509, 1));
    ASSERT_TRUE(make_node(dev / "dri/card0", 29, 0));
  }
  TempDir dev;
};

TEST_F(CharDevRoot, EnumeratesByDeviceNumberAndRejectsOtherDrivers) {
  auto cat = enumerate(dev);
  std::vector<std::string> got;
  for (const auto& f : cat.files()) got.push_back(describe(f));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{
                     dev / "dri/renderD128 drm-render minor=128 chr",
                     dev / "nvidia-caps/nvidia-cap12 nvidia-cap minor=12 chr",
                     dev / "nvidia-uvm nvidia-uvm chr",
                     dev / "nvidia0 nvidia minor=0 chr",
                     dev / "nvidiactl nvidiactl chr",
                 }));
}

TEST_F(CharDevRoot, MatchesEnumeratedNodesByRdev) {
  auto cat = enumerate(dev);
  EXPECT_EQ(describe(cat.match(char_device(195, 0))), dev / "nvidia0 nvidia minor=0 chr");
  EXPECT_EQ(describe(cat.match(char_device(195, 255))), dev / "nvidiactl nvidiactl chr");
  EXPECT_EQ(describe(cat.match(char_device(508, 0))), dev / "nvidia-uvm nvidia-uvm chr");
  // A MIG capability file: its major is the "nvidia-caps" line of /proc/devices.
  EXPECT_EQ(describe(cat.match(char_device(234, 12))),
            dev / "nvidia-caps/nvidia-cap12 nvidia-cap minor=12 chr");
  EXPECT_EQ(describe(cat.match(char_device(226, 128))),
            dev / "dri/renderD128 drm-render minor=128 chr");
  EXPECT_EQ(describe(cat.match(stat_of(dev / "nvidia0"))), dev / "nvidia0 nvidia minor=0 chr");
}

TEST_F(CharDevRoot, NodesMissingFromTheDevRootAreNamedByNumber) {
  auto cat = enumerate(dev);
  const std::string d = dev.path();
  EXPECT_EQ(describe(cat.match(char_device(195, 3))), d + "/nvidia3 nvidia minor=3 chr");
  EXPECT_EQ(describe(cat.match(char_device(195, 254))), d + "/nvidia-modeset nvidia-modeset chr");
  EXPECT_EQ(describe(cat.match(char_device(508, 1))), d + "/nvidia-uvm-tools nvidia-uvm-tools chr");
  EXPECT_EQ(describe(cat.match(char_device(226, 129))),
            d + "/dri/renderD129 drm-render minor=129 chr");
  EXPECT_EQ(describe(cat.match(char_device(226, 1))), d + "/dri/card1 drm-card minor=1 chr");
  auto f = cat.match(char_device(195, 3));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rdev, makedev(195, 3));
  // Other drivers' numbers stay unmatched.
  EXPECT_EQ(describe(cat.match(char_device(1, 3))), "none");
  EXPECT_EQ(describe(cat.match(char_device(509, 1))), "none");
  EXPECT_EQ(describe(cat.match(char_device(29, 0))), "none");
}

TEST_F(CharDevRoot, UvmMajorComesFromProcDevices) {
  // child-pidns has no devices file: the uvm major is unknown, so the 508 node is nobody's.
  auto cat = enumerate(dev, "child-pidns");
  EXPECT_EQ(cat.files().size(), 3u);
  EXPECT_EQ(describe(cat.match(char_device(508, 0))), "none");
  EXPECT_EQ(describe(cat.match(char_device(195, 0))), dev / "nvidia0 nvidia minor=0 chr");
}

TEST(DeviceKindNames, AllKinds) {
  std::vector<std::string> kinds;
  for (const auto& n : builtin_nodes()) kinds.push_back(n.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                             "nvidia-modeset", "nvidia", "nvidia-cap", "drm-render",
                                             "drm-card", "kfd"}));
}

}  // namespace
