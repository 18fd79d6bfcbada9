#include "procfs/cgroup_owner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace gpureap::procfs {
namespace {

using Verdict = CgroupOwnership::Verdict;

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t slash = path.find('/', begin);
    if (slash == std::string::npos) slash = path.size();
    if (slash > begin) out.push_back(path.substr(begin, slash - begin));
    begin = slash + 1;
  }
  return out;
}

// systemd's per-user manager, whose cgroup it hands to the user: "user@1000.service".
bool user_manager(const std::string& c) {
  return c.starts_with("user@") && c.ends_with(".service");
}

// The directory the hierarchy is mounted at, relative to the cgroup filesystem's folder.
std::optional<std::string> hierarchy_dir(const std::string& cgroup_fs, const std::string& h) {
  if (h.empty()) {
    // cgroup v2: mounted at the folder itself, or at unified/ beside v1's controllers.
    struct stat st {};
    return ::stat((cgroup_fs + "/cgroup.controllers").c_str(), &st) == 0 ? cgroup_fs
                                                                         : cgroup_fs + "/unified";
  }
  std::string name = h.starts_with("name=") ? h.substr(5) : h;
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return std::nullopt;
  return cgroup_fs + "/" + name;
}

CgroupOwnership unseen(std::string why) {
  return {Verdict::Unseen, std::move(why)};
}

}  // namespace

CgroupOwnership cgroup_ownership(const std::string& cgroup_fs, const std::string& hierarchy,
                                 const std::string& cgroup) {
  if (cgroup.empty())
    return {Verdict::Delegated,
            "its /proc/PID/cgroup lists a hierarchy twice: a cgroup's name holds a line break"};
  auto comps = components(cgroup);
  // Names first: they need no file system, so they hold in another cgroup namespace too.
  for (const auto& c : comps)
    if (user_manager(c))
      return {Verdict::Delegated, "cgroup " + cgroup + " lies in " + c +
                                      ", the subtree systemd delegates to that user"};
  // Seen from inside a cgroup namespace, a cgroup outside it starts with "..".
  if (!comps.empty() && comps.front() == "..")
    return unseen("cgroup " + cgroup + " lies outside gpureap's cgroup namespace");
  for (const auto& c : comps)
    if (c == "." || c == "..") return unseen("cgroup " + cgroup + " is not a plain path");
  auto dir = hierarchy_dir(cgroup_fs, hierarchy);
  if (!dir) return unseen("no cgroup hierarchy is mounted for \"" + hierarchy + "\"");
  int fd = ::open(dir->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return unseen("cannot open " + *dir + ": " + std::strerror(errno));
  // Top down, so a delegated subtree is named by its top, the directory its user was given.
  CgroupOwnership out{Verdict::RootOwned, ""};
  std::string rel = ".";
  for (size_t i = 0; i <= comps.size() && out.verdict == Verdict::RootOwned; ++i) {
    if (i > 0) rel += "/" + comps[i - 1];
    struct stat st {};
    const std::string shown = i == 0 ? "/" : rel.substr(1);
    if (::fstatat(fd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      out = unseen("no cgroup " + shown + " under " + *dir +
                   " (gpureap sees another cgroup namespace, or the cgroup is gone)");
    else if (st.st_uid != 0)
      out = {Verdict::Delegated, "cgroup " + shown + " belongs to uid " +
                                     std::to_string(st.st_uid) +
                                     ", who may create and name any cgroup below it"};
  }
  ::close(fd);
  return out;
}

}  // namespace gpureap::procfs
