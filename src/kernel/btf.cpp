#include "kernel/btf.h"

#include <fcntl.h>
#include <linux/btf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpureap::kernel {
namespace {

constexpr const char* kVmlinux = "/sys/kernel/btf/vmlinux";
constexpr size_t kMaxSize = 256u << 20;  // a kernel's is about 5 MiB

unsigned kind_of(uint32_t info) {
  return (info >> 24) & 0x1f;
}
unsigned vlen_of(uint32_t info) {
  return info & 0xffff;
}
bool kflag_of(uint32_t info) {
  return (info >> 31) != 0;
}

// Bytes that follow a type record of this kind, or -1 for a kind this reader does not know
// (whose length it therefore cannot skip).
long trailer(unsigned kind, unsigned vlen) {
  switch (kind) {
    case BTF_KIND_INT:
    case BTF_KIND_VAR:
    case BTF_KIND_DECL_TAG:
      return 4;
    case BTF_KIND_PTR:
    case BTF_KIND_FWD:
    case BTF_KIND_TYPEDEF:
    case BTF_KIND_VOLATILE:
    case BTF_KIND_CONST:
    case BTF_KIND_RESTRICT:
    case BTF_KIND_FUNC:
    case BTF_KIND_FLOAT:
    case BTF_KIND_TYPE_TAG:
      return 0;
    case BTF_KIND_ARRAY:
      return sizeof(btf_array);
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION:
      return static_cast<long>(vlen) * sizeof(btf_member);
    case BTF_KIND_ENUM:
      return static_cast<long>(vlen) * sizeof(btf_enum);
    case BTF_KIND_FUNC_PROTO:
      return static_cast<long>(vlen) * sizeof(btf_param);
    case BTF_KIND_DATASEC:
      return static_cast<long>(vlen) * sizeof(btf_var_secinfo);
    case BTF_KIND_ENUM64:
      return static_cast<long>(vlen) * sizeof(btf_enum64);
    default:
      return -1;
  }
}

core::Error malformed(const std::string& why) {
  return core::Error{std::string("cannot read the kernel's type information: ") + why, ""};
}

}  // namespace

core::Result<Btf> Btf::parse(std::string_view text) {
  auto copy = std::make_unique_for_overwrite<char[]>(text.size());
  std::memcpy(copy.get(), text.data(), text.size());
  return parse(std::move(copy), text.size());
}

core::Result<Btf> Btf::parse(std::unique_ptr<char[]> blob, size_t size) {
  btf_header h{};
  if (size < sizeof h) return malformed("shorter than its header");
  std::memcpy(&h, blob.get(), sizeof h);
  if (h.magic != BTF_MAGIC) return malformed("not BTF (wrong magic number)");
  const uint64_t types = uint64_t{h.hdr_len} + h.type_off,
                 strings = uint64_t{h.hdr_len} + h.str_off;
  if (h.hdr_len < sizeof h || types + h.type_len > size || strings + h.str_len > size ||
      h.str_len == 0)
    return malformed("its sections lie outside the file");
  // Every record is a multiple of 4 bytes: a section that starts 4-aligned keeps every record
  // so, and type() may point at one (libbpf refuses other sections alike).
  if (types % 4 != 0) return malformed("its type section is not aligned to 4 bytes");
  Btf btf;
  btf.types_ = types;
  btf.strings_ = strings;
  btf.strings_len_ = h.str_len;
  btf.offsets_.reserve(h.type_len / 16);  // the average record (12 bytes and its members)
  btf.offsets_.push_back(0);              // id 0: void
  for (uint64_t at = types, end = types + h.type_len; at < end;) {
    if (end - at < sizeof(Type)) return malformed("a type record is cut short");
    Type t{};
    std::memcpy(&t, blob.get() + at, sizeof t);
    long more = trailer(kind_of(t.info), vlen_of(t.info));
    if (more < 0)
      return malformed("a type of kind " + std::to_string(kind_of(t.info)) + " is unknown");
    if (end - at - sizeof t < static_cast<uint64_t>(more))
      return malformed("a type record is cut short");
    btf.offsets_.push_back(static_cast<uint32_t>(at));
    at += sizeof t + static_cast<uint64_t>(more);
  }
  btf.blob_ = std::move(blob);
  return btf;
}

