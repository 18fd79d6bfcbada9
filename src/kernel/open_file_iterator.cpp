#include "kernel/open_file_iterator.h"

#include <linux/bpf.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "kernel/btf.h"

namespace gpureap::kernel {
namespace {

// One record as the program writes it, in the reader's byte order (the same machine).
struct WireRecord {
  uint32_t tgid, tid, fd, flags, mode, rdev, sb_dev, unused;
  uint64_t ino, start_ns;
};
static_assert(sizeof(WireRecord) == 48);

// The kernel keeps a device number as MAJOR << 20 | MINOR (include/linux/kdev_t.h).
dev_t from_kernel_dev(uint32_t v) {
  return ::makedev(v >> 20, v & 0xfffff);
}

long bpf(int cmd, bpf_attr& attr) {
  return ::syscall(__NR_bpf, cmd, &attr, sizeof attr);
}

std::shared_ptr<const int> own(int fd) {
  return std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
}

// A program, instruction by instruction. Its ABI (registers, opcodes) is the kernel's
// (Documentation/bpf/instruction-set.rst); the struct offsets come from the running kernel's
// BTF, so the same code runs on every kernel that has the fields.
class Program {
 public:
  static uint8_t size_code(uint32_t bytes) {
    switch (bytes) {
      case 1:
        return BPF_B;
      case 2:
        return BPF_H;
      case 4:
        return BPF_W;
      default:
        return BPF_DW;
    }
  }
  void load(uint8_t dst, uint8_t src, uint32_t off, uint32_t bytes) {
    add(BPF_LDX | BPF_MEM | size_code(bytes), dst, src, static_cast<int16_t>(off), 0);
  }
  void store(uint8_t dst, int16_t off, uint8_t src, uint32_t bytes) {
    add(BPF_STX | BPF_MEM | size_code(bytes), dst, src, off, 0);
  }
  void mov_reg(uint8_t dst, uint8_t src) { add(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0); }
  void mov_imm(uint8_t dst, int32_t imm) { add(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm); }
  void add_imm(uint8_t dst, int32_t imm) { add(BPF_ALU64 | BPF_ADD | BPF_K, dst, 0, 0, imm); }
  void call(int32_t helper) { add(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
  void exit() { add(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }
  // A jump to the end, taken where `reg` is 0 (a null pointer); patched by to_end().
  void if_zero_to_end(uint8_t reg) {
    exits_.push_back(insns_.size());
    add(BPF_JMP | BPF_JEQ | BPF_K, reg, 0, 0, 0);
  }
  // A jump to the end, taken where `reg` is not `imm`.
  void if_not_to_end(uint8_t reg, int32_t imm) {
    exits_.push_back(insns_.size());
    add(BPF_JMP | BPF_JNE | BPF_K, reg, 0, 0, imm);
  }
  // A jump taken where `reg` is `imm`, to where land() is next called.
  size_t jump_if(uint8_t reg, int32_t imm) {
    add(BPF_JMP | BPF_JEQ | BPF_K, reg, 0, 0, imm);
    return insns_.size() - 1;
  }
  void land(size_t jump) { insns_[jump].off = static_cast<int16_t>(insns_.size() - jump - 1); }
  // Skips the next instruction where `reg` is not `imm`.
  void if_not_skip_one(uint8_t reg, int32_t imm) { add(BPF_JMP | BPF_JNE | BPF_K, reg, 0, 1, imm); }
  void and_imm(uint8_t dst, int32_t imm) { add(BPF_ALU64 | BPF_AND | BPF_K, dst, 0, 0, imm); }
  // Makes the pending jumps land here.
  void to_end() {
    for (size_t at : exits_) insns_[at].off = static_cast<int16_t>(insns_.size() - at - 1);
    exits_.clear();
  }
  const std::vector<bpf_insn>& insns() const { return insns_; }

 private:
  void add(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    insns_.push_back(i);
  }
  std::vector<bpf_insn> insns_;
  std::vector<size_t> exits_;
};

struct Field {
  const char* type;
  const char* member;
  uint32_t wire_bytes;  // 8 for a pointer
};

// The members the program reads, each at most as wide as where it goes.
core::Result<BtfMember> member_of(const Btf& btf, const Field& f) {
  auto m = btf.member(f.type, f.member);
  if (!m) return m.error();
  const uint32_t size = m->size;
  if (size > f.wire_bytes || (size != 1 && size != 2 && size != 4 && size != 8) ||
      m->offset > INT16_MAX)
    return core::Error{std::string("the kernel's ") + f.type + "." + f.member + " is " +
                           std::to_string(size) + " bytes wide, not what the holder scan reads",
                       ""};
  return m;
}

core::Result<std::vector<bpf_insn>> build(const Btf& btf) {
  enum : uint8_t { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };
  const Field fields[] = {
      {"bpf_iter__task_file", "meta", 8},
      {"bpf_iter__task_file", "task", 8},
      {"bpf_iter__task_file", "fd", 4},
      {"bpf_iter__task_file", "file", 8},
      {"bpf_iter_meta", "seq", 8},
      {"task_struct", "tgid", 4},
      {"task_struct", "pid", 4},
      {"task_struct", "group_leader", 8},
      {"task_struct", "start_boottime", 8},
      {"file", "f_flags", 4},
      {"file", "f_inode", 8},
      {"inode", "i_mode", 4},
      {"inode", "i_rdev", 4},
      {"inode", "i_ino", 8},
      {"inode", "i_sb", 8},
      {"super_block", "s_dev", 4},
  };
  BtfMember m[std::size(fields)];
  for (size_t i = 0; i < std::size(fields); ++i) {
    auto found = member_of(btf, fields[i]);
    if (!found) return found.error();
    m[i] = *found;
  }
  const auto [meta, task, fd, file, seq, tgid, tid, leader, start, flags, inode, mode, rdev, ino,
              sb, sdev] = m;
  constexpr int16_t kRecord = -48;  // the record on the stack, 8-aligned
  auto slot = [](size_t member_offset) { return static_cast<int16_t>(kRecord + member_offset); };

  Program p;
  p.mov_reg(R6, R1);  // the context
  p.load(R7, R6, file.offset, 8);
  p.if_zero_to_end(R7);
  // Only a device node or a regular file (a stand-in) can be a GPU file: sockets, pipes and
  // the like, most of a process's fds, are not written, but for fd 0, so that a process with
  // none of those still shows in the pass.
  p.load(R9, R7, inode.offset, 8);
  p.load(R1, R9, mode.offset, mode.size);
  p.store(R10, slot(offsetof(WireRecord, mode)), R1, 4);
  p.and_imm(R1, S_IFMT);
  p.if_not_skip_one(R1, S_IFCHR);
  p.mov_imm(R1, S_IFREG);
  const size_t node_or_file = p.jump_if(R1, S_IFREG);
  p.load(R1, R6, fd.offset, fd.size);
  p.if_not_to_end(R1, 0);
  p.land(node_or_file);
  p.load(R8, R6, task.offset, 8);
  p.if_zero_to_end(R8);
  p.load(R1, R8, tgid.offset, tgid.size);
  p.store(R10, slot(offsetof(WireRecord, tgid)), R1, 4);
  p.load(R1, R8, tid.offset, tid.size);
  p.store(R10, slot(offsetof(WireRecord, tid)), R1, 4);
  p.mov_imm(R1, 0);  // the verifier lets no byte of the stack be written out unset
  p.store(R10, slot(offsetof(WireRecord, unused)), R1, 4);
  p.load(R1, R6, fd.offset, fd.size);
  p.store(R10, slot(offsetof(WireRecord, fd)), R1, 4);
  p.load(R1, R7, flags.offset, flags.size);
  p.store(R10, slot(offsetof(WireRecord, flags)), R1, 4);
  p.load(R1, R9, rdev.offset, rdev.size);
  p.store(R10, slot(offsetof(WireRecord, rdev)), R1, 4);
  p.load(R1, R9, ino.offset, ino.size);
  p.store(R10, slot(offsetof(WireRecord, ino)), R1, 8);
  p.load(R2, R9, sb.offset, 8);
  p.load(R1, R2, sdev.offset, sdev.size);
  p.store(R10, slot(offsetof(WireRecord, sb_dev)), R1, 4);
  p.load(R2, R8, leader.offset, 8);
  p.load(R1, R2, start.offset, start.size);
  p.store(R10, slot(offsetof(WireRecord, start_ns)), R1, 8);
  p.load(R1, R6, meta.offset, 8);
  p.load(R1, R1, seq.offset, 8);
  p.mov_reg(R2, R10);
  p.add_imm(R2, kRecord);
  p.mov_imm(R3, sizeof(WireRecord));
  p.call(BPF_FUNC_seq_write);
  p.to_end();
  p.mov_imm(R0, 0);
  p.exit();
  return p.insns();
}

core::Error refused(const char* step, int err, const std::string& log = {}) {
  std::string message = std::string("the kernel refused the open-file iterator (") + step +
                        "): " + std::strerror(err);
  if (!log.empty()) message += " (" + log + ")";
  const bool privilege = err == EPERM || err == EACCES;
  return core::Error{message, privilege ? "it needs root (CAP_BPF and CAP_PERFMON)" : "", err};
}

// The verifier's last words, which say why a program was refused.
std::string last_line(const char* log) {
  std::string text(log);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
}

}  // namespace

bool OpenFileIterator::permitted() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  auto has = [&](unsigned cap) { return (data[cap / 32].effective >> (cap % 32)) & 1u; };
  return has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON));
}

core::Result<OpenFileIterator> OpenFileIterator::load() {
  auto btf = Btf::load_vmlinux();
  if (!btf) return btf.error();
  auto target = btf->function_id("bpf_iter_task_file");
  if (!target) return target.error();
  auto insns = build(*btf);
  if (!insns) return insns.error();

  // The helper that writes the record (bpf_seq_write) is offered to GPL-compatible programs
  // only; this program, a few instructions gpureap writes, is offered under either licence.
  static const char kLicense[] = "Dual MIT/GPL";
  char log[4096] = {};
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_TRACING;
  load.expected_attach_type = BPF_TRACE_ITER;
  load.attach_btf_id = *target;
  load.insns = reinterpret_cast<uintptr_t>(insns->data());
  load.insn_cnt = static_cast<uint32_t>(insns->size());
  load.license = reinterpret_cast<uintptr_t>(kLicense);
  std::strncpy(load.prog_name, "gpureap_fds", sizeof load.prog_name - 1);
  long prog = bpf(BPF_PROG_LOAD, load);
  if (prog < 0 && errno == EACCES) {  // the verifier's reason, asked for only when refused
    load.log_level = 1;
    load.log_buf = reinterpret_cast<uintptr_t>(log);
    load.log_size = sizeof log;
    prog = bpf(BPF_PROG_LOAD, load);
  }
  if (prog < 0) return refused("load", errno, last_line(log));
  auto program = own(static_cast<int>(prog));

  bpf_attr link{};
  link.link_create.prog_fd = static_cast<uint32_t>(*program);
  link.link_create.attach_type = BPF_TRACE_ITER;
  long link_fd = bpf(BPF_LINK_CREATE, link);
  if (link_fd < 0) return refused("link", errno);
  return OpenFileIterator(own(static_cast<int>(link_fd)));
}

core::Result<bool> OpenFileIterator::for_each(
    const std::function<void(const OpenFileRecord&)>& each) const {
  bpf_attr create{};
  create.iter_create.link_fd = static_cast<uint32_t>(*link_);
  long iter = bpf(BPF_ITER_CREATE, create);
  if (iter < 0) return refused("start", errno);
  auto pass = own(static_cast<int>(iter));
  std::vector<WireRecord> buf(4096);
  size_t carried = 0;  // bytes of a record cut by the previous read
  for (;;) {
    auto* bytes = reinterpret_cast<char*>(buf.data());
    ssize_t n = ::read(*pass, bytes + carried, buf.size() * sizeof(WireRecord) - carried);
    // EAGAIN: a million fds in a row wrote nothing (no device node, no regular file); the
    // kernel hands back control there, and the next read goes on.
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return refused("read", errno);
    if (n == 0) break;
    const size_t have = carried + static_cast<size_t>(n), whole = have / sizeof(WireRecord);
    for (size_t i = 0; i < whole; ++i) {
      const WireRecord& r = buf[i];
      each({static_cast<pid_t>(r.tgid), static_cast<pid_t>(r.tid), static_cast<int>(r.fd), r.flags,
            r.mode, from_kernel_dev(r.rdev), from_kernel_dev(r.sb_dev), r.ino, r.start_ns});
    }
    carried = have - whole * sizeof(WireRecord);
    std::memmove(bytes, bytes + whole * sizeof(WireRecord), carried);
  }
  if (carried) return core::Error{"the open-file iterator ended inside a record", ""};
  return true;
}

}  // namespace gpureap::kernel
