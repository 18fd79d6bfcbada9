// The file a daemon hands its sightings to its next run in (daemon/sightings_file.h): written
// whole and for its user alone, and taken on only where it is this user's, of this boot and PID
// namespace, and recent; anything else is refused with the reason.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "audit_test_support.h"
#include "daemon/sightings_file.h"
#include "engine/listed_since.h"
#include "output/sightings_wire.h"

namespace gpureap::daemon {
namespace {

using audit::test::TempDir;

namespace sightings_file_test {

procfs::ProcFs host_proc() {
  auto proc = procfs::ProcFs::open("/proc");
  if (!proc) throw std::runtime_error(proc.error().text());
  return std::move(*proc);
}

// What this kernel's daemon would carry at `saved_at_ticks`.
core::CarriedSightings carried_at(const procfs::ProcFs& proc, uint64_t saved_at_ticks) {
  core::CarriedSightings c;
  c.pid_namespace = proc.pid_namespace();
  c.saved_at_ticks = saved_at_ticks;
  c.listings.push_back({4242, 100, 90, {"nvidia:GPU-0"}});
  c.last_read = {{"nvidia:GPU-0", saved_at_ticks}};
  c.ends[4242].push_back(core::ProcessEnd{90, 95, true, 9});
  c.forks[4300] = {4242, 92};
  return c;
}

SightingsFile file_at(const std::string& path) {
  auto f = SightingsFile::open(path);
  if (!f) throw std::runtime_error(f.error().text());
  return std::move(*f);
}

core::Result<std::optional<core::CarriedSightings>> load_sightings(const std::string& path,
                                                                   const procfs::ProcFs& proc,
                                                                   uint64_t now) {
  auto f = SightingsFile::open(path);
  if (!f) return f.error();
  return f->load(proc, now);
}

// Through the keeper, as the daemon writes it.
void keep(const std::string& path, const core::CarriedSightings& c, const std::string& boot_id) {
  SightingsKeeper keeper(file_at(path), boot_id);
  engine::Collection collection;
  collection.carried = std::make_shared<const core::CarriedSightings>(c);
  keeper.on_collection(collection);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string refusal(const core::Result<std::optional<core::CarriedSightings>>& r) {
  return r ? "(taken)" : r.error().text();
}

}  // namespace sightings_file_test

using namespace sightings_file_test;

// A directory of its own, this kernel's /proc, its boot and now.
class SightingsFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(boot_id) << "no sys/kernel/random/boot_id"; }
  TempDir dir;
  const procfs::ProcFs proc = host_proc();
  const std::optional<std::string> boot_id = proc.boot_id();
  const uint64_t now = engine::boot_ticks_now();
};

TEST(SightingsFile, LiesBesideTheLocalSocket) {
  EXPECT_EQ(sightings_file_for("/run/gpureap/gpureap.sock"), "/run/gpureap/sightings.json");
  EXPECT_EQ(sightings_file_for("gpureap.sock"), "sightings.json");
  EXPECT_EQ(sightings_file_for(""), "");
}

TEST_F(SightingsFileTest, WhatTheKeeperWritesTheNextRunTakesOn) {
  const auto c = carried_at(proc, now);
  const std::string path = dir.file("sightings.json");
  keep(path, c, *boot_id);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_NE(::access((path + ".new").c_str(), F_OK), 0) << "the temporary file is left";

  auto taken = load_sightings(path, proc, now);
  ASSERT_TRUE(taken) << taken.error().text();
  ASSERT_TRUE(*taken);
  auto expected = c;
  expected.boot_id = *boot_id;
  EXPECT_EQ(**taken, expected);
  // None: nothing to take on, and no error.
  auto none = load_sightings(dir.file("absent.json"), proc, now);
  ASSERT_TRUE(none) << none.error().text();
  EXPECT_FALSE(*none);
}

TEST_F(SightingsFileTest, AnotherBootNamespaceOrAnOldFileIsNotTakenOn) {
  const uint64_t hz = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  const std::string path = dir.file("sightings.json");

  keep(path, carried_at(proc, now), "00000000-0000-0000-0000-000000000000");
  EXPECT_NE(refusal(load_sightings(path, proc, now)).find("another boot"), std::string::npos);

  auto other_namespace = carried_at(proc, now);
  other_namespace.pid_namespace = other_namespace.pid_namespace.value_or(0) + 1;
  keep(path, other_namespace, *boot_id);
  EXPECT_NE(refusal(load_sightings(path, proc, now)).find("another PID namespace"),
            std::string::npos);

  // As if it were read 10 minutes and 5 seconds later, or 9 minutes later: this boot's
  // clock, however long ago the machine booted.
  keep(path, carried_at(proc, now), *boot_id);
  const std::string old = refusal(load_sightings(path, proc, now + (10 * 60 + 5) * hz));
  EXPECT_NE(old.find("saved 605 s ago"), std::string::npos) << old;
  EXPECT_TRUE(load_sightings(path, proc, now + 9 * 60 * hz));

  keep(path, carried_at(proc, now + 10 * hz), *boot_id);
  EXPECT_NE(refusal(load_sightings(path, proc, now)).find("after now"), std::string::npos);
}

TEST_F(SightingsFileTest, AFileAnotherUserCouldHaveWrittenIsRefused) {
  const std::string path = dir.file("sightings.json");
  keep(path, carried_at(proc, now), *boot_id);

  ASSERT_EQ(::chmod(path.c_str(), 0622), 0);
  const std::string writable = refusal(load_sightings(path, proc, now));
  EXPECT_NE(writable.find("another user may have written it"), std::string::npos) << writable;
  EXPECT_NE(writable.find("mode 0622"), std::string::npos) << writable;

  // A link is not followed, wherever it points.
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  const std::string link = dir.file("link.json");
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  EXPECT_FALSE(load_sightings(link, proc, now));
  // Nor is a directory, or a FIFO planted there read (nor waited on).
  EXPECT_FALSE(load_sightings(dir.path(), proc, now));
  const std::string fifo = dir.file("fifo.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(refusal(load_sightings(fifo, proc, now)).find("not a regular file"), std::string::npos);
}

// A user who may rename files in the directory could put back an older file of the daemon's
// own (a genuine one, recent enough): such a directory is not used at all.
TEST(SightingsFile, ADirectoryOthersMayWriteIsNotUsed) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);
  auto f = SightingsFile::open(dir.file("sightings.json"));
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find(dir.path() + " may be written by another user"),
            std::string::npos)
      << f.error().text();
  EXPECT_NE(f.error().message.find("mode 1777"), std::string::npos) << f.error().text();
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  EXPECT_TRUE(SightingsFile::open(dir.file("sightings.json")));
}