core::Result<Btf> Btf::load_vmlinux() {
  // One read of the whole file (5 MiB or so) into memory that is not cleared first.
  auto fail = [](int err) {
    return core::Error{
        std::string("cannot read ") + kVmlinux + ": " + std::strerror(err),
        err == ENOENT ? "the kernel was built without BTF (CONFIG_DEBUG_INFO_BTF)" : "", err};
  };
  int fd = ::open(kVmlinux, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  struct stat st {};
  size_t capacity = ::fstat(fd, &st) == 0 && st.st_size > 0
                        ? std::min(kMaxSize, static_cast<size_t>(st.st_size) + 1)
                        : size_t{16} << 20;
  auto blob = std::make_unique_for_overwrite<char[]>(capacity);
  size_t have = 0;
  for (;;) {
    if (have == capacity) {
      if (capacity == kMaxSize) break;
      const size_t bigger = std::min(kMaxSize, capacity * 2);
      auto grown = std::make_unique_for_overwrite<char[]>(bigger);
      std::memcpy(grown.get(), blob.get(), have);
      blob = std::move(grown);
      capacity = bigger;
    }
    ssize_t n = ::read(fd, blob.get() + have, capacity - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(err);
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  return parse(std::move(blob), have);
}

const Btf::Type* Btf::type(uint32_t id) const {
  if (id == 0 || id >= offsets_.size()) return nullptr;
  return reinterpret_cast<const Type*>(blob_.get() + offsets_[id]);
}

std::string_view Btf::name(uint32_t off) const {
  if (off >= strings_len_) return {};
  const char* s = blob_.get() + strings_ + off;
  return {s, ::strnlen(s, strings_len_ - off)};
}

uint32_t Btf::find(std::string_view wanted, unsigned kind) const {
  for (const auto& [name, k, id] : found_)
    if (k == kind && name == wanted) return id;
  const uint32_t id = scan(wanted, kind);
  found_.push_back({std::string(wanted), kind, id});
  return id;
}

uint32_t Btf::scan(std::string_view wanted, unsigned kind) const {
  for (uint32_t id = 1; id < offsets_.size(); ++id) {
    const Type* t = type(id);
    if (kind_of(t->info) == kind && name(t->name_off) == wanted) return id;
  }
  return 0;
}

uint32_t Btf::resolve(uint32_t id) const {
  for (int hops = 0; hops < 32; ++hops) {
    const Type* t = type(id);
    if (!t) return 0;
    switch (kind_of(t->info)) {
      case BTF_KIND_TYPEDEF:
      case BTF_KIND_VOLATILE:
      case BTF_KIND_CONST:
      case BTF_KIND_RESTRICT:
      case BTF_KIND_TYPE_TAG:
        id = t->size_or_type;
        continue;
      default:
        return id;
    }
  }
  return 0;
}

uint32_t Btf::size_of(uint32_t id) const {
  const Type* t = type(resolve(id));
  if (!t) return 0;
  switch (kind_of(t->info)) {
    case BTF_KIND_PTR:
      return sizeof(void*);
    case BTF_KIND_INT:
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64:
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION:
      return t->size_or_type;
    default:
      return 0;
  }
}

bool Btf::find_member(uint32_t struct_id, std::string_view wanted, int depth,
                      BtfMember& out) const {
  const Type* t = type(struct_id);
  if (!t || depth > 8) return false;
  const unsigned kind = kind_of(t->info);
  if (kind != BTF_KIND_STRUCT && kind != BTF_KIND_UNION) return false;
  const char* members = reinterpret_cast<const char*>(t) + sizeof(Type);
  for (unsigned i = 0; i < vlen_of(t->info); ++i) {
    btf_member m{};
    std::memcpy(&m, members + i * sizeof m, sizeof m);
    const uint32_t bits = kflag_of(t->info) ? BTF_MEMBER_BIT_OFFSET(m.offset) : m.offset;
    const bool bitfield = kflag_of(t->info) && BTF_MEMBER_BITFIELD_SIZE(m.offset) != 0;
    std::string_view member_name = name(m.name_off);
    if (member_name.empty()) {  // an anonymous struct or union: its members are this one's
      BtfMember inner;
      if (bits % 8 == 0 && find_member(resolve(m.type), wanted, depth + 1, inner)) {
        out = {bits / 8 + inner.offset, inner.size};
        return true;
      }
      continue;
    }
    if (member_name != wanted) continue;
    if (bitfield || bits % 8 != 0) return false;
    out = {bits / 8, size_of(m.type)};
    return true;
  }
  return false;
}

core::Result<BtfMember> Btf::member(std::string_view struct_name, std::string_view member) const {
  const uint32_t id = find(struct_name, BTF_KIND_STRUCT);
  const std::string what = std::string(struct_name) + "." + std::string(member);
  if (!id) return malformed("struct " + std::string(struct_name) + " is not described");
  BtfMember out;
  if (!find_member(id, member, 0, out) || out.size == 0)
    return malformed(what + " is not described, or is a bit field");
  return out;
}

core::Result<uint32_t> Btf::function_id(std::string_view name) const {
  const uint32_t id = find(name, BTF_KIND_FUNC);
  if (!id) return malformed("function " + std::string(name) + " is not described");
  return id;
}

}  // namespace gpureap::kernel
