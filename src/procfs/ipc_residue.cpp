#include "procfs/ipc_residue.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>
#include <sstream>

#include "procfs/file_read.h"
#include "procfs/parsers.h"
#include "procfs/thread_group.h"

namespace gpureap::procfs {
namespace {

using FileId = std::pair<dev_t, ino_t>;

bool alive(const std::vector<pid_t>& live, pid_t pid) {
  return pid > 0 && std::binary_search(live.begin(), live.end(), pid);
}

// Marks the /dev/shm files a task holds (fd) or maps (maps lines carry dev and inode); `dir`
// is "PID" or "PID/task/TID". False when its tables could not be read. `mapped`: its maps
// named a mapping.
bool mark_used_by(int proc_fd, const std::string& dir, std::set<FileId>& candidates,
                  std::set<FileId>& used, bool& mapped) {
  bool readable = true;
  int dfd = ::openat(proc_fd, (dir + "/fd").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    if (DIR* d = ::fdopendir(dfd)) {
      char link[512];
      while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        ssize_t n = ::readlinkat(dfd, e->d_name, link, sizeof link - 1);
        if (n <= 0 || std::string_view(link, n).find("/shm/") == std::string_view::npos) continue;
        struct stat st {};
        if (::fstatat(dfd, e->d_name, &st, 0) == 0 && candidates.count({st.st_dev, st.st_ino}))
          used.insert({st.st_dev, st.st_ino});
      }
      ::closedir(d);
    } else {
      ::close(dfd);
    }
  } else if (errno == EACCES || errno == EPERM) {
    readable = false;
  }
  auto maps = read_file_at(proc_fd, dir + "/maps", 64u << 20);  // a line per mapping
  if (maps.denied()) return false;
  mapped = !maps.data.empty();
  std::istringstream in(maps.data);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("/shm/") == std::string::npos) continue;
    unsigned maj = 0, min = 0;
    unsigned long long ino = 0;
    // address perms offset dev inode path
    if (std::sscanf(line.c_str(), "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) != 3) continue;
    FileId id{::makedev(maj, min), static_cast<ino_t>(ino)};
    if (candidates.count(id)) used.insert(id);
  }
  return readable;
}

// The same for a process: through a live thread where its main thread has exited, since
// the leader then shows no fds and no maps while its threads still share both.
bool mark_used(int proc_fd, pid_t pid, std::set<FileId>& candidates, std::set<FileId>& used) {
  bool mapped = false;
  bool readable = mark_used_by(proc_fd, std::to_string(pid), candidates, used, mapped);
  if (readable && !mapped)  // a kernel thread, a zombie, or a leader that has exited
    if (auto t = live_thread(proc_fd, pid))
      readable = mark_used_by(proc_fd, std::to_string(pid) + "/task/" + std::to_string(t->tid),
                              candidates, used, mapped);
  return readable;
}

}  // namespace

std::vector<SysvShmSegment> parse_sysvipc_shm(std::string_view text) {
  std::vector<SysvShmSegment> out;
  std::istringstream in{std::string(text)};
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    SysvShmSegment s;
    unsigned perms = 0;
    unsigned long long size = 0;
    if (std::sscanf(line.c_str(), "%lld %lld %o %llu %d %d %lu %u", &s.key, &s.shmid, &perms, &size,
                    &s.creator_pid, &s.last_pid, &s.attached, &s.uid) != 8)
      continue;
    s.size_bytes = size;
    out.push_back(s);
  }
  return out;
}

IpcResidue find_ipc_residue(const ProcFs& proc, const std::string& dev_root,
                            const std::vector<pid_t>& live, long min_age_s) {
  IpcResidue out;
  auto shm = read_file_at(proc.dirfd(), "sysvipc/shm");
  if (shm.ok())
    for (const auto& s : parse_sysvipc_shm(shm.data))
      if (s.attached == 0 && !alive(live, s.creator_pid) && !alive(live, s.last_pid))
        out.segments.push_back(s);

  std::string shm_dir = dev_root + "/shm";
  std::vector<ShmFile> files;
  std::set<FileId> candidates;
  std::vector<FileId> ids;
  if (DIR* d = ::opendir(shm_dir.c_str())) {
    time_t now = ::time(nullptr);
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string path = shm_dir + "/" + e->d_name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (now - st.st_mtime < min_age_s) continue;
      files.push_back({path, static_cast<uint64_t>(st.st_size), st.st_uid});
      ids.push_back({st.st_dev, st.st_ino});
      candidates.insert(ids.back());
    }
    ::closedir(d);
  }
  if (files.empty()) return out;
  std::set<FileId> used;
  std::set<uid_t> running;  // the users live processes run as
  for (pid_t pid : live) {
    if (!mark_used(proc.dirfd(), pid, candidates, used)) out.uninspected.push_back(pid);
    auto status = read_file_at(proc.dirfd(), std::to_string(pid) + "/status");
    auto fields = parse_status(status.data);
    for (const auto& id : {fields.uid, fields.euid})
      if (id) running.insert(*id);
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (!used.count(ids[i])) {
      out.files.push_back(files[i]);
      out.files.back().owner_runs = running.count(files[i].uid) > 0;
    }
  return out;
}

}  // namespace gpureap::procfs
