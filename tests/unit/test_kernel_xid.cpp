// NVIDIA's Xid lines of several driver generations, their catalog, and the events they become:
// matched to the GPU by PCI address, timed by the boot time, counted by the daemon's follower.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backend/registry.h"
#include "kernel/gpu_events.h"
#include "kernel/nvidia/xid_catalog.h"
#include "kernel/nvidia/xid_line.h"
#include "kernel/pci_address.h"

namespace gpureap::kernel {
namespace {

using nvidia::parse_xid_line;

// The kernel-log parsers of the built-in backends (NVIDIA's Xids).
KernelLogParsers every_vendors_parsers() {
  return backend::kernel_log_parsers(backend::builtin_backends());
}

TEST(KernelXid, PciAddressesOfEveryShapeMatch) {
  EXPECT_EQ(normalize_pci_address("PCI:0000:3B:00"), "0000:3b:00");
  EXPECT_EQ(normalize_pci_address("00000000:3B:00.0"), "0000:3b:00");  // NVML's bus id
  EXPECT_EQ(normalize_pci_address("0000:3b:00.0"), "0000:3b:00");
  EXPECT_EQ(normalize_pci_address("3b:00"), "0000:3b:00");
  for (const char* bad : {"", "PCI:", "0000:3b", "zz:00", "0000:3b:00.0.1", "0000:3b:40", "1:2:3:4",
                          "000000000:3b:00"})
    EXPECT_FALSE(normalize_pci_address(bad)) << bad;
}

TEST(KernelXid, EveryDriverGenerationsLine) {
  // R3xx: no PCI: prefix, no pid.
  auto old = parse_xid_line("NVRM: Xid (0000:03:00): 13, 0002 00000000 0000a097 00001a00");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->pci_address, "0000:03:00");
  EXPECT_EQ(old->xid, 13u);
  EXPECT_FALSE(old->pid);
  EXPECT_EQ(old->detail, "0002 00000000 0000a097 00001a00");
  // R4xx: PCI: prefix, no pid.
  auto r4 = parse_xid_line("NVRM: Xid (PCI:0000:01:00): 31, Ch 00000010, engmask 00000101");
  ASSERT_TRUE(r4);
  EXPECT_EQ(r4->xid, 31u);
  EXPECT_FALSE(r4->pid);
  EXPECT_EQ(r4->detail, "Ch 00000010, engmask 00000101");
  // R470: pid only.
  auto r470 = parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 43, pid=2283, Ch 00000008");
  ASSERT_TRUE(r470);
  EXPECT_EQ(r470->pid, 2283);
  EXPECT_FALSE(r470->process_name);
  EXPECT_EQ(r470->detail, "Ch 00000008");
  // R510 and later: pid and name.
  auto r5 = parse_xid_line(
      "NVRM: Xid (PCI:0000:3B:00): 31, pid=4242, name=python3, Ch 00000008, intr 00000000. MMU "
      "Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f8e_12340000");
  ASSERT_TRUE(r5);
  EXPECT_EQ(r5->pci_address, "0000:3b:00");
  EXPECT_EQ(r5->pid, 4242);
  EXPECT_EQ(r5->process_name, "python3");
  EXPECT_EQ(r5->detail.rfind("Ch 00000008, intr", 0), 0u);
  // A GPU off the bus names no process.
  auto r79 = parse_xid_line(
      "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
      "bus.");
  ASSERT_TRUE(r79);
  EXPECT_FALSE(r79->pid);
  EXPECT_FALSE(r79->process_name);
  EXPECT_EQ(r79->detail, "GPU has fallen off the bus.");
  // GSP era, an instance of a MIG GPU, and a number with nothing after it.
  auto gsp = parse_xid_line(
      "NVRM: Xid (PCI:0000:00:07): 119, pid=1234, name=python3, Timeout after 45s of waiting for "
      "RPC response");
  ASSERT_TRUE(gsp);
  EXPECT_EQ(gsp->xid, 119u);
  auto mig = parse_xid_line("NVRM: Xid (PCI:0000:3b:00 GPU-I:03): 31, pid=77, name=python, Ch 1");
  ASSERT_TRUE(mig);
  EXPECT_EQ(mig->pci_address, "0000:3b:00");
  EXPECT_EQ(mig->pid, 77);
  auto bare = parse_xid_line("NVRM: Xid (PCI:0001:c1:00): 150");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->pci_address, "0001:c1:00");
  EXPECT_EQ(bare->detail, "");
}

