#include "daemon/local_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace gpureap::daemon {
namespace {

constexpr int kBacklog = 16;  // clients beyond it wait in connect(), bounded by their timeout

core::Error failure(const std::string& path, const std::string& what, const std::string& hint) {
  return {"local socket " + path + ": " + what, hint};
}

core::Error errno_failure(const std::string& path, const std::string& what) {
  return failure(path, what + ": " + std::strerror(errno),
                 "set local_socket to a path the daemon may create, or \"\" for none");
}

// The directory the socket goes in; made (0755, so clients can reach a socket whose own mode
// lets them) only when missing, never changed when it exists.
std::optional<core::Error> ensure_parent(const std::string& path) {
  std::string parent = path.substr(0, path.rfind('/'));
  if (parent.empty()) return std::nullopt;  // a socket in /
  struct stat st {};
  if (::stat(parent.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return std::nullopt;
    return failure(path, parent + " is not a directory", "set local_socket to another path");
  }
  if (errno != ENOENT) return errno_failure(path, "cannot reach " + parent);
  if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST)
    return errno_failure(path, "cannot create " + parent);
  (void)::chmod(parent.c_str(), 0755);  // whatever the umask
  return std::nullopt;
}

// What is at the path already: nothing, or a socket no process answers on (removed). A file
// that is not a socket may be anything (a typo in the config naming a real file): never
// deleted.
std::optional<core::Error> clear_stale(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return errno_failure(path, "cannot inspect it");
  }
  if (!S_ISSOCK(st.st_mode))
    return failure(path, "exists and is not a socket; gpureap does not remove it",
                   "remove it yourself, or set local_socket to another path");
  int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (probe < 0) return errno_failure(path, "cannot make a socket");
  sockaddr_un a = *local_address(path);  // bind_local_socket checked the length
  int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  int err = errno;
  ::close(probe);
  // A full backlog (EAGAIN) is a live server too.
  if (rc == 0 || err == EAGAIN)
    return failure(path, "another process serves it (a second gpureap daemon?)",
                   "stop that one, or give this daemon another local_socket");
  if (err != ECONNREFUSED) {
    errno = err;
    return errno_failure(path, "cannot tell whether it is in use");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return errno_failure(path, "cannot remove the stale socket");
  return std::nullopt;
}

}  // namespace

core::Result<BoundSocket> bind_local_socket(const std::string& path) {
  if (path.empty() || path.front() != '/')
    return failure(path, "not an absolute path", "set local_socket to an absolute path");
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return failure(path, "longer than a Unix socket's path may be", "choose a shorter path");
  if (auto e = ensure_parent(path)) return *e;
  if (auto e = clear_stale(path)) return *e;
  BoundSocket s;
  s.path = path;
  s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s.fd < 0) return errno_failure(path, "cannot make a socket");
  auto fail = [&](const std::string& what, bool bound) {
    core::Error e = errno_failure(path, what);
    ::close(s.fd);
    if (bound) ::unlink(path.c_str());
    return e;
  };
  sockaddr_un a = *local_address(path);
  if (::bind(s.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    return fail("cannot bind", false);
  // Before listen() no client can connect, so no one ever reaches it with a looser mode.
  if (::chmod(path.c_str(), 0600) != 0) return fail("cannot chmod it to 0600", true);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail("cannot inspect it", true);
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  if (::listen(s.fd, kBacklog) != 0) return fail("cannot listen", true);
  return s;
}

void close_local_socket(BoundSocket& s) {
  if (s.fd < 0) return;
  ::close(s.fd);
  s.fd = -1;
  struct stat st {};
  if (::lstat(s.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == s.dev &&
      st.st_ino == s.ino)
    ::unlink(s.path.c_str());
}

std::optional<sockaddr_un> local_address(const std::string& path) {
  sockaddr_un a{};
  if (path.empty() || path.size() >= sizeof a.sun_path) return std::nullopt;
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  return a;
}

bool peer_is_root_or_self(int fd, uid_t* uid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  if (uid) *uid = cred.uid;
  return cred.uid == 0 || cred.uid == ::geteuid();
}

bool peer_shares_pid_namespace(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) return false;
  // The peer waits for its answer, so its PID is its own while this reads. Both links are
  // read from the kernel's /proc, whatever --proc-root the daemon reads processes from: the
  // credentials' PID is in the namespace this process lives in.
  auto link = [](const std::string& path) -> std::optional<std::string> {
    char buf[64];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  };
  const auto peers = link("/proc/" + std::to_string(cred.pid) + "/ns/pid");
  const auto ours = link("/proc/self/ns/pid");
  return peers && ours && *peers == *ours;
}

}  // namespace gpureap::daemon
