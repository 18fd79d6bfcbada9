#pragma once
// The running kernel's own description of its types (BTF, /sys/kernel/btf/vmlinux): where a
// member lies in a kernel struct on this very kernel, and a function's type id. The kernel
// vouches for these; a program for the kernel built from them reads the fields this kernel
// has, wherever its version put them.
//
// Read by hand rather than with libbpf: libbpf indexes all of the file's ~150,000 types (7 ms
// warm, 40 ms cold here), which is more than the holder scan that needs them saves; the few
// lookups below are one pass over the type records.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpureap::kernel {

struct BtfMember {
  uint32_t offset = 0;  // bytes from the start of the struct
  uint32_t size = 0;    // bytes of the member's (resolved) type
};

class Btf {
 public:
  // Parses a raw BTF blob (the format of /sys/kernel/btf/vmlinux). Malformed input is an
  // error, never a crash: every offset is checked against the blob.
  static core::Result<Btf> parse(std::string_view blob);
  // The running kernel's, from /sys/kernel/btf/vmlinux.
  static core::Result<Btf> load_vmlinux();

  // A member of `struct name`, looked for through anonymous struct and union members too. An
  // error where the struct or member is missing or is a bit field.
  core::Result<BtfMember> member(std::string_view struct_name, std::string_view member) const;
  // The type id of the function `name` (BTF_KIND_FUNC).
  core::Result<uint32_t> function_id(std::string_view name) const;

 private:
  struct Type {
    uint32_t name_off, info, size_or_type;
  };
  const Type* type(uint32_t id) const;
  std::string_view name(uint32_t off) const;
  static core::Result<Btf> parse(std::unique_ptr<char[]> blob, size_t size);
  uint32_t find(std::string_view name, unsigned kind) const;  // 0: none; remembered
  uint32_t scan(std::string_view name, unsigned kind) const;  // one pass over the types
  uint32_t resolve(uint32_t id) const;                        // through typedefs and qualifiers
  uint32_t size_of(uint32_t id) const;                        // 0: unknown
  bool find_member(uint32_t struct_id, std::string_view member, int depth, BtfMember& out) const;

  std::unique_ptr<char[]> blob_;
  size_t types_ = 0, strings_ = 0, strings_len_ = 0;
  std::vector<uint32_t> offsets_;  // type id -> byte offset in blob_ (id 0 is void)
  struct Found {
    std::string name;
    unsigned kind;
    uint32_t id;
  };
  mutable std::vector<Found> found_;  // the lookups made: a struct's members are asked in turn
};

}  // namespace gpureap::kernel
