#pragma once
// A machine with containers, as files around the test's real processes, in a temporary root
// (the runtime root) that uid 65534 may enter:
//   sys/fs/cgroup  a cgroup v2 hierarchy as the kernel lays it out: cgroup.controllers at its
//                  top, cgroup.procs in every cgroup, each directory owned by whoever made it;
//   proc           a procfs whose processes are real ones (every file a link to /proc/PID's)
//                  but for their cgroup file, which names the cgroup of this tree they entered;
//   dev            stand-in GPU files anyone may open (nvidia0, nvidia1, nvidiactl);
//   var/, run/     the container runtimes' state, where each runtime keeps it.
// For the unit and the integration tests; the test must run as root to hand a cgroup to a user.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpureap::testing {

// The cgroups of a forgery: the victim's docker container, made by root, and a cgroup of the
// same name that uid 65534 makes in the subtree systemd hands every logged-in user.
namespace forgery {
inline const std::string kId = "9c3f2d8e1a7b4c6d5e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d";
inline const std::string kShort = kId.substr(0, 12);
inline const std::string kScope = "docker-" + kId + ".scope";
inline const std::string kVictim = "/system.slice/" + kScope;
inline constexpr uid_t kForger = 65534;
inline const std::string kUserManager = "/user.slice/user-65534.slice/user@65534.service";
inline const std::string kForged = kUserManager + "/app.slice/" + kScope;
}  // namespace forgery

