// parse_cgroup (src/procfs/parse_cgroup.cpp): container identity for every runtime's layout.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/process.h"
#include "proc_fixture.h"
#include "procfs/parsers.h"

namespace {

using gpureap::core::ContainerInfo;
using gpureap::procfs::parse_cgroup;

using gpureap::testing::proc_fixture;

// One comparable, readable line per result, so a mismatch shows every field at once.
std::string describe(const std::optional<ContainerInfo>& c) {
  if (!c) return "null";
  return c->runtime + " id=" + c->id.value_or("-") + " pod=" + c->pod_uid.value_or("-");
}

std::string from_fixture(int pid) {
  return describe(parse_cgroup(proc_fixture("containers/" + std::to_string(pid) + "/cgroup")));
}

TEST(ParseCgroup, DockerV1) {
  EXPECT_EQ(from_fixture(301),
            "docker id=2a759f8fac4d817ff2bc28c224d51c5030f915c0c14997110517984ca9aa8d0f pod=-");
}

TEST(ParseCgroup, DockerV2Systemd) {
  EXPECT_EQ(from_fixture(302),
            "docker id=523c835670a5065bb35e0b537f4ab7fffdb6fa0d55b6d72d7b6bb4af0cf13045 pod=-");
}

TEST(ParseCgroup, ContainerdNerdctl) {
  EXPECT_EQ(from_fixture(303),
            "containerd id=aa470170773aae4a69e6e0a509eb8c1f304140b1fea1a2d55ec93a07a78e497c pod=-");
}

TEST(ParseCgroup, ContainerdCgroupfsNamespace) {
  EXPECT_EQ(from_fixture(304),
            "containerd id=ec42d2b4b70a311c07d172def2450a2fa371654b11fb29c3ef9ae7f6dceadd17 pod=-");
}

TEST(ParseCgroup, CriOInKubernetesPodUidUnderscoresBecomeDashes) {
  EXPECT_EQ(from_fixture(305),
            "cri-o id=c64064614423cb790e88b3e5492ff5ccf673b25ae823089f7a60c65cda24d809"
            " pod=0b1f4c2e-7d3a-4e5f-9a8b-1c2d3e4f5a6b");
}

TEST(ParseCgroup, PodmanRootfulV2) {
  EXPECT_EQ(from_fixture(306),
            "podman id=2f259bab93aaaaa2542ba43ef33eb990d0999ee1b9924b557b7be53c0b7a1bb9 pod=-");
}

TEST(ParseCgroup, PodmanV1LibpodParent) {
  EXPECT_EQ(from_fixture(307),
            "podman id=7610ee7b6c7446cf1ef0a7374a61bf6d6449d8ceec518b0c7f4b4463044a3074 pod=-");
}

TEST(ParseCgroup, PodmanRootlessUserSlice) {
  EXPECT_EQ(from_fixture(308),
            "podman id=56dfa3bc944415a972b0fe05883435f6f061150cc65600d923a24fd565932362 pod=-");
  EXPECT_EQ(from_fixture(309),
            "podman id=0fe2a7898f70da01b0aada3bb94835d33f5eb2e07abb0811778c46fc30f17f67 pod=-");
}

TEST(ParseCgroup, KubernetesContainerdSystemd) {
  EXPECT_EQ(from_fixture(310),
            "containerd id=4da4b68fe6f1a6c828471a48710d49ffcc588aaa2f71dcceabc043c4540c1776"
            " pod=3f9d2a1c-6b7e-4c5d-8e9f-0a1b2c3d4e5f");
  // Guaranteed QoS: the pod slice sits right under kubepods.slice.
  EXPECT_EQ(from_fixture(311),
            "containerd id=aa21536d9fd228d6134e57c7df3a779d4da73897c1dc61e83d02f4dccc8205cc"
            " pod=0b1f4c2e-7d3a-4e5f-9a8b-1c2d3e4f5a6b");
}

TEST(ParseCgroup, KubernetesCgroupfs) {
  // The runtime cannot be told from a bare id under pod<uid>.
  EXPECT_EQ(from_fixture(312),
            "kubernetes id=0d181464da7e06ae282e3f59cd9c500440e968be5a2b0ed1da1bf5fa2bd8d48c"
            " pod=9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a");
}

TEST(ParseCgroup, NotContainers) {
  for (int pid : {320, 321, 322, 323, 324, 325, 326}) {
    SCOPED_TRACE("containers/" + std::to_string(pid) + "/cgroup");
    EXPECT_EQ(from_fixture(pid), "null");
  }
}

TEST(ParseCgroup, HostProcessesInTheHostFixture) {
  EXPECT_EQ(describe(parse_cgroup(proc_fixture("host/1/cgroup"))), "null");
  EXPECT_EQ(describe(parse_cgroup(proc_fixture("host/2/cgroup"))), "null");
  EXPECT_EQ(describe(parse_cgroup(proc_fixture("host/4242/cgroup"))), "null");
}

// ---- Inline edge cases ----

const std::string kId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(ParseCgroupEdges, EmptyAndGarbage) {
  EXPECT_EQ(describe(parse_cgroup("")), "null");
  EXPECT_EQ(describe(parse_cgroup("no colons at all\n")), "null");
  EXPECT_EQ(describe(parse_cgroup("0:/docker/" + kId + "\n")), "null");  // one colon only
}

TEST(ParseCgroupEdges, BareIdDirectlyUnderTheRootIsNotAContainer) {
  EXPECT_EQ(describe(parse_cgroup("0::/" + kId + "\n")), "null");
}

TEST(ParseCgroupEdges, ShortOrNonHexIdIsNotAContainer) {
  EXPECT_EQ(describe(parse_cgroup("0::/system.slice/docker-abc123.scope\n")), "null");
  EXPECT_EQ(describe(parse_cgroup("0::/system.slice/docker-" + std::string(64, 'g') + ".scope\n")),
            "null");
}

TEST(ParseCgroupEdges, PathsRelativeToACgroupNamespace) {
  // Seen from inside a cgroup namespace, other cgroups appear with ".." components.
  EXPECT_EQ(describe(parse_cgroup("0::/../../system.slice/docker-" + kId + ".scope\n")),
            "docker id=" + kId + " pod=-");
}

TEST(ParseCgroupEdges, CriOCgroupfs) {
  EXPECT_EQ(
      describe(parse_cgroup(
          "0::/kubepods/besteffort/pod9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a/crio-" + kId + "\n")),
      "cri-o id=" + kId + " pod=9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a");
}

TEST(ParseCgroupEdges, PodLevelProcessWithoutContainerScope) {
  EXPECT_EQ(
      describe(parse_cgroup("0::/kubepods.slice/kubepods-burstable.slice/"
                            "kubepods-burstable-pod3f9d2a1c_6b7e_4c5d_8e9f_0a1b2c3d4e5f.slice\n")),
      "kubernetes id=- pod=3f9d2a1c-6b7e-4c5d-8e9f-0a1b2c3d4e5f");
}

TEST(ParseCgroupEdges, PodWordOutsideKubepodsIsNotAPod) {
  EXPECT_EQ(describe(parse_cgroup("0::/system.slice/podman.service\n")), "null");
  EXPECT_EQ(describe(parse_cgroup("0::/user.slice/x-pod0123456789abcdef.slice\n")), "null");
}

TEST(ParseCgroupEdges, PrefersTheLineThatNamesTheContainer) {
  // v1: one controller still at the pod level, another at the container.
  std::string text =
      "3:cpu:/kubepods/burstable/pod9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a\n"
      "2:memory:/kubepods/burstable/pod9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a/" +
      kId +
      "\n"
      "0::/\n";
  EXPECT_EQ(describe(parse_cgroup(text)),
            "kubernetes id=" + kId + " pod=9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a");
}

TEST(ParseCgroupEdges, LastLineWithoutNewline) {
  EXPECT_EQ(describe(parse_cgroup("1:name=systemd:/\n0::/docker/" + kId)),
            "docker id=" + kId + " pod=-");
}

// ---- Where the claim comes from: the hierarchy and the cgroup that names it ----

// "hierarchy cgroup", the hierarchy "-" for cgroup v2.
std::string located(std::string_view text) {
  auto c = parse_cgroup(text);
  if (!c) return "null";
  return (c->hierarchy.empty() ? "-" : c->hierarchy) + " " + c->cgroup;
}

TEST(ParseCgroupLocation, TheCgroupThatNamesTheContainerNotTheOnesInsideIt) {
  // systemd in a container makes cgroups of its own below the container's.
  EXPECT_EQ(located("0::/system.slice/docker-" + kId + ".scope/init.scope\n"),
            "- /system.slice/docker-" + kId + ".scope");
  EXPECT_EQ(located("0::/../../system.slice/docker-" + kId + ".scope\n"),
            "- /../../system.slice/docker-" + kId + ".scope");
}

TEST(ParseCgroupLocation, TheV1HierarchyOfTheLineChosen) {
  EXPECT_EQ(located("3:cpu:/kubepods/burstable/pod9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a\n"
                    "2:memory:/kubepods/burstable/pod9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a/" +
                    kId + "\n0::/\n"),
            "memory /kubepods/burstable/pod9e8d7c6b-5a49-4382-a716-5f4e3d2c1b0a/" + kId);
  EXPECT_EQ(located("1:name=systemd:/docker/" + kId + "\n"), "name=systemd /docker/" + kId);
}

TEST(ParseCgroupLocation, APodLevelProcessIsLocatedAtItsPod) {
  EXPECT_EQ(located("0::/kubepods.slice/kubepods-pod3f9d2a1c_6b7e_4c5d_8e9f_0a1b2c3d4e5f.slice\n"),
            "- /kubepods.slice/kubepods-pod3f9d2a1c_6b7e_4c5d_8e9f_0a1b2c3d4e5f.slice");
}

TEST(ParseCgroupLocation, AHierarchyListedTwiceLocatesNothing) {
  // A cgroup named "x\n0::/system.slice/docker-<id>.scope" (older kernels allowed a line break)
  // would add a line for a cgroup the process is not in.
  std::string forged = "0::/user.slice/x\n0::/system.slice/docker-" + kId + ".scope\n";
  EXPECT_EQ(describe(parse_cgroup(forged)), "docker id=" + kId + " pod=-");
  EXPECT_EQ(located(forged), "- ");
}

}  // namespace
