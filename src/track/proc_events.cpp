#include "track/proc_events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <utility>

namespace gpureap::track {
namespace {

// The socket's buffer holds the events between two reads; the kernel's default (a few hundred
// events) is overrun by one parallel build, so ask for more. Best effort: the cap is the
// system's, and an overrun is still reported.
constexpr int kReceiveBuffer = 4 << 20;

core::Error privilege_error() {
  return core::Error{"fork and exit events need CAP_NET_ADMIN", "run the daemon as root"};
}

core::Error socket_error(const char* step, int err) {
  if (err == EPERM || err == EACCES) return privilege_error();
  if (err == EPROTONOSUPPORT)
    return core::Error{"this kernel has no process events connector (CONFIG_PROC_EVENTS)",
                       "children of GPU holders are found by the periodic scan alone"};
  if (err == ECONNREFUSED)
    return core::Error{"the process events connector answers only in the host's network namespace",
                       "run the daemon on the host, not in a container"};
  return core::Error{
      std::string("cannot ") + step + " the process events connector: " + std::strerror(err), ""};
}

// Asks the kernel to start (LISTEN) or stop (IGNORE) sending this socket the proc connector's
// events. Its acknowledgement has `ack` one more than ours (0); the sequence number is not
// echoed (the kernel numbers all its messages per CPU), so no more tells ours from another's.
bool send_op(int fd, proc_cn_mcast_op op) {
  cn_msg header{};
  header.id.idx = CN_IDX_PROC;
  header.id.val = CN_VAL_PROC;
  header.len = sizeof op;  // the bare op: every kernel reads it (newer ones also take a filter)
  alignas(nlmsghdr) char buf[NLMSG_SPACE(sizeof(cn_msg) + sizeof op)] = {};
  auto* nl = reinterpret_cast<nlmsghdr*>(buf);
  nl->nlmsg_len = NLMSG_LENGTH(sizeof(cn_msg) + sizeof op);
  nl->nlmsg_type = NLMSG_DONE;
  std::memcpy(buf + NLMSG_HDRLEN, &header, sizeof header);
  std::memcpy(buf + NLMSG_HDRLEN + sizeof header, &op, sizeof op);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;  // nl_pid 0: the kernel
  return ::sendto(fd, buf, nl->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) ==
         static_cast<ssize_t>(nl->nlmsg_len);
}

// What one drain brought: the events, and the error the kernel acknowledged a LISTEN with
// (0: subscribed) when an acknowledgement was among the messages.
struct Drained {
  ProcEvents::Batch batch;
  std::optional<uint32_t> ack;
};

constexpr size_t kEventHead = offsetof(proc_event, event_data);

void take_event(const proc_event& ev, size_t len, Drained& out) {
  // The kernel's list of events grows with its versions: as a number, so that the events not
  // handled here (exec, uid, comm, ...) need no case each.
  switch (static_cast<unsigned>(ev.what)) {
    case proc_event::PROC_EVENT_FORK:
      // A thread is a fork too; only a new thread group is a new process.
      if (len >= kEventHead + sizeof ev.event_data.fork &&
          ev.event_data.fork.child_pid == ev.event_data.fork.child_tgid)
        out.batch.events.push_back({ProcEvent::Kind::Fork, ev.event_data.fork.child_tgid,
                                    ev.event_data.fork.parent_tgid, 0, 0, ev.timestamp_ns});
      break;
    case proc_event::PROC_EVENT_EXIT:
      // Every thread's exit is reported. The leader's is the process's unless another thread
      // lives on (see ProcEvent::Kind); the others' are kept too, since after a leader's
      // pthread_exit() the last of them is the process's end.
      if (len >= kEventHead + 2 * sizeof(pid_t) + sizeof(uint32_t)) {
        const pid_t thread = ev.event_data.exit.process_pid, tgid = ev.event_data.exit.process_tgid;
        out.batch.events.push_back(
            {thread == tgid ? ProcEvent::Kind::Exit : ProcEvent::Kind::ThreadExit, tgid, 0, thread,
             static_cast<int>(ev.event_data.exit.exit_code), ev.timestamp_ns});
      }
      break;
    case proc_event::PROC_EVENT_NONE:
      if (len >= kEventHead + sizeof ev.event_data.ack) out.ack = ev.event_data.ack.err;
      break;
    default:
      break;
  }
}

// One netlink message's payload: a cn_msg and the proc_event it carries. Anything that is not
// a whole message of the proc connector is ignored.
void take_message(const char* payload, size_t len, Drained& out) {
  cn_msg header{};
  if (len < sizeof header) return;
  std::memcpy(&header, payload, sizeof header);
  if (header.id.idx != CN_IDX_PROC || header.id.val != CN_VAL_PROC) return;
  if (header.len > len - sizeof header || header.len < kEventHead) return;
  // Copied out: the event sits at an offset the kernel does not align to its 64-bit field,
  // and a newer kernel's may be longer than this build's struct (the union grows).
  proc_event ev{};
  std::memcpy(&ev, payload + sizeof header, std::min<size_t>(header.len, sizeof ev));
  if (ev.what == proc_event::PROC_EVENT_NONE && header.ack != 1) return;
  take_event(ev, header.len, out);
}

// The netlink messages of one datagram.
void take_datagram(const char* buf, size_t len, Drained& out) {
  size_t at = 0;
  while (len - at >= sizeof(nlmsghdr)) {
    nlmsghdr nl{};
    std::memcpy(&nl, buf + at, sizeof nl);
    if (nl.nlmsg_len < NLMSG_HDRLEN || nl.nlmsg_len > len - at) return;
    if (nl.nlmsg_type != NLMSG_ERROR && nl.nlmsg_type != NLMSG_NOOP)
      take_message(buf + at + NLMSG_HDRLEN, nl.nlmsg_len - NLMSG_HDRLEN, out);
    at += NLMSG_ALIGN(nl.nlmsg_len);
    if (at > len) return;
  }
}

// Everything queued on the socket now; never blocks (the socket is non-blocking).
Drained drain(int fd) {
  Drained out;
  // Read before the events: each was reported before it, so a suspend after the read cannot
  // make an event read as later than it was.
  out.batch.boot_offset_ns = ProcEvents::boot_offset_now();
  alignas(nlmsghdr) char buf[8192];
  for (;;) {
    sockaddr_nl from{};
    socklen_t from_len = sizeof from;
    ssize_t n = ::recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOBUFS) {
      // The buffer overran and messages were dropped; the ones still queued are good.
      out.batch.overflow = true;
      continue;
    }
    if (n < 0) break;  // EAGAIN: empty
    // Only the kernel speaks for the connector.
    if (from_len == sizeof from && from.nl_pid == 0)
      take_datagram(buf, static_cast<size_t>(n), out);
  }
  return out;
}

std::optional<core::Error> subscribe(int fd) {
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &kReceiveBuffer, sizeof kReceiveBuffer) != 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kReceiveBuffer, sizeof kReceiveBuffer);
  sockaddr_nl self{};
  self.nl_family = AF_NETLINK;
  self.nl_groups = CN_IDX_PROC;  // nl_pid 0: the kernel assigns the port
  if (::bind(fd, reinterpret_cast<sockaddr*>(&self), sizeof self) != 0)
    return socket_error("bind to", errno);
  if (!send_op(fd, PROC_CN_MCAST_LISTEN)) return socket_error("subscribe to", errno);
  return std::nullopt;
}

