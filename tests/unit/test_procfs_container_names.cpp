// Container and pod names from the runtimes' state files, in runtime trees built here.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "procfs/container_names.h"

namespace gpureap::procfs {
namespace {

namespace fs = std::filesystem;

const std::string kId = "3f4e5d6c7b8a91021324354657687980a1b2c3d4e5f60718293a4b5c6d7e8f90";
const std::string kOther = "aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999";

// A runtime root of its own, removed afterwards.
class RuntimeRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpureap-runtime-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& path, const std::string& text) {
    fs::path p = fs::path(root_) / path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  ContainerNames names(const std::string& runtime, const std::string& id = kId) {
    return read_container_names(root_, core::ContainerInfo{runtime, id, std::nullopt});
  }

  std::string root_;
};

TEST_F(RuntimeRoot, DockerNameWithoutItsSlash) {
  write("var/lib/docker/containers/" + kId + "/config.v2.json",
        R"({"ID":")" + kId + R"(","Name":"/trainer-7","Config":{"Labels":{"team":"ml"}}})");
  auto n = names("docker");
  EXPECT_EQ(n.name, "trainer-7");
  EXPECT_EQ(n.pod_name, std::nullopt);
  EXPECT_EQ(n.pod_namespace, std::nullopt);
  // Another container's id finds nothing, not this one's name.
  EXPECT_EQ(names("docker", kOther), ContainerNames{});
}

TEST_F(RuntimeRoot, DockerUnderKubernetesGivesThePodFromItsLabels) {
  write("var/lib/docker/containers/" + kId + "/config.v2.json",
        R"({"Name":"/k8s_train_bert-0_research_1234_0","Config":{"Labels":{)"
        R"("io.kubernetes.container.name":"train","io.kubernetes.pod.name":"bert-0",)"
        R"("io.kubernetes.pod.namespace":"research"}}})");
  auto n = names("kubernetes");
  EXPECT_EQ(n.name, "train");
  EXPECT_EQ(n.pod_name, "bert-0");
  EXPECT_EQ(n.pod_namespace, "research");
}

TEST_F(RuntimeRoot, ContainerdCriAnnotationsInAnyNamespace) {
  write("run/containerd/io.containerd.runtime.v2.task/k8s.io/" + kId + "/config.json",
        R"({"ociVersion":"1.1.0","annotations":{"io.kubernetes.cri.container-type":"container",)"
        R"("io.kubernetes.cri.container-name":"vllm","io.kubernetes.cri.sandbox-name":"serve-abc",)"
        R"("io.kubernetes.cri.sandbox-namespace":"inference"}})");
  auto n = names("kubernetes");
  EXPECT_EQ(n.name, "vllm");
  EXPECT_EQ(n.pod_name, "serve-abc");
  EXPECT_EQ(n.pod_namespace, "inference");
  EXPECT_EQ(names("containerd"), n);
}

TEST_F(RuntimeRoot, CrioAnnotations) {
  write("run/containers/storage/overlay-containers/" + kId + "/userdata/config.json",
        R"({"annotations":{"io.kubernetes.container.name":"jupyter",)"
        R"("io.kubernetes.pod.name":"nb-alice","io.kubernetes.pod.namespace":"notebooks"}})");
  auto n = names("cri-o");
  EXPECT_EQ(n.name, "jupyter");
  EXPECT_EQ(n.pod_name, "nb-alice");
  EXPECT_EQ(n.pod_namespace, "notebooks");
  EXPECT_EQ(names("kubernetes"), n);
}

TEST_F(RuntimeRoot, PodmanNameFromItsContainerList) {
  write("var/lib/containers/storage/overlay-containers/containers.json",
        R"([{"id":")" + kOther +
            R"(","names":["someone-else"]},)"
            R"({"id":")" +
            kId + R"(","names":["eval-run"],"image":"x"}])");
  EXPECT_EQ(names("podman").name, "eval-run");
  EXPECT_EQ(names("podman", kOther).name, "someone-else");
}

// A pod whose runtime files cannot be read (another runtime, its state elsewhere) is named by
// the kubelet's log directory; the runtime's names win where both are there.
TEST_F(RuntimeRoot, TheKubeletsPodLogDirectoryNamesAPodTheRuntimeDoesNot) {
  const std::string uid = "3f9d2a1c-6b7e-4c5d-8e9f-0a1b2c3d4e5f";
  fs::create_directories(fs::path(root_) / ("var/log/pods/research_bert-0_" + uid + "/train"));
  fs::create_directories(fs::path(root_) /
                         "var/log/pods/other_bert-1_0a1b2c3d-0000-4c5d-8e9f-0a1b2c3d4e5f");
  auto n = read_container_names(root_, core::ContainerInfo{"kubernetes", kId, uid});
  EXPECT_EQ(n.pod_name, "bert-0");
  EXPECT_EQ(n.pod_namespace, "research");
  EXPECT_EQ(n.name, std::nullopt);  // which of the pod's containers this is, only the runtime says
  write("run/containerd/io.containerd.runtime.v2.task/k8s.io/" + kId + "/config.json",
        R"({"annotations":{"io.kubernetes.cri.container-name":"train",)"
        R"("io.kubernetes.cri.sandbox-name":"bert-0-renamed",)"
        R"("io.kubernetes.cri.sandbox-namespace":"research"}})");
  n = read_container_names(root_, core::ContainerInfo{"kubernetes", kId, uid});
  EXPECT_EQ(n.name, "train");
  EXPECT_EQ(n.pod_name, "bert-0-renamed");
  // A pod uid that is no UUID is not looked up; one with no directory finds nothing.
  EXPECT_EQ(read_container_names(root_, core::ContainerInfo{"kubernetes", std::nullopt, "../x"}),
            ContainerNames{});
  EXPECT_EQ(
      read_container_names(root_, core::ContainerInfo{"kubernetes", std::nullopt,
                                                      "ffffffff-6b7e-4c5d-8e9f-0a1b2c3d4e5f"}),
      ContainerNames{});
}

