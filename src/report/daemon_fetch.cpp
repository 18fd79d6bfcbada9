#include "report/daemon_fetch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/deadline_io.h"
#include "core/duration.h"

namespace gpureap::report {
namespace {

using Clock = base::DeadlineClock;
using base::send_all;
using base::wait_for;

// A daemon listening on every address is reached on loopback.
std::string connect_host(const std::string& host) {
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

std::string first_line(const std::string& body) {
  auto line = body.substr(0, body.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "…" : line;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

enum class Outcome { Ok, Refused, Late };

Outcome connect_to(const addrinfo& a, Clock::time_point deadline, Fd& out) {
  Fd fd(::socket(a.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return Outcome::Refused;
  if (::connect(fd.get(), a.ai_addr, a.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return Outcome::Refused;
    if (!wait_for(fd.get(), POLLOUT, deadline)) return Outcome::Late;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
      return Outcome::Refused;
  }
  out = std::move(fd);
  return Outcome::Ok;
}

// An address as the kernel's /proc/net/tcp{,6} print it: the raw 32-bit words in hex.
std::string words_hex(const void* bytes, size_t n) {
  std::string out;
  char buf[9];
  for (size_t i = 0; i < n; i += 4) {
    uint32_t w;
    std::memcpy(&w, static_cast<const char*>(bytes) + i, 4);
    std::snprintf(buf, sizeof buf, "%08X", w);
    out += buf;
  }
  return out;
}

std::string port_hex(uint16_t network_order) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "%04X", ntohs(network_order));
  return buf;
}

// The forms an endpoint takes in /proc/net/tcp (IPv4) and /proc/net/tcp6 (IPv6, and IPv4
// connections to dual-stack sockets, v4-mapped).
struct Endpoint {
  std::optional<std::string> v4, v6;
};

Endpoint endpoint_of(const sockaddr_storage& s) {
  Endpoint e;
  if (s.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(s);
    e.v4 = words_hex(&a.sin_addr, 4) + ":" + port_hex(a.sin_port);
    unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::memcpy(mapped + 12, &a.sin_addr, 4);
    e.v6 = words_hex(mapped, 16) + ":" + port_hex(a.sin_port);
  } else if (s.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(s);
    e.v6 = words_hex(&a.sin6_addr, 16) + ":" + port_hex(a.sin6_port);
  }
  return e;
}

// The uid of the socket whose local end is `local` and remote end `remote` in `table`.
std::optional<uid_t> find_uid(const char* table, const std::string& local,
                              const std::string& remote) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sl, l, r, st, queues, timer, retransmits, uid;
    if (!(fields >> sl >> l >> r >> st >> queues >> timer >> retransmits >> uid)) continue;
    if (l != local || r != remote) continue;
    unsigned long v = 0;
    auto [p, ec] = std::from_chars(uid.data(), uid.data() + uid.size(), v);
    if (ec == std::errc()) return static_cast<uid_t>(v);
  }
  return std::nullopt;
}

bool is_loopback(const sockaddr_storage& s) {
  if (s.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in&>(s).sin_addr.s_addr) >> 24) == 127;
  if (s.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(s).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

// A query parameter's value, percent-encoded (RFC 3986 unreserved characters stay).
std::string encode_param(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
      continue;
    }
    char buf[4];
    std::snprintf(buf, sizeof buf, "%%%02X", c);
    out += buf;
  }
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The value of header `name` (lower case) in an answer's head, if there.
std::optional<std::string> header(const std::string& head, const std::string& name) {
  std::istringstream lines(head);
  std::string line;
  std::getline(lines, line);  // the status line
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto colon = line.find(':');
    if (colon == std::string::npos || lower(line.substr(0, colon)) != name) continue;
    auto value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return std::nullopt;
}

std::optional<size_t> content_length(const std::string& head) {
  auto v = header(head, "content-length");
  if (!v) return std::nullopt;
  size_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc()) return std::nullopt;
  return n;
}

bool chunked(const std::string& head) {
  auto v = header(head, "transfer-encoding");
  return v && lower(*v).find("chunked") != std::string::npos;
}

// "HTTP/1.1 200 OK": 200; 0 when the status line is not one.
int status_of(const std::string& text) {
  if (text.rfind("HTTP/", 0) != 0) return 0;
  auto space = text.find(' ');
  if (space == std::string::npos || space + 4 > text.size()) return 0;
  int status = 0;
  auto [p, ec] = std::from_chars(text.data() + space + 1, text.data() + space + 4, status);
  return ec == std::errc() ? status : 0;
}

}  // namespace

bool peer_is_local(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;
  if (is_loopback(peer)) return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return true;  // cannot tell: treat it as this machine's
  bool local = false;
  for (auto* i = list; i && !local; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != peer.ss_family) continue;
    if (peer.ss_family == AF_INET)
      local = std::memcmp(&reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr,
                          &reinterpret_cast<const sockaddr_in&>(peer).sin_addr, 4) == 0;
    else if (peer.ss_family == AF_INET6)
      local = std::memcmp(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr,
                          &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr, 16) == 0;
  }
  ::freeifaddrs(list);
  return local;
}

std::optional<uid_t> local_server_uid(int fd) {
  sockaddr_storage ours{}, peer{};
  socklen_t a = sizeof ours, b = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ours), &a) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &b) != 0)
    return std::nullopt;
  // The server's end of this very connection: local = the peer, remote = us. It is cloned from
  // the listening socket, whose owner it keeps, whether accept() took it yet or not.
  auto server = endpoint_of(peer), client = endpoint_of(ours);
  if (server.v4 && client.v4)
    if (auto uid = find_uid("/proc/net/tcp", *server.v4, *client.v4)) return uid;
  if (server.v6 && client.v6)
    if (auto uid = find_uid("/proc/net/tcp6", *server.v6, *client.v6)) return uid;
  return std::nullopt;
}

