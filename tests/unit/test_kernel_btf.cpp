// kernel::Btf (src/kernel/btf.cpp): member offsets through anonymous unions and typedefs, and
// malformed blobs refused, never read past. The blobs are laid out as the kernel's
// /sys/kernel/btf/vmlinux is (include/uapi/linux/btf.h).
#include <gtest/gtest.h>
#include <linux/btf.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "kernel/btf.h"

namespace gpureap::kernel {
namespace {

class BlobWriter {
 public:
  uint32_t name(const std::string& s) {
    if (s.empty()) return 0;
    uint32_t at = static_cast<uint32_t>(strings_.size());
    strings_ += s;
    strings_ += '\0';
    return at;
  }
  void type(const std::string& n, unsigned kind, unsigned vlen, bool kflag, uint32_t size_or_type) {
    put(name(n));
    put((kind << 24) | vlen | (kflag ? 1u << 31 : 0));
    put(size_or_type);
  }
  void member(const std::string& n, uint32_t type, uint32_t offset) {
    put(name(n));
    put(type);
    put(offset);
  }
  void put(uint32_t v) { types_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  std::string blob() const {
    btf_header h{};
    h.magic = BTF_MAGIC;
    h.version = BTF_VERSION;
    h.hdr_len = sizeof h;
    h.type_off = 0;
    h.type_len = static_cast<uint32_t>(types_.size());
    h.str_off = h.type_len;
    h.str_len = static_cast<uint32_t>(strings_.size());
    return std::string(reinterpret_cast<const char*>(&h), sizeof h) + types_ + strings_;
  }

 private:
  std::string types_;
  std::string strings_ = std::string(1, '\0');  // offset 0: no name
};

// 1 int, 2 typedef u32t, 3 anonymous union {int x}, 4 struct outer {int a; union {...};
// u32t t; int bf:3;}, 5 func f, 6 a pointer to outer.
std::string sample() {
  BlobWriter w;
  w.type("int", BTF_KIND_INT, 0, false, 4);
  w.put(32);  // the int's encoding: 32 bits
  w.type("u32t", BTF_KIND_TYPEDEF, 0, false, 1);
  w.type("", BTF_KIND_UNION, 1, false, 4);
  w.member("x", 1, 0);
  w.type("outer", BTF_KIND_STRUCT, 4, true, 16);
  w.member("a", 1, 0);
  w.member("", 3, 32);
  w.member("t", 2, 64);
  w.member("bf", 1, (3u << 24) | 96);
  w.type("f", BTF_KIND_FUNC, 0, false, 0);
  w.type("", BTF_KIND_PTR, 0, false, 4);
  return w.blob();
}

TEST(BtfTest, FindsMembersThroughAnonymousUnionsAndTypedefs) {
  auto btf = Btf::parse(sample());
  ASSERT_TRUE(btf) << btf.error().text();
  auto a = btf->member("outer", "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(a->size, 4u);
  auto x = btf->member("outer", "x");
  ASSERT_TRUE(x) << x.error().text();
  EXPECT_EQ(x->offset, 4u);
  EXPECT_EQ(x->size, 4u);
  auto t = btf->member("outer", "t");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->offset, 8u);
  EXPECT_EQ(t->size, 4u);
  auto f = btf->function_id("f");
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, 5u);
}

TEST(BtfTest, RefusesBitFieldsAndWhatIsNotDescribed) {
  auto btf = Btf::parse(sample());
  ASSERT_TRUE(btf);
  EXPECT_FALSE(btf->member("outer", "bf"));  // a bit field cannot be read by its byte
  EXPECT_FALSE(btf->member("outer", "missing"));
  EXPECT_FALSE(btf->member("inner", "x"));
  EXPECT_FALSE(btf->function_id("outer"));  // a struct, not a function
  EXPECT_FALSE(btf->function_id("g"));
}

TEST(BtfTest, MalformedBlobsAreErrorsNeverReadPast) {
  const std::string good = sample();
  // Every cut: refused where the sections no longer fit, and never read beyond the end.
  for (size_t n = 0; n < good.size(); ++n) {
    auto btf = Btf::parse(std::string_view(good).substr(0, n));
    EXPECT_FALSE(btf) << "cut at " << n;
  }
  std::string bad_magic = good;
  bad_magic[0] ^= 0x55;
  EXPECT_FALSE(Btf::parse(bad_magic));

  // A type section two bytes off its 4-byte alignment: refused, not read unaligned.
  btf_header h{};
  std::memcpy(&h, good.data(), sizeof h);
  h.type_off += 2;
  h.str_off += 2;
  std::string shifted = std::string(reinterpret_cast<const char*>(&h), sizeof h) +
                        std::string(2, '\0') + good.substr(sizeof h);
  auto unaligned = Btf::parse(shifted);
  ASSERT_FALSE(unaligned);
  EXPECT_NE(unaligned.error().message.find("aligned"), std::string::npos);

  BlobWriter unknown;
  unknown.type("what", 31, 0, false, 0);  // a kind after this reader: its length is unknown
  auto refused = Btf::parse(unknown.blob());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("unknown"), std::string::npos);

  // A member whose type id lies beyond the types, and a name beyond the strings.
  BlobWriter dangling;
  dangling.type("s", BTF_KIND_STRUCT, 2, false, 8);
  dangling.member("p", 99, 0);
  dangling.put(1u << 30);  // the second member's name, far outside the strings
  dangling.put(1);
  dangling.put(32);
  auto btf = Btf::parse(dangling.blob());
  ASSERT_TRUE(btf);
  EXPECT_FALSE(btf->member("s", "p"));  // its size cannot be known
  EXPECT_FALSE(btf->member("s", "q"));
}

TEST(BtfTest, TheRunningKernelDescribesWhatTheHolderScanReads) {
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux"))
    GTEST_SKIP() << "this kernel has no BTF (/sys/kernel/btf/vmlinux)";
  auto btf = Btf::load_vmlinux();
  ASSERT_TRUE(btf) << btf.error().text();
  auto tgid = btf->member("task_struct", "tgid");
  ASSERT_TRUE(tgid) << tgid.error().text();
  EXPECT_EQ(tgid->size, sizeof(pid_t));
  auto inode = btf->member("file", "f_inode");
  ASSERT_TRUE(inode) << inode.error().text();
  EXPECT_EQ(inode->size, sizeof(void*));
}

}  // namespace
}  // namespace gpureap::kernel