TEST(KernelXid, WhatIsNoXidLineIsLeftAlone) {
  for (const char* text : {"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15", "NVRM: Xid",
                           "NVRM: Xid ()", "NVRM: Xid (PCI:0000:3b:00) 31",
                           "NVRM: Xid (PCI:0000:3b:00): x", "Xid (PCI:0000:3b:00): 31",
                           "NVRM: Xid (PCI:0000:3b:00: 31", "NVRM: Xid (not-pci): 31, pid=1"})
    EXPECT_FALSE(parse_xid_line(text)) << text;
  // Kernel messages that quote what a user chose, with the driver's words inside: a segfault
  // report names the mapping's file, the NULL-argv warning the exec path, and many messages
  // begin with a process's name. Only a message that begins with the prefix is the driver's.
  for (const char* quoted :
       {"python[4242]: segfault at 0 ip 00007f00 sp 00007ffc error 4 in NVRM: Xid "
        "(PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.so[7f00+1000]",
        "process 'sh' launched '/tmp/NVRM: Xid (PCI:0000:3b:00): 79, pid=1, x' with NULL argv: "
        "empty string added",
        "nvidia 0000:00:07.0: NVRM: Xid (PCI:0000:00:07): 119, pid=1234, name=python3",
        " NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:[4242]: segfault at 0 ip 00007f00 sp 00007ffc error 4 in x.so): 79"})
    EXPECT_FALSE(parse_xid_line(quoted)) << quoted;
  auto odd = parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 31, pid=-5, name=, rest");
  ASSERT_TRUE(odd);
  EXPECT_FALSE(odd->pid);  // a pid that cannot be is no pid
  EXPECT_FALSE(odd->process_name);
}

TEST(KernelXid, TheCatalogHasTheXidsThatMatter) {
  for (unsigned x :
       {13u, 31u, 43u, 45u, 48u, 63u, 64u, 74u, 79u, 92u, 94u, 95u, 109u, 119u, 120u}) {
    const auto* e = nvidia::find_xid(x);
    ASSERT_NE(e, nullptr) << x;
    EXPECT_FALSE(e->name.empty());
    EXPECT_FALSE(e->cause.empty());
    EXPECT_FALSE(e->action.empty());
  }
  EXPECT_TRUE(nvidia::find_xid(79)->needs_reboot);
  EXPECT_TRUE(nvidia::find_xid(95)->needs_reboot);
  EXPECT_FALSE(nvidia::find_xid(48)->needs_reboot);
  EXPECT_EQ(nvidia::find_xid(48)->level, core::KernelEventLevel::Critical);
  EXPECT_TRUE(nvidia::find_xid(31)->application);
  EXPECT_EQ(nvidia::find_xid(45)->level, core::KernelEventLevel::Info);
  EXPECT_EQ(nvidia::find_xid(150), nullptr);
  EXPECT_EQ(nvidia::find_xid(0), nullptr);
}

core::Gpu gpu_at(unsigned index, std::string bus_id, std::string uuid) {
  core::Gpu g;
  g.index = index;
  g.pci_bus_id = std::move(bus_id);
  g.uuid = std::move(uuid);
  return g;
}

