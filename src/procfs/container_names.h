#pragma once
// A container's name and its Kubernetes pod, read from the container runtimes' own state files
// under a runtime root (the host's "/", or where a container mounted it), never through a
// runtime's API: gpureap needs no socket and no credentials of docker, containerd or the kubelet.
#include <sys/types.h>

#include <optional>
#include <string>

#include "core/process.h"

namespace gpureap::procfs {

struct ContainerNames {
  std::optional<std::string> name;           // docker's or podman's name; the pod's container name
  std::optional<std::string> pod_name;       // Kubernetes metadata.name of the pod
  std::optional<std::string> pod_namespace;  // Kubernetes metadata.namespace
  bool operator==(const ContainerNames&) const = default;
};

// Looks the container up where its runtime keeps it (a missing or unreadable file leaves a
// field empty; names are returned as the runtime wrote them, unescaped):
//   docker      var/lib/docker/containers/<id>/config.v2.json: Name, Config.Labels (cri-dockerd's
//               io.kubernetes.pod.name / .namespace / io.kubernetes.container.name)
//   containerd  run/containerd/io.containerd.runtime.v2.task/<namespace>/<id>/config.json: the
//               CRI annotations io.kubernetes.cri.container-name / sandbox-name / sandbox-namespace
//   cri-o       run/containers/storage/overlay-containers/<id>/userdata/config.json: annotations
//               io.kubernetes.container.name / io.kubernetes.pod.name / .namespace
//   podman      var/lib/containers/storage/overlay-containers/containers.json: the id's names
// A container the cgroup names only as "kubernetes" (a bare id under kubepods) is looked up as
// containerd's, then cri-o's, then docker's. Where the runtime's files give no pod (a pod whose
// runtime state is elsewhere), the kubelet's log directory var/log/pods/<namespace>_<name>_<uid>
// does. Only a hexadecimal id and a UUID are looked up, so neither ever reaches outside the
// runtime's directory. Every file read is one root writes, never the container.
ContainerNames read_container_names(const std::string& runtime_root, const core::ContainerInfo& c);

// What the runtime's state says about the container beyond its names: whether the runtime keeps
// any for it, and the host PID of its init while it runs, where the runtime records that:
//   docker      config.v2.json (above): State.Pid while State.Running
//   containerd  the task's init.pid beside its config.json
//   cri-o, podman  run/containers/storage/overlay-containers/<id>/userdata/pidfile
// The names are read_container_names'.
struct RuntimeRecord {
  std::string runtime;            // whose state was found; empty: no runtime keeps any for it
  std::optional<pid_t> init_pid;  // empty: the runtime says it does not run, or did not say
  ContainerNames names;
};
RuntimeRecord read_runtime_record(const std::string& runtime_root, const core::ContainerInfo& c);

}  // namespace gpureap::procfs
