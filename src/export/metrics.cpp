#include "export/metrics.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>

#include "core/row_labels.h"
#include "export/job_metrics.h"
#include "export/kernel_metrics.h"
#include "export/problem_metrics.h"
#include "metric/names.h"

namespace gpureap::exporter {
namespace {

using core::Anomaly;

constexpr std::array kAnomalies{
    Anomaly::Stopped,         Anomaly::Uninterruptible, Anomaly::Orphan,
    Anomaly::ZombieChildren,  Anomaly::NoSuchProcess,   Anomaly::ForeignNamespace,
    Anomaly::InheritedHolder, Anomaly::Leaked,          Anomaly::StalledJob};

std::string uuid_of(const core::Gpu& g) {
  return g.uuid.value_or("");
}

// A GPU without a UUID (a DRM GPU) is told apart by its PCI address; the vendor lets one
// dashboard cover a mixed fleet.
std::vector<Label> gpu_labels(const core::Gpu& g) {
  return {{metric::label::kGpu, std::to_string(g.index)},
          {metric::label::kUuid, uuid_of(g)},
          {metric::label::kPciBusId, g.pci_bus_id.value_or("")},
          {metric::label::kVendor, g.vendor}};
}

std::vector<Label> with(std::vector<Label> labels, std::vector<Label> more) {
  for (auto& l : more) labels.push_back(std::move(l));
  return labels;
}

const core::GpuUse* use_on(const core::ProcessRow& row, unsigned gpu) {
  for (const auto& u : row.gpus)
    if (u.index == gpu) return &u;
  return nullptr;
}

// The container's labels, "" outside one and for an unverified claim (nothing is charged to a
// container or pod a cgroup's name merely claims): its id, the names its runtime gives, and the
// pod UID that joins with kube-state-metrics' kube_pod_info{uid}.
std::array<std::string, 5> container_values(const core::ProcessRow& row) {
  const auto* c = row.process ? row.process->verified_container() : nullptr;
  if (!c) return {};
  return {core::container_label(row), c->name.value_or(""), c->pod_name.value_or(""),
          c->pod_namespace.value_or(""), c->pod_uid.value_or("")};
}

std::vector<Label> container_labels(const std::array<std::string, 5>& values) {
  return {{"container", values[0]},
          {"container_name", values[1]},
          {metric::label::kPodName, values[2]},
          {metric::label::kPodNamespace, values[3]},
          {"pod_uid", values[4]}};
}

// Rows that belong to a GPU: the ones its driver lists, and the unlisted holders of its
// device file that keep a gone process's context alive. Healthy unlisted holders are left
// out: every CUDA process opens the files of every GPU it can see.
bool on_gpu(const core::ProcessRow& row, const core::Gpu& g) {
  if (use_on(row, g.index)) return true;
  return row.has(Anomaly::InheritedHolder) && row.process && row.process->holds_gpu(g);
}

// The per-GPU families, filled one GPU at a time.
struct GpuFamilies {
  MetricFamily info{metric::kGpuInfo, "GPU identity; the value is always 1"};
  MetricFamily total{metric::kGpuMemoryTotal, "GPU memory in total, as the driver reports it"};
  MetricFamily used{metric::kGpuMemoryUsed, "GPU memory in use, as the driver reports it"};
  MetricFamily reserved{metric::kGpuMemoryReserved,
                        "GPU memory reserved by the driver and firmware"};
  MetricFamily unattributed{metric::kGpuMemoryUnattributed,
                            "GPU memory in use that the driver attributes to no listed process"};
  MetricFamily ghost{metric::kGpuMemoryGhost,
                     "GPU memory the driver lists for PIDs that are gone (no-such-process), kept "
                     "alive by inherited holders or leaked"};
  MetricFamily util{metric::kGpuUtilization,
                    "GPU busy time over the driver's last sample period, 0 to 1"};
  MetricFamily temp{metric::kGpuTemperature, "GPU core temperature"};
  MetricFamily power{metric::kGpuPower, "GPU power draw"};
  MetricFamily procs{
      metric::kGpuProcesses,
      "Processes on a GPU by anomaly (anomaly=\"none\" for healthy ones); a process with several "
      "anomalies counts once for each"};
  MetricFamily users{metric::kUserMemory,
                     "GPU memory the driver lists for the processes of a user"};
  MetricFamily containers{metric::kContainerMemory,
                          "GPU memory the driver lists for the processes of a container"};
  MetricFamily instance_info{
      metric::kGpuInstanceInfo,
      "An instance of a GPU split into instances (one per compute instance); the value is "
      "always 1"};
  MetricFamily instance_total{metric::kGpuInstanceMemoryTotal,
                              "Memory of a GPU instance of a split GPU, as the driver reports it"};
  MetricFamily instance_used{
      metric::kGpuInstanceMemoryUsed,
      "Memory in use in a GPU instance of a split GPU, as the driver reports it"};
  MetricFamily server_clients{
      metric::kServerClients,
      "Clients listed on a GPU whose work a server of other processes' GPU work runs, per server; "
      "gone clients count too"};
  MetricFamily per_proc{
      metric::kProcessMemory,
      "GPU memory the driver lists for one process (only with per_process_metrics = true)"};

