#pragma once
// A machine with DRM GPUs, as files: a procfs root whose processes hold stand-in DRM nodes
// (fd links) with the fdinfo their drivers would write, a dev root of stand-in nodes, and a
// sysfs root with the GPUs (class/drm), their totals and AMD's KFD. Built at run time in a
// temporary directory (fd links are absolute paths), for the unit and the integration tests.
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "sys_tree.h"

namespace gpureap::testing {

class DrmMachine {
 public:
  DrmMachine() {
    write("proc/stat", "cpu  1 0 1 100 0 0 0 0 0 0\nbtime 1700000000\n");
    write("proc/sys/kernel/pid_max", "4194304\n");
    write("proc/sys/kernel/osrelease", "6.8.0-test\n");
    write("proc/devices", "Character devices:\n226 drm\n510 kfd\n");
    std::filesystem::create_directories(path("proc/self/ns"));
    std::filesystem::create_symlink("pid:[4026531836]", path("proc/self/ns/pid"));
    std::filesystem::create_directories(path("dev/dri"));
    std::filesystem::create_directories(path("sys/class/drm"));
    process(1, "systemd", 0, 1, 1);
  }
  ~DrmMachine() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  DrmMachine(const DrmMachine&) = delete;
  DrmMachine& operator=(const DrmMachine&) = delete;

  std::string proc_root() const { return path("proc"); }
  std::string dev_root() const { return path("dev"); }
  std::string sys_root() const { return path("sys"); }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  void write(const std::string& rel, const std::string& text) const {
    auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void remove(const std::string& rel) const { std::filesystem::remove_all(path(rel)); }

  // --- sysfs ----------------------------------------------------------------------------
  // A PCI GPU with card<card> and renderD<render> nodes, bound to `driver`, in the real
  // layout (class/drm links into devices/), and its stand-in nodes under the dev root.
  // `subsystem` is the board, "vendor:device" ({0x1002, 0x0e3a}), or none.
  void gpu(const std::string& driver, unsigned vendor_id, unsigned device_id, unsigned card,
           unsigned render, const std::string& pci,
           std::optional<std::pair<unsigned, unsigned>> subsystem = std::nullopt) const {
    test::PciGpu g{
        pci,
        driver,
        hex(vendor_id),
        hex(device_id),
        subsystem ? hex(subsystem->first) : "",
        subsystem ? hex(subsystem->second) : "",
        {{"card" + std::to_string(card), card}, {"renderD" + std::to_string(render), render}},
        {}};
    test::add_pci_gpu(sys_, g, test::Layout::Symlinks);
    for (const auto& [node, minor] : g.nodes) write("dev/dri/" + node, "");
  }
  // An amdgpu dGPU with its VRAM totals: a Navi 21 (1002:73bf) on AMD's own Radeon RX 6900 XT
  // board (subsystem 1002:0e3a).
  void amd_gpu(unsigned card, unsigned render, const std::string& pci, uint64_t vram_total,
               uint64_t vram_used, const std::string& product = "") const {
    gpu("amdgpu", 0x1002, 0x73bf, card, render, pci, std::make_pair(0x1002u, 0x0e3au));
    set_vram_used(pci, vram_used);
    write("sys/devices/pci0000:00/" + pci + "/mem_info_vram_total",
          std::to_string(vram_total) + "\n");
    write("sys/devices/pci0000:00/" + pci + "/gpu_busy_percent", "37\n");
    if (!product.empty()) write("sys/devices/pci0000:00/" + pci + "/product_name", product + "\n");
  }
  void set_vram_used(const std::string& pci, uint64_t bytes) const {
    write("sys/devices/pci0000:00/" + pci + "/mem_info_vram_used", std::to_string(bytes) + "\n");
  }
  // AMD's KFD: /dev/kfd (510:0) and one GPU node per (gpu_id, PCI address) given.
  void kfd_node(unsigned node, unsigned gpu_id, unsigned domain, unsigned bus) const {
    write("sys/class/kfd/kfd/dev", "510:0\n");
    write("dev/kfd", "");
    std::string n = "sys/class/kfd/kfd/topology/nodes/" + std::to_string(node);
    write(n + "/gpu_id", std::to_string(gpu_id) + "\n");
    write(n + "/properties", "cpu_cores_count 0\nsimd_count 240\ndomain " + std::to_string(domain) +
                                 "\nlocation_id " + std::to_string(bus << 8) + "\n");
  }
  void kfd_process(pid_t pid, unsigned gpu_id, uint64_t vram) const {
    write("sys/class/kfd/kfd/proc/" + std::to_string(pid) + "/vram_" + std::to_string(gpu_id),
          std::to_string(vram) + "\n");
  }

  // The version a driver built outside the kernel tree gives its module (AMD's DKMS amdgpu).
  void module_version(const std::string& driver, const std::string& version) const {
    write("sys/module/" + driver + "/version", version + "\n");
  }

  // --- the host's files ------------------------------------------------------------------
  // The PCI ID database where Debian's pci.ids package puts it, under the folder that holds
  // the proc root (gpureap's default runtime root): `text`, or the excerpt in tests/fixtures.
  void pci_ids(const std::string& text) const { write("usr/share/misc/pci.ids", text); }
  void pci_ids_fixture(const std::string& fixtures_dir) const {
    std::ifstream in(fixtures_dir + "/pci-ids/pci.ids");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.empty()) throw std::runtime_error("no pci.ids fixture in " + fixtures_dir);
    pci_ids(text);
  }

  // --- procfs ---------------------------------------------------------------------------
  // PF_RANDOMIZE, as most processes have it; PF_EXITING, set on a task that has begun to exit.
  static constexpr unsigned kTaskFlags = 0x400000, kExiting = 0x4;