core::Result<std::string> fetch_history(const FetchRequest& r) {
  const auto deadline = Clock::now() + r.timeout;
  const std::string host = connect_host(r.daemon.host);
  const std::string where = exporter::ListenAddress{host, r.daemon.port}.text();
  const std::string offline = "or save /api/v1/history to a file and pass --from FILE";
  const std::string secs = core::format_duration(r.timeout);
  if (r.daemon.port == 0)
    return core::Error{
        "the daemon's listen address has port 0 (any free port): the port it got "
        "is only in its log",
        "pass --daemon HOST:PORT with the port the daemon logged, " + offline};
  auto unreachable = [&] {
    return core::Error{
        "cannot reach the daemon at " + where + " (nothing listens, or it is unreachable)",
        "start it (gpureap daemon, or systemctl start gpureap), pass --daemon "
        "HOST:PORT, " +
            offline};
  };
  auto late = [&] {
    return core::Error{"the daemon at " + where + " did not answer within " + secs,
                       "it may be overloaded; try again, " + offline};
  };

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(r.daemon.port);
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || !found)
    return unreachable();
  Fd fd;
  bool timed_out = false;
  for (auto* a = found; a && fd.get() < 0; a = a->ai_next) {
    auto outcome = connect_to(*a, deadline, fd);
    timed_out = timed_out || outcome == Outcome::Late;
    if (outcome == Outcome::Late) break;
  }
  ::freeaddrinfo(found);
  if (fd.get() < 0) return timed_out ? late() : unreachable();

  // The token is the daemon's: on this machine, only a socket of the daemon's user gets it. A
  // user who took the port while the daemon was down gets no request at all.
  if (r.token && peer_is_local(fd.get())) {
    std::optional<uid_t> uid;
    // The server's end appears once the handshake's last packet is through (at once, on
    // loopback; a moment is allowed).
    for (int i = 0; i < 20 && !(uid = local_server_uid(fd.get())); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto& ok = r.token_holders;
    if (!uid || std::find(ok.begin(), ok.end(), *uid) == ok.end())
      return core::Error{
          "the port " + where + " on this machine is not held by the daemon" +
              (uid ? " (a socket of uid " + std::to_string(*uid) + " holds it)"
                   : std::string(" (its owner cannot be told)")) +
              ": the bearer token was not sent",
          "start the daemon (systemctl start gpureap) and find who holds the port (ss -ltnp "
          "'sport = :" +
              port + "'), " + offline};
  }

  std::string query = "since=" + encode_param(r.since);
  if (r.until) query += "&until=" + encode_param(*r.until);
  std::string request = "GET /api/v1/history?" + query + " HTTP/1.0\r\nHost: " + where +
                        "\r\nUser-Agent: gpureap\r\n" +
                        "Accept: application/json\r\nConnection: close\r\n";
  if (r.token) request += "Authorization: Bearer " + *r.token + "\r\n";
  request += "\r\n";
  if (!send_all(fd.get(), request, deadline))
    return Clock::now() >= deadline ? late() : unreachable();

  // The answer, bounded: the head, then the body up to kMaxHistoryBytes, by the deadline.
  std::string text;
  size_t head_end = std::string::npos;
  std::optional<size_t> length;
  char buf[65536];
  for (;;) {
    if (head_end != std::string::npos && length && text.size() - head_end >= *length) break;
    if (!wait_for(fd.get(), POLLIN, deadline)) return late();
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return unreachable();
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos) {
      auto end = text.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (text.size() > kMaxHeadBytes)
          return core::Error{where + " answered with a head longer than " +
                                 std::to_string(kMaxHeadBytes) + " bytes: not a gpureap daemon",
                             "check --daemon, " + offline};
        continue;
      }
      head_end = end + 4;
      length = content_length(text.substr(0, end));
      if (chunked(text.substr(0, end)))
        return core::Error{where + " answered in chunks: not a gpureap daemon",
                           "check --daemon, " + offline};
    }
    if (text.size() - head_end > kMaxHistoryBytes || (length && *length > kMaxHistoryBytes))
      return core::Error{"the daemon at " + where + " answered with more than " +
                             std::to_string(kMaxHistoryBytes >> 20) + " MiB: refused unread",
                         "ask for a shorter span with --since, " + offline};
  }
  if (head_end == std::string::npos)
    return core::Error{"the daemon at " + where + " closed the connection without an answer",
                       "try again, " + offline};
  const int status = status_of(text);
  std::string body = text.substr(head_end);
  if (length && body.size() < *length)
    return core::Error{"the daemon at " + where + " closed the connection mid-answer",
                       "try again, " + offline};
  if (length) body.resize(*length);
  if (status == 401)
    return core::Error{
        "the daemon at " + where + " asks for its bearer token" +
            (r.token ? std::string(", and refused the one given") : ""),
        "run as a user who can read the daemon's auth_token_file (often root), " + offline};
  if (status != 200)
    return core::Error{
        "the daemon at " + where + " answered " + std::to_string(status) + ": " + first_line(body),
        status == 503 ? "it has not sampled yet; try again in a moment" : offline};
  return body;
}

}  // namespace gpureap::report
