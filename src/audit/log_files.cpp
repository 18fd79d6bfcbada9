#include "audit/log_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

namespace gpureap::audit {
namespace {

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  // Some file systems cannot sync a directory; the entry is then as durable as they allow.
  return err == EINVAL ? 0 : err;
}

}  // namespace

std::string rotated_path(const std::string& path, unsigned n) {
  return path + "." + std::to_string(n);
}

std::vector<unsigned> rotated_numbers(const std::string& path) {
  std::vector<unsigned> out;
  DIR* dir = ::opendir(parent_of(path).c_str());
  if (!dir) return out;
  const std::string prefix = base_of(path) + ".";
  while (dirent* e = ::readdir(dir)) {
    std::string_view name(e->d_name);
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) continue;
    std::string_view digits = name.substr(prefix.size());
    unsigned n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && end == digits.data() + digits.size() && n > 0 && digits[0] != '0')
      out.push_back(n);
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

Rotation rotate_log_files(const std::string& path, unsigned keep) {
  Rotation result;
  keep = std::max(keep, 1u);  // keep 0 would mean deleting the live file: never
  auto fail = [&](std::string step) {
    result.error = errno;
    result.failed_step = std::move(step);
    return result;
  };
  for (unsigned n : rotated_numbers(path)) {
    if (n < keep) continue;
    std::string victim = rotated_path(path, n);
    if (::unlink(victim.c_str()) != 0 && errno != ENOENT) return fail("remove " + victim);
    result.removed.push_back(victim);
  }
  for (unsigned n = keep - 1; n >= 1; --n) {
    std::string from = rotated_path(path, n);
    if (::rename(from.c_str(), rotated_path(path, n + 1).c_str()) != 0 && errno != ENOENT)
      return fail("rename " + from + " to " + rotated_path(path, n + 1));
  }
  if (::rename(path.c_str(), rotated_path(path, 1).c_str()) != 0 && errno != ENOENT)
    return fail("rename " + path + " to " + rotated_path(path, 1));
  if (int err = fsync_directory(parent_of(path)); err != 0) {
    errno = err;
    return fail("sync the directory of " + path);
  }
  return result;
}

int make_parent_directories(const std::string& path) {
  std::string dir = parent_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (errno != ENOENT) return errno;
  if (dir == "/" || dir == ".") return ENOENT;
  if (int err = make_parent_directories(dir); err != 0) return err;
  if (::mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) return errno;
  return fsync_directory(parent_of(dir));
}

int sync_parent_directory(const std::string& path) {
  return fsync_directory(parent_of(path));
}

}  // namespace gpureap::audit
