#pragma once
// The descriptions of the structs the private wire documents carry (snapshot_wire.h,
// evidence_wire.h): each struct's fields in declaration order, each under its wire key (the
// field's own name). They are the one description of those documents: output/wire_codec.h
// encodes and decodes by them, the round-trip tests fill and compare by them, and these lines
// are the documentation of the documents' keys.
//
// A field added to one of these structs stops the build at its description (the static_assert
// beside it) until it has its line here; then it is encoded, decoded and round-trip tested,
// and the document's version (kSnapshotWireVersion or kEvidenceWireVersion) must be raised.
#include <tuple>

#include "core/kernel_event.h"
#include "core/listed_sightings.h"
#include "core/snapshot.h"
#include "output/wire_codec.h"
#include "procfs/ipc_residue.h"

namespace gpureap::output::wire {

// --- the driver's view (core/gpu.h) ------------------------------------------------------

template <>
inline constexpr auto kFields<core::MemoryRegionUse> =
    std::tuple{field("name", &core::MemoryRegionUse::name),
               field("device_local", &core::MemoryRegionUse::device_local),
               field("total_bytes", &core::MemoryRegionUse::total_bytes),
               field("resident_bytes", &core::MemoryRegionUse::resident_bytes),
               field("shared_bytes", &core::MemoryRegionUse::shared_bytes)};
static_assert(describes_every_field<core::MemoryRegionUse>());

template <>
inline constexpr auto kFields<core::DriverProcess> =
    std::tuple{field("pid", &core::DriverProcess::pid),
               field("kind", &core::DriverProcess::kind),
               field("used_bytes", &core::DriverProcess::used_bytes),
               field("gpu_instance_id", &core::DriverProcess::gpu_instance_id),
               field("compute_instance_id", &core::DriverProcess::compute_instance_id),
               field("name", &core::DriverProcess::name),
               field("sm_utilization_percent", &core::DriverProcess::sm_utilization_percent),
               field("regions", &core::DriverProcess::regions),
               field("sharers", &core::DriverProcess::sharers),
               field("serves_clients", &core::DriverProcess::serves_clients),
               field("server", &core::DriverProcess::server)};
static_assert(describes_every_field<core::DriverProcess>());

template <>
inline constexpr auto kFields<core::GpuMemory> =
    std::tuple{field("total_bytes", &core::GpuMemory::total_bytes),
               field("used_bytes", &core::GpuMemory::used_bytes),
               field("free_bytes", &core::GpuMemory::free_bytes),
               field("reserved_bytes", &core::GpuMemory::reserved_bytes)};
static_assert(describes_every_field<core::GpuMemory>());

template <>
inline constexpr auto kFields<core::GpuInstance> =
    std::tuple{field("gpu_instance_id", &core::GpuInstance::gpu_instance_id),
               field("compute_instance_id", &core::GpuInstance::compute_instance_id),
               field("profile", &core::GpuInstance::profile),
               field("uuid", &core::GpuInstance::uuid),
               field("memory", &core::GpuInstance::memory),
               field("device_numbers", &core::GpuInstance::device_numbers),
               field("kind", &core::GpuInstance::kind)};
static_assert(describes_every_field<core::GpuInstance>());

template <>
inline constexpr auto kFields<core::Gpu> =
    std::tuple{field("index", &core::Gpu::index),
               field("backend_index", &core::Gpu::backend_index),
               field("backend", &core::Gpu::backend),
               field("vendor", &core::Gpu::vendor),
               field("key", &core::Gpu::key),
               field("name", &core::Gpu::name),
               field("uuid", &core::Gpu::uuid),
               field("minor", &core::Gpu::minor),
               field("pci_bus_id", &core::Gpu::pci_bus_id),
               field("device_numbers", &core::Gpu::device_numbers),
               field("display_device_numbers", &core::Gpu::display_device_numbers),
               field("device_major", &core::Gpu::device_major),
               field("memory", &core::Gpu::memory),
               field("utilization_percent", &core::Gpu::utilization_percent),
               field("memory_utilization_percent", &core::Gpu::memory_utilization_percent),
               field("temperature_celsius", &core::Gpu::temperature_celsius),
               field("power_watts", &core::Gpu::power_watts),
               field("split_mode", &core::Gpu::split_mode),
               field("details", &core::Gpu::details),
               field("processes", &core::Gpu::processes),
               field("processes_error", &core::Gpu::processes_error),
               field("error", &core::Gpu::error),
               field("known_from_kernel", &core::Gpu::known_from_kernel),
               field("instances", &core::Gpu::instances)};
static_assert(describes_every_field<core::Gpu>());

template <>
inline constexpr auto kFields<core::BackendStatus> =
    std::tuple{field("name", &core::BackendStatus::name),
               field("vendor", &core::BackendStatus::vendor),
               field("available", &core::BackendStatus::available),
               field("error", &core::BackendStatus::error),
               field("error_code", &core::BackendStatus::error_code),
               field("shortage", &core::BackendStatus::shortage),
               field("driver_version", &core::BackendStatus::driver_version),
               field("library", &core::BackendStatus::library),
               field("details", &core::BackendStatus::details),
               field("warnings", &core::BackendStatus::warnings)};
static_assert(describes_every_field<core::BackendStatus>());

template <>
inline constexpr auto kFields<core::DriverReading> = std::tuple{
    field("backends", &core::DriverReading::backends), field("gpus", &core::DriverReading::gpus)};
static_assert(describes_every_field<core::DriverReading>());

// --- /proc's view (core/process.h, core/snapshot.h) --------------------------------------

template <>
inline constexpr auto kFields<core::ProcessStat> =
    std::tuple{field("pid", &core::ProcessStat::pid),
               field("comm", &core::ProcessStat::comm),
               field("state", &core::ProcessStat::state),
               field("ppid", &core::ProcessStat::ppid),
               field("pgid", &core::ProcessStat::pgid),
               field("sid", &core::ProcessStat::sid),
               field("flags", &core::ProcessStat::flags),
               field("start_ticks", &core::ProcessStat::start_ticks),
               field("num_threads", &core::ProcessStat::num_threads),
               field("rss_pages", &core::ProcessStat::rss_pages),
               field("cpu_ticks", &core::ProcessStat::cpu_ticks),
               field("leader_exited", &core::ProcessStat::leader_exited),
               field("wait_status", &core::ProcessStat::wait_status)};
static_assert(describes_every_field<core::ProcessStat>());

template <>
inline constexpr auto kFields<core::ContainerInfo> =
    std::tuple{field("runtime", &core::ContainerInfo::runtime),
               field("id", &core::ContainerInfo::id),
               field("pod_uid", &core::ContainerInfo::pod_uid),
               field("name", &core::ContainerInfo::name),
               field("pod_name", &core::ContainerInfo::pod_name),
               field("pod_namespace", &core::ContainerInfo::pod_namespace),
               field("hierarchy", &core::ContainerInfo::hierarchy),
               field("cgroup", &core::ContainerInfo::cgroup),
               field("verified", &core::ContainerInfo::verified),
               field("verification", &core::ContainerInfo::verification)};
static_assert(describes_every_field<core::ContainerInfo>());

template <>
inline constexpr auto kFields<core::DeviceHold> = std::tuple{
    field("path", &core::DeviceHold::path),     field("kind", &core::DeviceHold::kind),
    field("device", &core::DeviceHold::device), field("gpu_file", &core::DeviceHold::gpu_file),
    field("fds", &core::DeviceHold::fds),       field("open_file", &core::DeviceHold::open_file),
    field("thread", &core::DeviceHold::thread)};
static_assert(describes_every_field<core::DeviceHold>());

template <>
inline constexpr auto kFields<core::ExecutableFile> =
    std::tuple{field("path", &core::ExecutableFile::path),
               field("system_installed", &core::ExecutableFile::system_installed)};
static_assert(describes_every_field<core::ExecutableFile>());

template <>
inline constexpr auto kFields<core::RankLabels> =
    std::tuple{field("rank", &core::RankLabels::rank),
               field("local_rank", &core::RankLabels::local_rank),
               field("world_size", &core::RankLabels::world_size),
               field("local_world_size", &core::RankLabels::local_world_size),
               field("run_id", &core::RankLabels::run_id),
               field("restart_count", &core::RankLabels::restart_count),
               field("max_restarts", &core::RankLabels::max_restarts)};
static_assert(describes_every_field<core::RankLabels>());

template <>
inline constexpr auto kFields<core::ProcessDetails> =
    std::tuple{field("cmdline", &core::ProcessDetails::cmdline),
               field("uid", &core::ProcessDetails::uid),
               field("euid", &core::ProcessDetails::euid),
               field("user", &core::ProcessDetails::user),
               field("ns_pids", &core::ProcessDetails::ns_pids),
               field("container", &core::ProcessDetails::container),
               field("wchan", &core::ProcessDetails::wchan),
               field("exe", &core::ProcessDetails::exe),
               field("rank_labels", &core::ProcessDetails::rank_labels)};
static_assert(describes_every_field<core::ProcessDetails>());

template <>
inline constexpr auto kFields<core::HostProcess> = std::tuple{
    field("stat", &core::HostProcess::stat), field("details", &core::HostProcess::details),
    field("devices", &core::HostProcess::devices),
    field("fds_readable", &core::HostProcess::fds_readable)};
static_assert(describes_every_field<core::HostProcess>());

template <>
inline constexpr auto kFields<core::ProcessEnd> = std::tuple{
    field("start_ticks", &core::ProcessEnd::start_ticks),
    field("end_ticks", &core::ProcessEnd::end_ticks), field("held", &core::ProcessEnd::held),
    field("wait_status", &core::ProcessEnd::wait_status)};
static_assert(describes_every_field<core::ProcessEnd>());

template <>
inline constexpr auto kFields<core::RankExit> =
    std::tuple{field("launcher", &core::RankExit::launcher),
               field("launcher_start_ticks", &core::RankExit::launcher_start_ticks),
               field("pid", &core::RankExit::pid),
               field("start_ticks", &core::RankExit::start_ticks),
               field("local_rank", &core::RankExit::local_rank),
               field("end_ticks", &core::RankExit::end_ticks),
               field("wait_status", &core::RankExit::wait_status),
               field("end_upper_bound", &core::RankExit::end_upper_bound)};
static_assert(describes_every_field<core::RankExit>());

template <>
inline constexpr auto kFields<core::ProcView> =
    std::tuple{field("processes", &core::ProcView::processes),
               field("uninspectable", &core::ProcView::uninspectable),
               field("details_complete", &core::ProcView::details_complete),
               field("warnings", &core::ProcView::warnings),
               field("scan_failures", &core::ProcView::scan_failures),
               field("scan_shortages", &core::ProcView::scan_shortages),
               field("boot_time", &core::ProcView::boot_time),
               field("ticks_per_second", &core::ProcView::ticks_per_second),
               field("in_child_pid_namespace", &core::ProcView::in_child_pid_namespace),
               field("pid_namespace", &core::ProcView::pid_namespace),
               field("driver_device_files", &core::ProcView::driver_device_files),
               field("open_files_unknown", &core::ProcView::open_files_unknown),
               field("exited_parents", &core::ProcView::exited_parents),
               field("listed_since", &core::ProcView::listed_since),
               field("listed_first_process", &core::ProcView::listed_first_process),
               field("ends", &core::ProcView::ends),
               field("rank_exits", &core::ProcView::rank_exits)};
static_assert(describes_every_field<core::ProcView>());

// --- the kernel log (core/kernel_event.h) ------------------------------------------------

template <>
inline constexpr auto kFields<core::KernelGpuEvent> =
    std::tuple{field("vendor", &core::KernelGpuEvent::vendor),
               field("kind", &core::KernelGpuEvent::kind),
               field("label", &core::KernelGpuEvent::label),
               field("code", &core::KernelGpuEvent::code),
               field("pci_address", &core::KernelGpuEvent::pci_address),
               field("gpu", &core::KernelGpuEvent::gpu),
               field("seq", &core::KernelGpuEvent::seq),
               field("since_boot_usec", &core::KernelGpuEvent::since_boot_usec),
               field("time", &core::KernelGpuEvent::time),
               field("stamp", &core::KernelGpuEvent::stamp),
               field("pid", &core::KernelGpuEvent::pid),
               field("process_name", &core::KernelGpuEvent::process_name),
               field("detail", &core::KernelGpuEvent::detail),
               field("name", &core::KernelGpuEvent::name),
               field("level", &core::KernelGpuEvent::level),
               field("needs_reboot", &core::KernelGpuEvent::needs_reboot)};
static_assert(describes_every_field<core::KernelGpuEvent>());

template <>
inline constexpr auto kFields<core::OomKill> = std::tuple{
    field("pid", &core::OomKill::pid),  field("name", &core::OomKill::name),
    field("uid", &core::OomKill::uid),  field("memory_cgroup", &core::OomKill::memory_cgroup),
    field("seq", &core::OomKill::seq),  field("since_boot_usec", &core::OomKill::since_boot_usec),
    field("text", &core::OomKill::text)};
static_assert(describes_every_field<core::OomKill>());

template <>
inline constexpr auto kFields<core::KernelLog> = std::tuple{
    field("read", &core::KernelLog::read),       field("problem", &core::KernelLog::problem),
    field("events", &core::KernelLog::events),   field("oom_kills", &core::KernelLog::oom_kills),
    field("records", &core::KernelLog::records), field("malformed", &core::KernelLog::malformed)};
static_assert(describes_every_field<core::KernelLog>());

// --- what the daemon hands to its next run (core/listed_sightings.h) ---------------------

template <>
inline constexpr auto kFields<core::ListedSightings::Fork> =
    std::tuple{field("parent", &core::ListedSightings::Fork::parent),
               field("child_start", &core::ListedSightings::Fork::child_start)};
static_assert(describes_every_field<core::ListedSightings::Fork>());

template <>
inline constexpr auto kFields<core::CarriedSightings::Listing> =
    std::tuple{field("pid", &core::CarriedSightings::Listing::pid),
               field("since", &core::CarriedSightings::Listing::since),
               field("first_process", &core::CarriedSightings::Listing::first_process),
               field("gpus", &core::CarriedSightings::Listing::gpus)};
static_assert(describes_every_field<core::CarriedSightings::Listing>());

template <>
inline constexpr auto kFields<core::CarriedSightings::WatchedRank> = std::tuple{
    field("pid", &core::CarriedSightings::WatchedRank::pid),
    field("start_ticks", &core::CarriedSightings::WatchedRank::start_ticks),
    field("launcher", &core::CarriedSightings::WatchedRank::launcher),
    field("launcher_start_ticks", &core::CarriedSightings::WatchedRank::launcher_start_ticks),
    field("local_rank", &core::CarriedSightings::WatchedRank::local_rank)};
static_assert(describes_every_field<core::CarriedSightings::WatchedRank>());

template <>
inline constexpr auto kFields<core::CarriedSightings> =
    std::tuple{field("boot_id", &core::CarriedSightings::boot_id),
               field("pid_namespace", &core::CarriedSightings::pid_namespace),
               field("saved_at_ticks", &core::CarriedSightings::saved_at_ticks),
               field("listings", &core::CarriedSightings::listings),
               field("last_read", &core::CarriedSightings::last_read),
               field("ends", &core::CarriedSightings::ends),
               field("forks", &core::CarriedSightings::forks),
               field("rank_exits", &core::CarriedSightings::rank_exits),
               field("watched_ranks", &core::CarriedSightings::watched_ranks)};
static_assert(describes_every_field<core::CarriedSightings>());

// --- host-memory residue (procfs/ipc_residue.h) ------------------------------------------

template <>
inline constexpr auto kFields<procfs::SysvShmSegment> =
    std::tuple{field("key", &procfs::SysvShmSegment::key),
               field("shmid", &procfs::SysvShmSegment::shmid),
               field("size_bytes", &procfs::SysvShmSegment::size_bytes),
               field("creator_pid", &procfs::SysvShmSegment::creator_pid),
               field("last_pid", &procfs::SysvShmSegment::last_pid),
               field("attached", &procfs::SysvShmSegment::attached),
               field("uid", &procfs::SysvShmSegment::uid)};
static_assert(describes_every_field<procfs::SysvShmSegment>());

template <>
inline constexpr auto kFields<procfs::ShmFile> = std::tuple{
    field("path", &procfs::ShmFile::path), field("size_bytes", &procfs::ShmFile::size_bytes),
    field("uid", &procfs::ShmFile::uid), field("owner_runs", &procfs::ShmFile::owner_runs)};
static_assert(describes_every_field<procfs::ShmFile>());

template <>
inline constexpr auto kFields<procfs::IpcResidue> = std::tuple{
    field("segments", &procfs::IpcResidue::segments), field("files", &procfs::IpcResidue::files),
    field("uninspected", &procfs::IpcResidue::uninspected)};
static_assert(describes_every_field<procfs::IpcResidue>());

}  // namespace gpureap::output::wire