  void identity(const core::Snapshot& s, const core::Gpu& g, const std::vector<Label>& labels) {
    const auto* backend = s.drivers.backend_of(g);
    info.add(with(labels, {{"name", g.name.value_or("")},
                           {"driver_version",
                            backend ? backend->driver_version.value_or("") : std::string()},
                           {"backend", g.backend},
                           {"key", g.key}}),
             1);
  }

  // A split GPU's instances: one info series per compute instance, memory per GPU instance.
  void instances(const core::Gpu& g, const std::vector<Label>& labels) {
    std::set<unsigned> seen;
    for (const auto& i : g.instances) {
      const Label gi{metric::label::kGpuInstance, std::to_string(i.gpu_instance_id)};
      instance_info.add(
          with(labels, {gi,
                        {"compute_instance",
                         i.compute_instance_id ? std::to_string(*i.compute_instance_id) : ""},
                        {"profile", i.profile.value_or("")},
                        {"mig_uuid", i.uuid.value_or("")}}),
          1);
      if (!seen.insert(i.gpu_instance_id).second) continue;
      if (i.memory.total_bytes)
        instance_total.add(with(labels, {gi}), static_cast<double>(*i.memory.total_bytes));
      if (i.memory.used_bytes)
        instance_used.add(with(labels, {gi}), static_cast<double>(*i.memory.used_bytes));
    }
  }

  // Unknown is left out, never written as 0.
  void readings(const core::Snapshot& s, const core::Gpu& g, const std::vector<Label>& labels) {
    if (g.memory.total_bytes) total.add(labels, static_cast<double>(*g.memory.total_bytes));
    if (g.memory.used_bytes) used.add(labels, static_cast<double>(*g.memory.used_bytes));
    if (g.memory.reserved_bytes)
      reserved.add(labels, static_cast<double>(*g.memory.reserved_bytes));
    auto summary = s.memory_summary(g);
    if (summary.unattributed_bytes)
      unattributed.add(labels, static_cast<double>(*summary.unattributed_bytes));
    if (!g.processes_error) ghost.add(labels, static_cast<double>(summary.ghost_bytes));
    if (g.utilization_percent) util.add(labels, *g.utilization_percent / 100.0);
    if (g.temperature_celsius) temp.add(labels, *g.temperature_celsius);
    if (g.power_watts) power.add(labels, *g.power_watts);
  }

  // The GPU's processes by anomaly, and its listed memory by user, container and process.
  void processes(const MetricsInput& in, const core::Gpu& g, const std::vector<Label>& labels) {
    // Every anomaly gets a series, 0 included, so alert rules see an absent problem as 0.
    std::map<std::string, unsigned> by_anomaly{{"none", 0}};
    for (Anomaly a : kAnomalies) by_anomaly[std::string(core::to_string(a))] = 0;
    std::map<std::string, uint64_t> by_user;
    std::map<std::array<std::string, 5>, uint64_t> by_container;
    for (const auto& row : in.snapshot.rows) {
      if (!on_gpu(row, g)) continue;
      if (row.anomalies.empty()) ++by_anomaly["none"];
      for (Anomaly a : row.anomalies) ++by_anomaly[std::string(core::to_string(a))];
      const auto* u = use_on(row, g.index);
      if (u && u->serves_clients)
        server_clients.add(with(labels, {{metric::label::kPid, std::to_string(row.pid)},
                                         {"server", *u->serves_clients}}),
                           static_cast<double>(u->clients.size()));
      if (!u || !u->used_bytes) continue;
      by_user[core::user_label(row)] += *u->used_bytes;
      const auto container = container_values(row);
      if (!container[0].empty()) by_container[container] += *u->used_bytes;
      if (in.per_process) {
        std::string comm = row.process ? row.process->stat.comm : row.driver_name.value_or("");
        auto series = with(with(labels, {{metric::label::kPid, std::to_string(row.pid)},
                                         {metric::label::kUser, core::user_label(row)},
                                         {metric::label::kComm, comm}}),
                           container_labels(container));
        // On a split GPU, the GPU instance it runs in.
        if (u->gpu_instance_id)
          series.push_back({metric::label::kGpuInstance, std::to_string(*u->gpu_instance_id)});
        per_proc.add(std::move(series), static_cast<double>(*u->used_bytes));
      }
    }
    for (const auto& [anomaly, n] : by_anomaly) procs.add(with(labels, {{"anomaly", anomaly}}), n);
    for (const auto& [user, bytes] : by_user)
      users.add(with(labels, {{metric::label::kUser, user}}), static_cast<double>(bytes));
    for (const auto& [values, bytes] : by_container)
      containers.add(with(labels, container_labels(values)), static_cast<double>(bytes));
  }