// What must be left alone: an id that is not hexadecimal never becomes a path, files that are
// not JSON or hold the wrong types give nothing, and a missing runtime tree is no error.
TEST_F(RuntimeRoot, BadIdsAndBadFilesGiveNothing) {
  // var/lib/docker/containers/../../../etc is var/etc.
  fs::create_directories(fs::path(root_) / "var/lib/docker/containers");
  write("var/etc/config.v2.json", R"({"Name":"/escaped"})");
  EXPECT_EQ(names("docker", "../../../etc"), ContainerNames{});
  EXPECT_EQ(names("docker", "abc"), ContainerNames{});  // too short to be an id
  EXPECT_EQ(read_container_names(root_, core::ContainerInfo{"docker", std::nullopt, "uid"}),
            ContainerNames{});
  write("var/lib/docker/containers/" + kId + "/config.v2.json", "{not json");
  EXPECT_EQ(names("docker"), ContainerNames{});
  write("var/lib/docker/containers/" + kId + "/config.v2.json",
        R"({"Name":7,"Config":{"Labels":["io.kubernetes.pod.name"]}})");
  EXPECT_EQ(names("docker"), ContainerNames{});
  write("var/lib/containers/storage/overlay-containers/containers.json", R"({"id":"x"})");
  EXPECT_EQ(names("podman"), ContainerNames{});
  EXPECT_EQ(names("cri-o"), ContainerNames{});
  EXPECT_EQ(names("unknown-runtime"), ContainerNames{});
}

// A FIFO planted where a state file goes is not read (the read would block forever).
TEST_F(RuntimeRoot, AFifoIsNotRead) {
  fs::create_directories(fs::path(root_) / ("var/lib/docker/containers/" + kId));
  ASSERT_EQ(
      ::mkfifo((root_ + "/var/lib/docker/containers/" + kId + "/config.v2.json").c_str(), 0600), 0);
  EXPECT_EQ(names("docker"), ContainerNames{});
}

// ---- The runtime's record: whether it keeps state for the container, and its init's PID ----

// "runtime init=PID name=NAME", "-" for what is missing.
std::string record(const std::string& root, const std::string& runtime, const std::string& id) {
  auto r = read_runtime_record(root, core::ContainerInfo{runtime, id, std::nullopt});
  return (r.runtime.empty() ? "-" : r.runtime) +
         " init=" + (r.init_pid ? std::to_string(*r.init_pid) : "-") +
         " name=" + r.names.name.value_or("-");
}

TEST_F(RuntimeRoot, DockersInitWhileItRuns) {
  const std::string state = "var/lib/docker/containers/" + kId + "/config.v2.json";
  write(state, R"({"Name":"/t","State":{"Running":true,"Pid":4242}})");
  EXPECT_EQ(record(root_, "docker", kId), "docker init=4242 name=t");
  write(state, R"({"Name":"/t","State":{"Running":false,"Pid":0}})");
  EXPECT_EQ(record(root_, "docker", kId), "docker init=- name=t");
  // A PID that is no number, init's own, or a running flag that is no boolean: none.
  for (const char* s : {R"("Running":true,"Pid":"4242")", R"("Running":true,"Pid":1)",
                        R"("Running":"yes","Pid":4242)", R"("Running":true,"Pid":-5)"}) {
    write(state, std::string(R"({"Name":"/t","State":{)") + s + "}}");
    EXPECT_EQ(record(root_, "docker", kId), "docker init=- name=t") << s;
  }
  EXPECT_EQ(record(root_, "docker", kOther), "- init=- name=-");
}

TEST_F(RuntimeRoot, ContainerdsInitPidBesideTheTasksSpec) {
  const std::string task = "run/containerd/io.containerd.runtime.v2.task/k8s.io/" + kId;
  write(task + "/config.json", R"({"annotations":{"io.kubernetes.cri.container-name":"vllm"}})");
  EXPECT_EQ(record(root_, "containerd", kId), "containerd init=- name=vllm");
  write(task + "/init.pid", "31337");
  EXPECT_EQ(record(root_, "containerd", kId), "containerd init=31337 name=vllm");
  // A bare id under kubepods finds containerd's state first.
  EXPECT_EQ(record(root_, "kubernetes", kId), "containerd init=31337 name=vllm");
  write(task + "/init.pid", "31337; rm -rf /\n");
  EXPECT_EQ(record(root_, "containerd", kId), "containerd init=- name=vllm");
}

TEST_F(RuntimeRoot, CriOsAndPodmansPidfileInTheirRunDirectory) {
  const std::string run = "run/containers/storage/overlay-containers/" + kId + "/userdata";
  write(run + "/config.json", R"({"annotations":{"io.kubernetes.container.name":"jupyter"}})");
  write(run + "/pidfile", "777\n");
  EXPECT_EQ(record(root_, "cri-o", kId), "cri-o init=777 name=jupyter");
  write("var/lib/containers/storage/overlay-containers/containers.json",
        R"([{"id":")" + kId + R"(","names":["web"]}])");
  EXPECT_EQ(record(root_, "podman", kId), "podman init=777 name=web");
  // Podman keeps no state for another id, whatever its run directory holds.
  EXPECT_EQ(record(root_, "podman", kOther), "- init=- name=-");
}

}  // namespace
}  // namespace gpureap::procfs