  // `threads`: the stat's num_threads (the threads' own entries come from task()).
  void process(pid_t pid, const std::string& comm, pid_t ppid, pid_t pgid, pid_t sid,
               char state = 'S', unsigned threads = 1, unsigned flags = kTaskFlags) const {
    std::string d = "proc/" + std::to_string(pid) + "/";
    write(d + "stat", stat_line(pid, comm, state, ppid, pgid, sid, flags, threads, 1000 + pid));
    write(d + "status", "Name:\t" + comm + "\nState:\t" + state + "\nPPid:\t" +
                            std::to_string(ppid) + "\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t" +
                            std::to_string(pid) + "\nThreads:\t" + std::to_string(threads) + "\n");
    write(d + "cmdline", comm + std::string(1, '\0'));
    write(d + "cgroup", "0::/user.slice\n");
    std::filesystem::create_directories(path(d + "fd"));
    std::filesystem::create_directories(path(d + "fdinfo"));
  }
  // The thread `tid` of `pid`, as /proc/PID/task/TID shows it (the leader's own entry too): its
  // stat, and its fd table's folders (the process's table, or one of its own; open_fd fills
  // them).
  void task(pid_t pid, pid_t tid, const std::string& comm, char state = 'S',
            unsigned flags = kTaskFlags) const {
    std::string d = task_dir(pid, tid);
    write(d + "stat", stat_line(tid, comm, state, 1, pid, pid, flags, 1, 1000 + pid));
    std::filesystem::create_directories(path(d + "fd"));
    std::filesystem::create_directories(path(d + "fdinfo"));
  }
  // The process's fd `fd` is the stand-in `node` ("dri/renderD128", "kfd"), with this fdinfo;
  // with `tid`, the fd of that thread's entry (/proc/PID/task/TID/fd).
  void open_fd(pid_t pid, int fd, const std::string& node, const std::string& fdinfo,
               pid_t tid = 0) const {
    std::string d = tid ? task_dir(pid, tid) : "proc/" + std::to_string(pid) + "/";
    std::filesystem::create_symlink(path("dev/" + node), path(d + "fd/" + std::to_string(fd)));
    write(d + "fdinfo/" + std::to_string(fd), "pos:\t0\nflags:\t02100002\nmnt_id:\t24\n" + fdinfo);
  }
  void close_fd(pid_t pid, int fd, pid_t tid = 0) const {
    std::string d = tid ? task_dir(pid, tid) : "proc/" + std::to_string(pid) + "/";
    remove(d + "fd/" + std::to_string(fd));
    remove(d + "fdinfo/" + std::to_string(fd));
  }
  void exit_process(pid_t pid) const { remove("proc/" + std::to_string(pid)); }
  // The kernel's release (/proc/sys/kernel/osrelease).
  void kernel(const std::string& release) const {
    write("proc/sys/kernel/osrelease", release + "\n");
  }
  // The tree names this test's own processes, as the real procfs does (its "self" is this
  // PID): the holder scan then compares the fds of these PIDs with kcmp, on their real fds.
  // The tree's processes must be this process and its children, holding those fd numbers.
  void names_own_processes() const {
    remove("proc/self");
    std::filesystem::create_symlink(std::to_string(::getpid()), path("proc/self"));
  }

  // An amdgpu client's fdinfo on kernels 5.14 to 5.18, before drm-usage-stats: no drm- key, no
  // client id, memory in kB (KiB), engines as percentages.
  static std::string amdgpu_5_15_fdinfo(const std::string& pdev, unsigned pasid, uint64_t vram_kib,
                                        uint64_t gtt_kib) {
    return "pdev:\t" + pdev + "\npasid:\t" + std::to_string(pasid) + "\nvram mem:\t" +
           std::to_string(vram_kib) + " kB\ngtt mem:\t" + std::to_string(gtt_kib) +
           " kB\ncpu mem:\t0 kB\ngfx0:\t12.50%\n";
  }
  // An amdgpu client's fdinfo: drm-memory-* in KiB (the driver's own format).
  static std::string amdgpu_fdinfo(const std::string& pdev, uint64_t client_id, uint64_t vram_kib,
                                   uint64_t gtt_kib) {
    return "drm-driver:\tamdgpu\ndrm-client-id:\t" + std::to_string(client_id) + "\ndrm-pdev:\t" +
           pdev + "\npasid:\t32770\ndrm-memory-vram:\t" + std::to_string(vram_kib) +
           " KiB\ndrm-memory-gtt:\t" + std::to_string(gtt_kib) +
           " KiB\ndrm-memory-cpu:\t0 KiB\ndrm-engine-gfx:\t123456789 ns\n";
  }

 private:
  static std::string hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%04x", v);
    return buf;
  }
  static std::string task_dir(pid_t pid, pid_t tid) {
    return "proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/";
  }
  static std::string stat_line(pid_t pid, const std::string& comm, char state, pid_t ppid,
                               pid_t pgid, pid_t sid, unsigned flags, unsigned threads,
                               uint64_t start) {
    return std::to_string(pid) + " (" + comm + ") " + state + " " + std::to_string(ppid) + " " +
           std::to_string(pgid) + " " + std::to_string(sid) + " 0 -1 " + std::to_string(flags) +
           " 0 0 0 0 10 5 0 0 20 0 " + std::to_string(threads) + " 0 " + std::to_string(start) +
           " 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 "
           "0 0\n";
  }
  static std::string make_root() {
    char tmpl[] = "/tmp/gpureap-drm-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    return tmpl;
  }

  std::string root_ = make_root();  // before sys_, which lives in it
  test::SysTree sys_{root_ + "/sys"};
};

}  // namespace gpureap::testing
