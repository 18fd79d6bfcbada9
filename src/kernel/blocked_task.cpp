#include "kernel/blocked_task.h"

#include <algorithm>
#include <charconv>

#include "procfs/file_read.h"
#include "procfs/parsers.h"

namespace gpureap::kernel {
namespace {

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      auto oct = s.substr(i + 1, 3);
      unsigned v = 0;
      auto [p, ec] = std::from_chars(oct.data(), oct.data() + oct.size(), v, 8);
      if (ec == std::errc() && p == oct.data() + 3 && v < 256) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool contains(std::string_view s, std::string_view p) {
  return s.find(p) != s.npos;
}

bool fuse_function(std::string_view f) {
  return starts_with(f, "fuse_") || contains(f, "request_wait_answer") ||
         starts_with(f, "virtio_fs");
}
bool nfs_function(std::string_view f) {
  return starts_with(f, "nfs") || starts_with(f, "rpc_") || starts_with(f, "__rpc_") ||
         contains(f, "rpc_wait_bit") || starts_with(f, "xprt_");
}
bool gpu_driver_function(std::string_view f, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return starts_with(f, p); });
}

bool is_fuse(std::string_view type) {
  return type == "fuse" || starts_with(type, "fuse.") || type == "fuseblk";
}
bool is_nfs(std::string_view type) {
  return type == "nfs" || type == "nfs4";
}

}  // namespace

std::vector<MountEntry> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == text.npos ? text.size() : nl + 1);
    auto f = split_spaces(line);
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i)
      if (f[i] == "-") {
        dash = i;
        break;
      }
    if (f.size() < 10 || dash == 0 || dash + 2 >= f.size()) continue;
    auto devno = f[2];
    size_t colon = devno.find(':');
    if (colon == devno.npos) continue;
    MountEntry m;
    auto [p1, e1] = std::from_chars(devno.data(), devno.data() + colon, m.major);
    auto [p2, e2] = std::from_chars(devno.data() + colon + 1, devno.data() + devno.size(), m.minor);
    if (e1 != std::errc() || e2 != std::errc() || p2 != devno.data() + devno.size()) continue;
    m.mount_point = unescape(f[4]);
    m.fs_type = std::string(f[dash + 1]);
    m.source = unescape(f[dash + 2]);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> parse_kernel_stack(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == text.npos ? text.size() : nl + 1);
    if (size_t close = line.find("] "); close != line.npos) line.remove_prefix(close + 2);
    size_t end = line.find_first_of("+ ");
    auto fn = line.substr(0, end);
    if (!fn.empty() && out.size() < 64) out.emplace_back(fn);
  }
  return out;
}

std::optional<std::string> first_function_of(const std::optional<std::string>& wchan,
                                             const std::vector<std::string>& stack,
                                             const std::vector<std::string>& prefixes) {
  if (wchan && gpu_driver_function(*wchan, prefixes)) return wchan;
  for (const auto& f : stack)
    if (gpu_driver_function(f, prefixes)) return f;
  return std::nullopt;
}

core::BlockedOn classify_wait(const std::optional<std::string>& wchan,
                              const std::vector<std::string>& stack,
                              const std::vector<std::string>& driver_functions) {
  std::vector<std::string_view> fns;
  if (wchan) fns.push_back(*wchan);
  for (const auto& f : stack) fns.push_back(f);
  // The innermost frames say most: the first function that belongs to a known waiter decides.
  for (auto f : fns) {
    if (gpu_driver_function(f, driver_functions)) return core::BlockedOn::GpuDriver;
    if (fuse_function(f)) return core::BlockedOn::Fuse;
    if (nfs_function(f)) return core::BlockedOn::Nfs;
  }
  return core::BlockedOn::Unknown;
}

core::BlockedTask read_blocked_task(const std::string& proc_root, const std::string& sys_root,
                                    pid_t pid, const std::vector<std::string>& driver_functions) {
  core::BlockedTask t;
  t.pid = pid;
  const std::string dir = proc_root + "/" + std::to_string(pid) + "/";
  if (auto w = procfs::read_file(dir + "wchan"); w.ok()) t.wchan = procfs::parse_wchan(w.data);
  auto stack = procfs::read_file(dir + "stack");
  if (stack.ok())
    t.stack = parse_kernel_stack(stack.data);
  else if (stack.denied())
    t.stack_problem =
        "its kernel stack (/proc/" + std::to_string(pid) + "/stack) can be read by root only";
  else if (stack.vanished())
    t.stack_problem = "the process is gone";
  else
    t.stack_problem = "this kernel does not show kernel stacks (/proc/PID/stack)";
  t.on = classify_wait(t.wchan, t.stack, driver_functions);
  if (t.on != core::BlockedOn::Fuse && t.on != core::BlockedOn::Nfs) return t;
  auto mi = procfs::read_file(dir + "mountinfo");
  if (!mi.ok()) return t;
  for (auto& m : parse_mountinfo(mi.data)) {
    if (t.on == core::BlockedOn::Fuse && is_fuse(m.fs_type)) {
      core::FuseConnection c{m.minor, m.mount_point, m.fs_type, m.source, std::nullopt};
      auto waiting = procfs::read_file(sys_root + "/fs/fuse/connections/" +
                                       std::to_string(m.minor) + "/waiting");
      uint64_t n = 0;
      if (waiting.ok()) {
        auto& d = waiting.data;
        auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), n);
        if (ec == std::errc()) c.waiting = n;
      }
      t.fuse.push_back(std::move(c));
    }
    if (t.on == core::BlockedOn::Nfs && is_nfs(m.fs_type)) {
      core::NfsMount n{m.mount_point, m.fs_type, m.source.substr(0, m.source.rfind(':')), m.source};
      if (n.server.size() > 2 && n.server.front() == '[' && n.server.back() == ']')
        n.server = n.server.substr(1, n.server.size() - 2);
      t.nfs.push_back(std::move(n));
    }
  }
  return t;
}

}  // namespace gpureap::kernel