TEST(KernelXid, EventsAreMatchedToGpusAndTimedByTheBootTime) {
  KmsgRecord r;
  r.seq = 9;
  r.usec = 3'500'000;
  r.text = "NVRM: Xid (PCI:0000:5e:00): 150, pid=77, some new error";
  const auto read_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  auto e = gpu_event(r, 1'700'000'000, read_at, every_vendors_parsers());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 150u);
  EXPECT_FALSE(e->name);  // unknown, kept with its number and text
  EXPECT_EQ(e->detail, "some new error");
  ASSERT_TRUE(e->time);
  EXPECT_EQ(
      std::chrono::duration_cast<std::chrono::milliseconds>(e->time->time_since_epoch()).count(),
      1'700'000'003'500);
  std::vector<core::KernelGpuEvent> events{*e};
  assign_gpus(events,
              {gpu_at(0, "00000000:3B:00.0", "GPU-a"), gpu_at(1, "00000000:5E:00.0", "GPU-b")});
  EXPECT_EQ(events[0].gpu, 1u);
  assign_gpus(events, {gpu_at(0, "00000000:3B:00.0", "GPU-a")});
  EXPECT_FALSE(events[0].gpu);  // no backend reports that address (off the bus)
  r.text = "usb 1-1: new high-speed USB device";
  EXPECT_FALSE(gpu_event(r, std::nullopt, read_at, every_vendors_parsers()));
  // The same Xid text written by a process (facility user: the kernel forces it) is no Xid.
  auto forged = parse_kmsg_header("12,10,4000000,-;NVRM: Xid (PCI:0000:5e:00): 79, GPU has fallen");
  ASSERT_TRUE(forged);
  EXPECT_FALSE(gpu_event(*forged, 1'700'000'000, read_at, every_vendors_parsers()));
  auto kernel = parse_kmsg_header("4,10,4000000,-;NVRM: Xid (PCI:0000:5e:00): 79, GPU has fallen");
  ASSERT_TRUE(kernel);
  EXPECT_TRUE(gpu_event(*kernel, 1'700'000'000, read_at, every_vendors_parsers()));
  // A stamp no clock can hold (a saved or forged log) keeps the event, without a clock time.
  auto far = parse_kmsg_header("4,11,10044444444444444,-;NVRM: Xid (PCI:0000:5e:00): 79, gone");
  ASSERT_TRUE(far);
  auto far_event = gpu_event(*far, 1'700'000'000, read_at, every_vendors_parsers());
  ASSERT_TRUE(far_event);
  EXPECT_EQ(far_event->since_boot_usec, 10044444444444444u);
  EXPECT_FALSE(far_event->time);
  EXPECT_EQ(far_event->stamp, core::KernelStamp::Unknown);
}

// A record's stamp counts from the boot, so a record of this boot is stamped before it is read.
// One stamped later (a saved log of another boot, a forged one) keeps its time, marked so.
TEST(KernelXid, ARecordStampedLaterThanItWasReadIsNotOfThisBoot) {
  auto r = parse_kmsg_header("4,10,86400000000,-;NVRM: Xid (PCI:0000:5e:00): 79, pid=77, gone");
  ASSERT_TRUE(r);
  const long long boot = 1'700'000'000;
  const auto at = [&](long long s) {
    return std::chrono::system_clock::time_point(std::chrono::seconds(boot + s));
  };
  auto day_later = gpu_event(*r, boot, at(86'400), every_vendors_parsers());
  ASSERT_TRUE(day_later);
  EXPECT_EQ(day_later->stamp, core::KernelStamp::ThisBoot);
  auto just_written = gpu_event(*r, boot, at(86'399), every_vendors_parsers());  // clock slack
  ASSERT_TRUE(just_written);
  EXPECT_EQ(just_written->stamp, core::KernelStamp::ThisBoot);
  auto hour_before = gpu_event(*r, boot, at(82'800), every_vendors_parsers());
  ASSERT_TRUE(hour_before);
  EXPECT_EQ(hour_before->stamp, core::KernelStamp::Future);
  ASSERT_TRUE(hour_before->time);
  EXPECT_EQ(*hour_before->time, at(86'400));
  EXPECT_EQ(hour_before->pid, 77);  // what the record says, kept: the consumers judge it
}

TEST(KernelXid, TheFollowerCountsEachEventOnceAsTheLogGrows) {
  auto path = (std::filesystem::temp_directory_path() /
               ("gpureap-xid-follow-" + std::to_string(::getpid())))
                  .string();
  std::ofstream(path) << "6,1,10,-;boot\n4,2,20,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, "
                         "name=python, Ch 00000008\n";
  std::vector<core::Gpu> gpus{gpu_at(0, "00000000:3B:00.0", "GPU-a")};
  KernelLogFollower follower(path, every_vendors_parsers(), 2);
  EXPECT_EQ(follower.poll(1'700'000'000, gpus).size(), 1u);
  EXPECT_EQ(follower.poll(1'700'000'000, gpus).size(), 0u);  // nothing new, nothing re-read
  std::ofstream(path, std::ios::app)
      << "4,3,30,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=4243, name=python, Ch 00000008\n"
         "4,4,40,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
         "fallen off the bus.\n";
  auto fresh = follower.poll(1'700'000'000, gpus);
  ASSERT_EQ(fresh.size(), 2u);
  EXPECT_EQ(fresh[1].code, 79u);
  EXPECT_TRUE(fresh[1].needs_reboot);
  auto counts = follower.counts();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0].code, 31u);
  EXPECT_EQ(counts[0].events, 2u);
  EXPECT_EQ(counts[0].gpu, 0u);
  EXPECT_EQ(counts[1].code, 79u);
  EXPECT_EQ(counts[1].events, 1u);
  EXPECT_EQ(follower.log().events.size(), 2u);  // bounded to the latest two
  EXPECT_EQ(follower.log().records, 4u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gpureap::kernel
