#pragma once
// What the kernel vouches for about the cgroup a process's container claim comes from: who owns
// its directory and every directory above it. A user may create cgroups, with any name, only
// below a directory delegated to them (chowned: systemd does so for every logged-in user's
// user@UID.service, and for units with Delegate=yes), so a "docker-<id>.scope" owned by root all
// the way up was made by root, and one below a user's directory may be anyone's invention.
#include <string>

namespace gpureap::procfs {

struct CgroupOwnership {
  enum class Verdict {
    RootOwned,  // the directory and all above it are root's, and no user@*.service lies above
    Delegated,  // a user owns it or a directory above it, or it lies in a user@*.service
    Unseen,     // not under the cgroup filesystem here (another cgroup namespace, or gone)
  };
  Verdict verdict = Verdict::Unseen;
  std::string why;  // for Delegated and Unseen: what was found, for a person
};

// `cgroup_fs`: where the cgroup filesystem is mounted (<sys-root>/fs/cgroup). `hierarchy` and
// `cgroup` as core::ContainerInfo holds them: "" for cgroup v2 (the hierarchy at `cgroup_fs`, or
// at its unified/ on a hybrid layout), else the v1 controllers ("cpu,cpuacct", "name=systemd").
CgroupOwnership cgroup_ownership(const std::string& cgroup_fs, const std::string& hierarchy,
                                 const std::string& cgroup);

}  // namespace gpureap::procfs