// The directory is reached from / one name at a time: a symbolic link on the way (which its
// owner may point anywhere, at another old file of the daemon's), a directory above that another
// user may rename things in, or a parent (..) are refused; a sticky one above (/tmp) is fine, and
// a missing last directory is made for the daemon alone.
TEST(SightingsFile, ItsDirectoryIsReachedThroughNoLinkAndNoDirectoryOthersMayWrite) {
  TempDir dir;
  const std::string real = dir.file("real"), link = dir.file("link");
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  for (const std::string& through : {link + "/sightings.json", link + "/sub/sightings.json"}) {
    auto f = SightingsFile::open(through);
    ASSERT_FALSE(f) << through;
    EXPECT_NE(f.error().message.find(link + " is a symbolic link"), std::string::npos)
        << f.error().text();
  }
  EXPECT_FALSE(SightingsFile::open(real + "/../real/sightings.json"));
  EXPECT_FALSE(SightingsFile::open("sightings.json"));  // relative

  const std::string made = real + "/made";
  auto f = SightingsFile::open(made + "/sightings.json");
  ASSERT_TRUE(f) << f.error().text();
  struct stat st {};
  ASSERT_EQ(::stat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);

  // Another user may rename `real`'s entries once it is writable by all, without the sticky bit.
  ASSERT_EQ(::chmod(real.c_str(), 0777), 0);
  auto open_below = SightingsFile::open(made + "/sightings.json");
  ASSERT_FALSE(open_below);
  EXPECT_NE(open_below.error().message.find(real + " may be written by another user"),
            std::string::npos)
      << open_below.error().text();
  ASSERT_EQ(::chmod(real.c_str(), 01777), 0);
  EXPECT_TRUE(SightingsFile::open(made + "/sightings.json"));
}

// sightings_file naming what is no regular file (a FIFO here, /dev/null alike) is neither read
// nor replaced.
TEST(SightingsFile, WhatIsNoRegularFileIsNeitherReadNorReplaced) {
  TempDir dir;
  const std::string fifo = dir.file("sightings.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = SightingsFile::open(fifo);
  ASSERT_TRUE(f) << f.error().text();
  auto written = f->save(core::CarriedSightings{});
  ASSERT_TRUE(written.has_value());
  EXPECT_NE(written->find("it is not a regular file"), std::string::npos) << *written;
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(SightingsFileTest, AFileCutShortOrOfAnotherVersionIsRefusedWhole) {
  auto c = carried_at(proc, now);
  c.boot_id = *boot_id;
  const std::string text = output::sightings_to_wire_text(c);
  const std::string path = dir.file("sightings.json");
  write_text(path, text.substr(0, text.size() - 3));
  ::chmod(path.c_str(), 0600);
  EXPECT_NE(refusal(load_sightings(path, proc, now)).find("invalid"), std::string::npos);
  write_text(path, "{\"sightings\": 999, \"carried\": {}}");
  EXPECT_NE(refusal(load_sightings(path, proc, now)).find("version"), std::string::npos);
  write_text(path, text);
  EXPECT_TRUE(load_sightings(path, proc, now));
}

// A stop writes the latest collection's at once, whatever was written a moment before.
TEST_F(SightingsFileTest, AFlushWritesTheLatestCollections) {
  const std::string path = dir.file("sightings.json");
  SightingsKeeper keeper(file_at(path), "boot");
  engine::Collection first, second;
  first.carried = std::make_shared<const core::CarriedSightings>(carried_at(proc, now));
  auto changed = carried_at(proc, now + 1);
  changed.listings.push_back({4243, now, std::nullopt, {"nvidia:GPU-0"}});
  second.carried = std::make_shared<const core::CarriedSightings>(changed);
  keeper.on_collection(first);
  keeper.on_collection(second);
  keeper.flush();
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  auto back = output::sightings_from_wire_text(text.str());
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(back->listings.size(), 2u);
  EXPECT_EQ(back->saved_at_ticks, now + 1);
  EXPECT_EQ(back->boot_id, "boot");
}

}  // namespace
}  // namespace gpureap::daemon