  void move_into(std::vector<MetricFamily>& out, bool per_process) {
    for (auto* f : {&info, &total, &used, &reserved, &unattributed, &ghost, &util, &temp, &power,
                    &procs, &users, &containers, &server_clients})
      out.push_back(std::move(*f));
    // Only on a machine with a split GPU.
    for (auto* f : {&instance_info, &instance_total, &instance_used})
      if (!f->samples.empty()) out.push_back(std::move(*f));
    if (per_process) out.push_back(std::move(per_proc));
  }
};

void gpu_families(const MetricsInput& in, std::vector<MetricFamily>& out) {
  GpuFamilies families;
  for (const auto& g : in.snapshot.drivers.gpus) {
    auto labels = gpu_labels(g);
    families.identity(in.snapshot, g, labels);
    families.readings(in.snapshot, g, labels);
    families.processes(in, g, labels);
    families.instances(g, labels);
  }
  families.move_into(out, in.per_process);
}

void finding_families(const MetricsInput& in, std::vector<MetricFamily>& out) {
  MetricFamily f{metric::kFindings,
                 "Findings of gpureap doctor on the latest samples, by code and severity"};
  std::map<std::pair<std::string, std::string>, unsigned> counts;
  // Each code a finding carries counts, its facets' too (at the facet's own severity): a rule
  // on `gpureap_findings{code="orphan-holder"}` still sees an orphan that keeps a ghost.
  for (const auto& finding : in.findings) {
    std::set<std::pair<std::string, std::string>> seen{
        {std::string(doctor::to_string(finding.code)), doctor::to_string(finding.severity)}};
    for (const auto& x : finding.facets)
      seen.insert({std::string(doctor::to_string(x.code)), doctor::to_string(x.severity)});
    for (const auto& key : seen) ++counts[key];
  }
  for (const auto& [key, n] : counts)
    f.add({{metric::label::kCode, key.first}, {"severity", key.second}}, n);
  out.push_back(std::move(f));
}

void collector_families(const MetricsInput& in, std::vector<MetricFamily>& out) {
  MetricFamily duration{metric::kCollectDuration, "How long the collector's last run took"};
  MetricFamily errors{metric::kCollectErrors,
                      "Runs of the collector that failed or timed out (driver) or saw an "
                      "incomplete /proc (holder_scan)",
                      MetricType::Counter};
  for (const auto& c : in.collectors) {
    if (c.last_duration_seconds) duration.add({{"collector", c.name}}, *c.last_duration_seconds);
    errors.add({{"collector", c.name}}, static_cast<double>(c.errors_total));
  }
  out.push_back(std::move(duration));
  out.push_back(std::move(errors));
}

}  // namespace

std::vector<MetricFamily> build_metrics(const MetricsInput& in) {
  std::vector<MetricFamily> out;
  out.push_back(
      MetricFamily{metric::kUp, "1 when a GPU driver answered gpureap's last sample, else 0"}.add(
          {}, in.snapshot.drivers.any_available() ? 1 : 0));
  MetricFamily backend_up{metric::kBackendUp,
                          "1 when this GPU backend answered gpureap's last sample, else 0"};
  // A backend with no GPU of its kind here (a DRM backend on a host with no DRM GPU) is not down:
  // it is left out, so an alert on `gpureap_backend_up == 0` means a driver that should answer.
  for (const auto& b : in.snapshot.drivers.backends)
    if (b.error_code != core::BackendErrorCode::NoDevice)
      backend_up.add({{"backend", b.name}, {metric::label::kVendor, b.vendor}},
                     b.available ? 1 : 0);
  out.push_back(std::move(backend_up));
  gpu_families(in, out);
  finding_families(in, out);
  collector_families(in, out);
  kernel_families(in, out);
  problem_families(in, out);
  job_families(in, out);
  return out;
}

}  // namespace gpureap::exporter