class ContainerMachine {
 public:
  ContainerMachine() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpureap-cm-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
    ::chmod(root_.c_str(), 0755);
    std::filesystem::create_directories(path("proc"));
    for (const char* f : {"stat", "devices", "sys", "uptime", "meminfo", "loadavg"})
      std::filesystem::create_symlink(std::string("/proc/") + f, path("proc/") + f);
    for (const char* name : {"nvidia0", "nvidia1", "nvidiactl"})
      write("dev/" + std::string(name), "");
    make_cgroup_tree(cgroup_fs(), "/");
    write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
  }
  ~ContainerMachine() {
    for (pid_t pid : spawned_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  ContainerMachine(const ContainerMachine&) = delete;
  ContainerMachine& operator=(const ContainerMachine&) = delete;

  const std::string& root() const { return root_; }
  std::string proc_root() const { return path("proc"); }
  std::string dev_root() const { return path("dev"); }
  std::string sys_root() const { return path("sys"); }
  std::string cgroup_fs() const { return path("sys/fs/cgroup"); }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  void write(const std::string& rel, const std::string& text) const {
    auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    ::chmod(p.c_str(), 0644);
    for (auto dir = p.parent_path(); dir.string().size() > root_.size(); dir = dir.parent_path())
      ::chmod(dir.c_str(), 0755);
  }

  // Makes the cgroup `cgroup` ("/system.slice/docker-<id>.scope") below `cgroup_fs`, and the
  // ones above it that are missing, as the calling user: the kernel gives a new cgroup's
  // directory and files to whoever made it. A child that became another user calls it too.
  static void make_cgroup_tree(const std::string& cgroup_fs, const std::string& cgroup) {
    auto add_procs = [](const std::filesystem::path& d) {
      if (!std::filesystem::exists(d / "cgroup.procs")) std::ofstream(d / "cgroup.procs");
    };
    std::filesystem::path dir = cgroup_fs;
    std::filesystem::create_directories(dir);
    add_procs(dir);
    for (const auto& part : std::filesystem::path(cgroup).relative_path()) {
      dir /= part;
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw std::runtime_error("cannot make cgroup " + dir.string());
      add_procs(dir);
    }
  }
  // Root's cgroup; with `delegate_to`, handed to that user as systemd hands user@UID.service
  // (the directory and its cgroup.procs chowned), so the user may make cgroups below it.
  void make_cgroup(const std::string& cgroup, std::optional<uid_t> delegate_to = {}) const {
    make_cgroup_tree(cgroup_fs(), cgroup);
    if (!delegate_to) return;
    const std::string dir = cgroup_fs() + cgroup;
    if (::chown(dir.c_str(), *delegate_to, *delegate_to) != 0 ||
        ::chown((dir + "/cgroup.procs").c_str(), *delegate_to, *delegate_to) != 0)
      throw std::runtime_error("cannot hand cgroup " + cgroup + " to its user (not root?)");
  }

  // `pid` enters `cgroup` of this tree: its PID is added to the cgroup's cgroup.procs, and the
  // procfs root shows the process with a cgroup file naming that cgroup (on `hierarchy`: "0::"
  // for cgroup v2, as the kernel writes it).
  void enter(pid_t pid, const std::string& cgroup, const std::string& hierarchy = "0::") const {
    std::ofstream(cgroup_fs() + cgroup + "/cgroup.procs", std::ios::app) << pid << "\n";
    const std::string dir = path("proc/" + std::to_string(pid));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid))) {
      if (e.path().filename() == "cgroup") continue;
      std::filesystem::create_symlink(e.path(), dir + "/" + e.path().filename().string());
    }
    std::ofstream(dir + "/cgroup") << hierarchy << cgroup << "\n";
  }

  // A real process, killed and reaped with the machine: it runs `body` (becomes another user,
  // makes a cgroup, forks ...), opens dev/<device> (none when empty) and waits. Returns once
  // it has; throws when the body or the open failed.
  pid_t spawn(const std::function<void()>& body, const std::string& device = "nvidia0") {
    pid_t pid = fork_ready(body, device.empty() ? "" : path("dev/" + device));
    spawned_.push_back(pid);
    return pid;
  }
  // A process the test made some other way (a spawned body's child): killed with the machine.
  void adopt(pid_t pid) { spawned_.push_back(pid); }
  // The fork behind spawn(), for a body to fork children of its own; `device_path` in full.
  static pid_t fork_ready(const std::function<void()>& body, const std::string& device_path) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(fds[0]);
      // The child is a copy of the test program: whatever the body throws ends it here, never
      // in the test framework's own code, which would go on running tests in the child.
      try {
        body();
      } catch (...) {
        ::_exit(1);
      }
      if (!device_path.empty() && ::open(device_path.c_str(), O_RDONLY) < 0) ::_exit(1);
      if (::write(fds[1], "1", 1) != 1) ::_exit(1);
      ::close(fds[1]);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    char ok = 0;
    ssize_t n = ::read(fds[0], &ok, 1);
    ::close(fds[0]);
    if (n != 1) throw std::runtime_error("the spawned process failed before it was ready");
    return pid;
  }
  // Whether `uid` may reach `dir`: a folder above it may be one only root may enter (the root
  // of a chroot made with mktemp -d), where another user's process of a scene cannot run.
  static bool user_reaches(uid_t uid, const std::string& dir) {
    pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
      become(uid);
      ::_exit(::access(dir.c_str(), X_OK) == 0 ? 0 : 1);
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  // In a spawned body: become `uid` (its own group, no others) for good, as a user's login does.
  static void become(uid_t uid) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
        ::setresuid(uid, uid, uid) != 0)
      ::_exit(1);
  }

  // docker's state of a container (var/lib/docker/containers/<id>/config.v2.json): its name,
  // cri-dockerd's pod labels when `pod` is "namespace/name", and its init's PID while it runs.
  void docker_container(const std::string& id, const std::string& name, pid_t init,
                        const std::string& pod = "") const {
    std::string labels;
    if (auto slash = pod.find('/'); slash != std::string::npos)
      labels = R"("io.kubernetes.pod.namespace":")" + pod.substr(0, slash) +
               R"(","io.kubernetes.pod.name":")" + pod.substr(slash + 1) +
               R"(","io.kubernetes.container.name":")" + name + R"(")";
    write("var/lib/docker/containers/" + id + "/config.v2.json",
          R"({"ID":")" + id + R"(","Name":"/)" + name + R"(","State":{"Running":)" +
              (init > 0 ? "true" : "false") + R"(,"Pid":)" + std::to_string(init > 0 ? init : 0) +
              R"(},"Config":{"Labels":{)" + labels + "}}}");
  }

 private:
  std::string root_;
  std::vector<pid_t> spawned_;
};

}  // namespace gpureap::testing
