#include "backend/drm/client_table.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>

#include "procfs/file_read.h"

namespace gpureap::backend::drm {
namespace {

// An fdinfo is a few hundred bytes; a driver with many engines and regions writes a few KiB.
constexpr size_t kFdinfoLimit = 64u << 10;
// Parse errors kept per scan: one garbled driver must not flood the warnings.
constexpr size_t kMaxErrors = 8;

std::string fd_text(const FdRef& ref) {
  return "PID " + std::to_string(ref.pid) + " fd " + std::to_string(ref.fd);
}

std::string node_text(dev_t node) {
  return std::to_string(::major(node)) + ":" + std::to_string(::minor(node));
}

// An engine's busy time may briefly go down as the driver folds in a context that ended: the
// figure shown never does.
void keep_engine_maxima(DrmClient& now, const DrmClient& before) {
  for (auto& e : now.engines) {
    auto old = std::find_if(before.engines.begin(), before.engines.end(),
                            [&](const EngineUse& b) { return b.name == e.name; });
    if (old != before.engines.end() && old->busy_ns && e.busy_ns)
      e.busy_ns = std::max(*e.busy_ns, *old->busy_ns);
  }
}

}  // namespace

ClientTable::ClientTable(const std::string& proc_root)
    : proc_dirfd_(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}

ClientTable::~ClientTable() {
  if (proc_dirfd_ >= 0) ::close(proc_dirfd_);
}

void ClientTable::watch(std::set<dev_t> nodes) {
  std::lock_guard lock(mutex_);
  nodes_ = std::move(nodes);
}

std::optional<DrmClient> ClientTable::read(int proc_dirfd, const FdRef& ref,
                                           std::string& error) const {
  std::string path = std::to_string(ref.pid) + "/fdinfo/" + std::to_string(ref.fd);
  auto file = procfs::read_file_at(proc_dirfd, path, kFdinfoLimit);
  if (!file.ok()) {
    // Gone since the fd was matched (the process exited, the fd was closed): not an error.
    if (!file.vanished()) error = fd_text(ref) + ": fdinfo could not be read";
    return std::nullopt;
  }
  if (file.truncated) {
    error = fd_text(ref) + ": fdinfo is longer than " + std::to_string(kFdinfoLimit >> 10) +
            " KiB, more than any driver writes";
    return std::nullopt;
  }
  // A DRM file of a driver (or kernel) that keeps no usage stats has no drm- keys at all: it
  // is a holder the backend knows nothing more of, not a malformed file.
  if (file.data.find("drm-driver:") == std::string::npos) return std::nullopt;
  auto client = parse_fdinfo(file.data);
  if (!client) {
    error = fd_text(ref) + ": " + client.error().message;
    return std::nullopt;
  }
  return std::move(*client);
}

ClientTable::Key ClientTable::key_of(const DrmClient& c, dev_t node, const FdRef& ref) {
  // drm-client-id is unique per device when drm-pdev names it; without pdev, the node names the
  // device. A kernel too old to print an id (amdgpu before 5.19) leaves each fd a client of its
  // own: fds shared across fork are then counted once per fd.
  std::string device = c.pdev ? *c.pdev : node_text(node);
  if (c.client_id) return {device, *c.client_id};
  return {"fd:" + device, (static_cast<uint64_t>(ref.pid) << 32) | static_cast<uint32_t>(ref.fd)};
}

void ClientTable::add(Clients& into, Key key, DrmClient info, dev_t node, FdRef ref) {
  auto [it, fresh] = into.try_emplace(std::move(key));
  auto& client = it->second;
  if (fresh) {
    client.info = std::move(info);
    client.node = node;
  }
  auto at = std::lower_bound(client.fds.begin(), client.fds.end(), ref);
  if (at == client.fds.end() || *at != ref) client.fds.insert(at, ref);
}

void ClientTable::scan_started() {
  std::lock_guard lock(mutex_);
  scanning_.clear();
  scan_errors_.clear();
}

void ClientTable::observe(const procfs::GpuFd& fd) {
  auto node = fd.file.number();
  bool drm =
      fd.file.kind == procfs::DeviceKind::DrmRender || fd.file.kind == procfs::DeviceKind::DrmCard;
  if (!drm || !node) return;
  {
    std::lock_guard lock(mutex_);
    if (!nodes_.count(*node)) return;
  }
  FdRef ref{fd.pid, fd.fd};
  std::string error;
  auto client = read(fd.proc_dirfd, ref, error);
  std::lock_guard lock(mutex_);
  if (client) {
    Key key = key_of(*client, *node, ref);
    add(scanning_, std::move(key), std::move(*client), *node, ref);
  } else if (!error.empty() && scan_errors_.size() < kMaxErrors) {
    scan_errors_.push_back(std::move(error));
  }
}

void ClientTable::scan_finished() {
  std::lock_guard lock(mutex_);
  for (auto& [key, client] : scanning_)
    if (auto old = clients_.find(key); old != clients_.end())
      keep_engine_maxima(client.info, old->second.info);
  clients_ = std::move(scanning_);
  scanning_.clear();
  errors_ = std::move(scan_errors_);
  scan_errors_.clear();
  fresh_ = true;
}

void ClientTable::refresh() {
  Clients now;
  std::vector<std::string> errors;
  for (const auto& [key, client] : clients_) {
    for (const FdRef& ref : client.fds) {
      std::string error;
      auto info = read(proc_dirfd_, ref, error);
      if (!info) {
        if (!error.empty() && errors.size() < kMaxErrors) errors.push_back(std::move(error));
        continue;
      }
      // The same number may now be another file, or another client of the same file's device.
      if (key_of(*info, client.node, ref) != key) continue;
      keep_engine_maxima(*info, client.info);
      add(now, key, std::move(*info), client.node, ref);
    }
  }
  clients_ = std::move(now);
  errors_ = std::move(errors);
}

std::vector<ObservedClient> ClientTable::current() {
  std::lock_guard lock(mutex_);
  if (!fresh_ && proc_dirfd_ >= 0) refresh();
  fresh_ = false;
  std::vector<ObservedClient> out;
  out.reserve(clients_.size());
  for (const auto& [key, client] : clients_) out.push_back(client);
  return out;
}

std::vector<std::string> ClientTable::errors() const {
  std::lock_guard lock(mutex_);
  return errors_;
}

}  // namespace gpureap::backend::drm