// The kernel answers a LISTEN while handling the send, so its acknowledgement is queued by
// now. None at all means the request was dropped: the connector serves only the initial pid
// and user namespaces. (Another listener's acknowledgement queued in the same instant would
// pass for ours: a rare race this check lives with.)
std::optional<core::Error> ack_error(const Drained& drained) {
  if (!drained.ack) {
    if (drained.batch.overflow) return std::nullopt;  // lost in an overrun: cannot tell
    return core::Error{
        "the process events connector ignores a daemon in a container (it serves "
        "only the host's pid and user namespaces)",
        "run the daemon on the host"};
  }
  if (*drained.ack == EPERM) return privilege_error();
  if (*drained.ack != 0) return socket_error("subscribe to", static_cast<int>(*drained.ack));
  return std::nullopt;
}

}  // namespace

core::Result<ProcEvents> ProcEvents::open() {
  int fd = ::socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
  if (fd < 0) return socket_error("open", errno);
  if (auto err = subscribe(fd)) {
    ::close(fd);
    return *err;
  }
  // Events of other listeners' subscriptions may come before our acknowledgement: they are
  // kept for the first read().
  Drained drained = drain(fd);
  if (auto err = ack_error(drained)) {
    ::close(fd);
    return *err;
  }
  return ProcEvents(fd, std::move(drained.batch));
}

ProcEvents::ProcEvents(int fd, Batch pending) : fd_(fd), pending_(std::move(pending)) {}

ProcEvents::ProcEvents(ProcEvents&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), pending_(std::move(other.pending_)) {}

ProcEvents& ProcEvents::operator=(ProcEvents&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    pending_ = std::move(other.pending_);
  }
  return *this;
}

ProcEvents::~ProcEvents() {
  close();
}

void ProcEvents::close() {
  if (fd_ < 0) return;
  // The kernel counts listeners and stops building events when none is left; closing the
  // socket alone does not lower that count.
  send_op(fd_, PROC_CN_MCAST_IGNORE);
  ::close(fd_);
  fd_ = -1;
}

ProcEvents::Batch ProcEvents::read() {
  Batch batch = std::exchange(pending_, Batch{});
  if (fd_ < 0) return batch;
  Drained drained = drain(fd_);  // acknowledgements (another listener's) are no events
  // The pending events' offset, read earlier, is no more than the new ones': the least of the
  // two holds for all.
  if (batch.events.empty()) batch.boot_offset_ns = drained.batch.boot_offset_ns;
  batch.events.insert(batch.events.end(), drained.batch.events.begin(), drained.batch.events.end());
  batch.overflow = batch.overflow || drained.batch.overflow;
  return batch;
}

uint64_t ProcEvents::boot_offset_now() {
  auto ns = [](clockid_t clock) {
    timespec ts{};
    ::clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  // Monotonic read last: the difference is the offset at most a read's time too small, never
  // too large.
  const uint64_t boot = ns(CLOCK_BOOTTIME);
  const uint64_t monotonic = ns(CLOCK_MONOTONIC);
  return boot > monotonic ? boot - monotonic : 0;
}

uint64_t ProcEvents::Batch::boot_ticks(const ProcEvent& e) const {
  static const auto ns_per_tick = 1000000000ull / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  return (e.at_ns + boot_offset_ns) / ns_per_tick;
}

}  // namespace gpureap::track
