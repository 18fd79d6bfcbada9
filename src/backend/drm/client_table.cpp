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
  return "PID " + std::to_string(ref.pid) + " fd " + std::to_string(ref.fd) +
         (ref.thread ? " (in thread " + std::to_string(ref.thread) + "'s own fd table)"
                     : std::string());
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
  // Through the task whose entry shows the table: a thread's own table, or the process's where
  // the main thread has exited (its /proc/PID/fdinfo is then empty).
  auto file = procfs::read_file_at(proc_dirfd, procfs::fdinfo_path(ref.pid, ref.task, ref.fd),
                                   kFdinfoLimit);
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
  if (!has_usage_stats(file.data)) return std::nullopt;
  auto client = parse_fdinfo(file.data);
  if (!client) {
    error = fd_text(ref) + ": " + client.error().message;
    return std::nullopt;
  }
  return std::move(*client);
}

ClientTable::Key ClientTable::key_of(const DrmClient& c, dev_t node, const FdRef& ref) const {
  // drm-client-id (or amdgpu's pasid) is unique per device when drm-pdev names it; without
  // pdev, the node names the device. Without either the client is the open file description,
  // named by its lowest (PID, table, fd); where the scan could not compare open files, the fd
  // itself.
  std::string device = c.pdev ? *c.pdev : node_text(node);
  if (auto number = client_number(c)) return {std::string(number->kind) + device, number->id};
  auto it = open_file_.find(ref);
  const FdRef& file = it == open_file_.end() ? ref : it->second;
  return {"file:" + device,
          (static_cast<uint64_t>(file.pid) << 32) | static_cast<uint32_t>(file.fd), file.thread};
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
  bool drm = fd.file.kind == kDrmRenderKind || fd.file.kind == kDrmCardKind;
  if (!drm || !node) return;
  {
    std::lock_guard lock(mutex_);
    if (!nodes_.count(*node)) return;
  }
  FdRef ref{fd.pid, fd.thread, fd.fd, fd.task};
  std::string error;
  auto client = read(fd.proc_dirfd, ref, error);
  std::lock_guard lock(mutex_);
  if (client)
    scanning_[ref] = SeenFd{std::move(*client), *node};
  else if (!error.empty() && scan_errors_.size() < kMaxErrors)
    scan_errors_.push_back(std::move(error));
}

void ClientTable::scan_finished() {
  std::lock_guard lock(mutex_);
  before_scan_ = std::move(clients_);
  seen_ = std::move(scanning_);
  scanning_.clear();
  errors_ = std::move(scan_errors_);
  scan_errors_.clear();
  open_file_.clear();  // until the scan's open-file groups come
  unknown_ = "the scan did not compare open files";
  group(before_scan_);
  fresh_ = true;
}

void ClientTable::open_files_grouped(const std::vector<core::HostProcess>& processes,
                                     const std::optional<std::string>& unknown) {
  std::map<FdRef, std::string> ids;
  for (const auto& p : processes)
    for (const auto& h : p.devices)
      if (h.open_file)
        for (int fd : h.fds) ids[{p.stat.pid, h.thread, fd}] = *h.open_file;
  // ids is in (PID, table, fd) order: the first is the lowest
  std::map<std::string, FdRef> lowest;
  for (const auto& [ref, id] : ids) lowest.try_emplace(id, ref);
  std::lock_guard lock(mutex_);
  open_file_.clear();
  for (const auto& [ref, id] : ids)
    if (seen_.count(ref)) open_file_[ref] = lowest[id];
  unknown_ = unknown.value_or("kcmp gave no answer for them");
  group(before_scan_);
}

void ClientTable::group(const Clients& before) {
  Clients out;
  size_t per_fd = 0;
  for (const auto& [ref, fd] : seen_) {
    if (!client_number(fd.info) && !open_file_.count(ref)) ++per_fd;
    add(out, key_of(fd.info, fd.node, ref), fd.info, fd.node, ref);
  }
  for (auto& [key, client] : out)
    if (auto old = before.find(key); old != before.end())
      keep_engine_maxima(client.info, old->second.info);

  grouping_warnings_.clear();
  if (per_fd)
    grouping_warnings_.push_back(
        "DRM clients counted per fd: " + std::to_string(per_fd) +
        " fd(s) of clients whose driver prints no drm-client-id could not be compared by open "
        "file (" +
        unknown_ + "); a client inherited across fork or dup'd is counted once per fd");
  // drm-client-id names one open file (struct drm_file): one id per open file, one open file
  // per id. A disagreement (an fd closed and reopened between the fdinfo read and kcmp, or a
  // driver whose id is not per file) is reported; the id counts.
  std::map<FdRef, Key> key_by_file;
  std::map<Key, FdRef> file_by_key;
  size_t disagree = 0;
  std::string first;
  for (const auto& [ref, fd] : seen_) {
    auto file = open_file_.find(ref);
    if (!client_number(fd.info) || file == open_file_.end()) continue;
    Key key = key_of(fd.info, fd.node, ref);
    auto [k, new_file] = key_by_file.try_emplace(file->second, key);
    auto [f, new_key] = file_by_key.try_emplace(key, file->second);
    if ((!new_file && k->second != key) || (!new_key && f->second != file->second)) {
      if (!disagree++) first = fd_text(ref);
    }
  }
  if (disagree)
    grouping_warnings_.push_back("drm-client-id and the open files disagree for " +
                                 std::to_string(disagree) + " DRM fd(s) (first: " + first +
                                 "): clients are counted by drm-client-id");
  clients_ = std::move(out);
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
  std::vector<std::string> out = errors_;
  out.insert(out.end(), grouping_warnings_.begin(), grouping_warnings_.end());
  return out;
}

}  // namespace gpureap::backend::drm
