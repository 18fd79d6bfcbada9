#!/usr/bin/env python3
"""The checks of bench/gpu/validate.sh on a real NVIDIA GPU (run by it; see bench/README.md).

Each check starts its own gpukit-hold processes, compares what gpureap says with what
nvidia-smi (and, for the record layouts, NVML itself through ctypes) says, and cleans up: every
process it starts is killed by PID (after a start-time check) when the check ends, however it
ends. Nothing here changes a GPU setting or resets a GPU.
"""
import argparse
import ctypes
import json
import os
import platform
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
SCHEMA = "gpureap.gpukit/v1"


class CheckFailed(Exception):
    pass


class Log:
    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")

    def write(self, text):
        self.file.write(time.strftime("%H:%M:%S ") + text.rstrip("\n") + "\n")
        self.file.flush()


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def proc_start_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[19])  # field 22 of stat, after pid and comm


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2]


def alive(pid):
    state = proc_state(pid)
    return state is not None and state not in ("Z", "X")


class Processes:
    """Every process a check starts, killed by PID (start time checked) at the end."""

    def __init__(self, pid_file, log):
        self.known = []  # (pid, start ticks)
        self.popens = []
        self.pid_file = pid_file
        self.log = log

    def add(self, pid):
        ticks = proc_start_ticks(pid)
        if ticks is None:
            return
        self.known.append((pid, ticks))
        with open(self.pid_file, "a", encoding="utf-8") as f:
            f.write(f"{pid} {ticks}\n")

    def cleanup(self):
        for pid, ticks in self.known:
            if proc_start_ticks(pid) != ticks or not alive(pid):
                continue
            self.log.write(f"cleanup: SIGKILL {pid}")
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        for p in self.popens:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.known.clear()
        self.popens.clear()


class Kit:
    def __init__(self, args, log):
        self.args = args
        self.log = log
        self.gpu = args.gpu
        self.work = args.work
        self.gpureap_env = dict(os.environ)
        if args.gpureap_libs:
            self.gpureap_env["LD_LIBRARY_PATH"] = args.gpureap_libs + (
                ":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
        self.ps_extra = ["--no-daemon"]
        self.uuid = None
        self.counter = 0

    # --- running commands -----------------------------------------------------------------
    def run(self, cmd, timeout=60, env=None):
        start = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            self.log.write(f"TIMEOUT after {timeout}s: {' '.join(cmd)}")
            raise CheckFailed(f"`{' '.join(cmd)}` did not finish within {timeout}s")
        ms = (time.perf_counter() - start) * 1000
        self.log.write(f"rc={p.returncode} {ms:.0f}ms: {' '.join(cmd)}")
        if p.stderr.strip():
            self.log.write("  stderr: " + p.stderr.strip()[-2000:])
        return p.returncode, p.stdout, p.stderr

    def gpureap(self, *argv, timeout=90):
        return self.run([self.args.gpureap, *argv], timeout=timeout, env=self.gpureap_env)

    def ps(self):
        rc, out, err = self.gpureap("ps", "--json", *self.ps_extra)
        try:
            return json.loads(out)
        except ValueError:
            raise CheckFailed(f"gpureap ps --json exited {rc} without JSON: {err.strip()[-300:]}")

    def smi(self, *argv, timeout=30):
        rc, out, err = self.run(["nvidia-smi", *argv], timeout=timeout)
        if rc != 0:
            raise CheckFailed(f"nvidia-smi {' '.join(argv)} failed ({rc}): {(out + err).strip()}")
        return out

    def smi_gpu(self):
        fields = ["index", "uuid", "name", "driver_version", "memory.total", "memory.used",
                  "memory.free", "memory.reserved"]
        try:
            out = self.smi(f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                           "-i", str(self.gpu))
        except CheckFailed:  # an nvidia-smi too old for memory.reserved
            fields.pop()
            out = self.smi(f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                           "-i", str(self.gpu))
        values = [v.strip() for v in out.strip().splitlines()[0].split(",")]
        row = dict(zip(fields, values))
        for k in ("memory.total", "memory.used", "memory.free", "memory.reserved"):
            row[k] = int(row[k]) if k in row and row[k].isdigit() else None
        self.uuid = row["uuid"]
        return row

    def smi_apps(self):
        """pid -> used MiB (None: [N/A]) of the compute apps on the checked GPU."""
        out = self.smi("--query-compute-apps=pid,used_memory,gpu_uuid",
                       "--format=csv,noheader,nounits")
        apps = {}
        for line in out.strip().splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 3 or not parts[0].isdigit():
                continue
            if self.uuid and parts[2] != self.uuid:
                continue
            apps[int(parts[0])] = int(parts[1]) if parts[1].isdigit() else None
        return apps

    # --- holders --------------------------------------------------------------------------
    def start_hold(self, procs, mode, mib=None, workers=2, seconds=240):
        self.counter += 1
        ready = os.path.join(self.work, f"ready-{self.counter}")
        cmd = [self.args.hold, "--gpu", str(self.gpu), "--mib", str(mib or self.args.mib),
               "--mode", mode, "--workers", str(workers), "--seconds", str(seconds),
               "--ready-file", ready]
        err = open(os.path.join(self.work, f"hold-{self.counter}.err"), "w")
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        procs.popens.append(p)
        procs.add(p.pid)
        self.log.write(f"started {' '.join(cmd)}: pid {p.pid}")
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if p.poll() is not None and not os.path.exists(ready):
                with open(err.name, encoding="utf-8", errors="replace") as f:
                    raise CheckFailed(f"gpukit-hold exited {p.returncode}: {f.read().strip()}")
            if time.monotonic() > deadline:
                raise CheckFailed("gpukit-hold was not ready within 60s")
            time.sleep(0.05)
        with open(ready, encoding="utf-8") as f:
            line = f.read().strip()
        fields = dict(kv.split("=", 1) for kv in line.split()[1:])
        worker_pids = [int(w) for w in fields.get("workers", "").split(",") if w]
        for w in worker_pids:
            procs.add(w)
        return p, worker_pids

    def wait_until(self, predicate, timeout, interval=0.1):
        start = time.monotonic()
        while True:
            value = predicate()
            if value:
                return True, time.monotonic() - start
            if time.monotonic() - start > timeout:
                return False, time.monotonic() - start
            time.sleep(interval)

    def wait_listed(self, pid, timeout=15):
        ok, _ = self.wait_until(lambda: pid in self.smi_apps(), timeout, 0.2)
        if not ok:
            raise CheckFailed(f"nvidia-smi did not list the holder {pid} within {timeout}s")


# --- reading gpureap's JSON -------------------------------------------------------------------
def gpu_json(snapshot, index):
    for g in snapshot.get("gpus", []):
        if g.get("index") == index:
            return g
    raise CheckFailed(f"gpureap ps --json has no GPU {index}")


def row_json(snapshot, pid):
    for r in snapshot.get("processes", []):
        if r.get("pid") == pid:
            return r
    return None


def row_bytes(row, index):
    for u in (row or {}).get("gpus", []):
        if u.get("index") == index:
            return u.get("used_bytes")
    return None


def mib_matches(used_bytes, smi_mib):
    """nvidia-smi prints usedGpuMemory in whole MiB (truncated); either rounding is a match."""
    if used_bytes is None or smi_mib is None:
        return False
    return smi_mib in (used_bytes // MIB, round(used_bytes / MIB))


def expect(condition, message, failures):
    if not condition:
        failures.append(message)


def compare_holder(kit, pid, facts, failures, prefix="holder"):
    """Reads nvidia-smi and gpureap until two rounds agree on the pid's memory (it settles
    once the allocation is done); records both and compares them exactly, in MiB."""
    for _ in range(3):
        apps = kit.smi_apps()
        snap = kit.ps()
        row = row_json(snap, pid)
        used = row_bytes(row, kit.gpu)
        if mib_matches(used, apps.get(pid)):
            break
        time.sleep(0.5)
    facts[f"{prefix}_nvidia_smi_mib"] = apps.get(pid)
    facts[f"{prefix}_gpureap_bytes"] = used
    expect(row is not None, f"gpureap ps does not list {pid}", failures)
    expect(pid in apps, f"nvidia-smi does not list {pid}", failures)
    expect(mib_matches(used, apps.get(pid)),
           f"{prefix} {pid}: gpureap {used} bytes, nvidia-smi {apps.get(pid)} MiB", failures)
    return snap, row


# --- NVML through ctypes: an independent reading of the record layouts ------------------------
def nvml_probe(gpu):
    """Calls NVML's process list (_v3, else _v2) into a canary-filled buffer and measures how far
    the driver wrote; and nvmlDeviceGetMemoryInfo_v2 with the versioned struct."""
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    out = {}
    init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
    rc = init()
    if rc != 0:
        return {"error": f"nvmlInit returned {rc}"}
    try:
        handle = ctypes.c_void_p()
        get = getattr(lib, "nvmlDeviceGetHandleByIndex_v2", None) or lib.nvmlDeviceGetHandleByIndex
        rc = get(ctypes.c_uint(gpu), ctypes.byref(handle))
        if rc != 0:
            return {"error": f"nvmlDeviceGetHandleByIndex returned {rc}"}
        for name in ("nvmlDeviceGetComputeRunningProcesses_v3",
                     "nvmlDeviceGetComputeRunningProcesses_v2"):
            fn = getattr(lib, name, None)
            out[name + "_exported"] = fn is not None
            if fn is None or "function" in out:
                continue
            capacity = 64
            buf = (ctypes.c_ubyte * (capacity * 48))(*([0xA5] * (capacity * 48)))
            count = ctypes.c_uint(capacity)
            rc = fn(handle, ctypes.byref(count), buf)
            raw = bytes(buf)
            extent = len(raw.rstrip(b"\xa5"))
            out.update({"function": name, "rc": rc, "count": count.value, "written_bytes": extent})
            records = []
            if rc == 0 and count.value > 0:
                for stride in (24, 32):
                    recs = []
                    for i in range(count.value):
                        base = i * stride
                        recs.append({"pid": int.from_bytes(raw[base:base + 4], "little"),
                                     "used_bytes": int.from_bytes(raw[base + 8:base + 16],
                                                                  "little")})
                    records.append({"stride": stride, "records": recs})
            out["decoded"] = records
        mem_fn = getattr(lib, "nvmlDeviceGetMemoryInfo_v2", None)
        out["nvmlDeviceGetMemoryInfo_v2_exported"] = mem_fn is not None
        if mem_fn is not None:

            class MemoryV2(ctypes.Structure):
                _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong),
                            ("reserved", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                            ("used", ctypes.c_ulonglong)]

            m = MemoryV2()
            m.version = ctypes.sizeof(MemoryV2) | (2 << 24)
            rc = mem_fn(handle, ctypes.byref(m))
            out["memory_v2"] = {"rc": rc, "version": hex(m.version), "total": m.total,
                                "reserved": m.reserved, "free": m.free, "used": m.used}
    finally:
        lib.nvmlShutdown()
    return out


# --- the checks -------------------------------------------------------------------------------
def check_environment(kit, procs, facts, failures, differences):
    rc, out, _ = kit.gpureap("--version")
    facts["gpureap_version"] = out.strip()
    smi = kit.smi_gpu()
    facts["nvidia_smi"] = smi
    listed = kit.smi("--query-gpu=index,uuid,name", "--format=csv,noheader").strip().splitlines()
    smi_gpus = [[v.strip() for v in line.split(",")] for line in listed]
    snap = kit.ps()
    backend = snap.get("backend", {})
    facts["backend"] = backend
    facts["open_files"] = snap.get("open_files")
    facts["open_files_unknown"] = snap.get("open_files_unknown")
    facts["complete"] = snap.get("complete")
    facts["warnings"] = snap.get("warnings")
    facts["other_compute_apps"] = sorted(kit.smi_apps())
    expect(backend.get("available") is True, f"gpureap's NVML backend is not available: "
           f"{backend.get('error')}", failures)
    expect(backend.get("driver_version") == smi["driver_version"],
           f"driver version: gpureap {backend.get('driver_version')}, nvidia-smi "
           f"{smi['driver_version']}", failures)
    nvidia = [g for g in snap.get("gpus", []) if g.get("vendor") == "nvidia"]
    expect(len(nvidia) == len(smi_gpus),
           f"gpureap sees {len(nvidia)} NVIDIA GPUs, nvidia-smi {len(smi_gpus)}", failures)
    for g, (index, uuid, name) in zip(nvidia, smi_gpus):
        expect(str(g.get("backend_index")) == index and g.get("uuid") == uuid and
               g.get("name") == name,
               f"GPU {index}: gpureap {g.get('backend_index')} {g.get('uuid')} {g.get('name')}, "
               f"nvidia-smi {uuid} {name}", failures)
    if snap.get("open_files") != "exact":
        differences.append("open files compared by kinship, not kcmp: "
                           f"{snap.get('open_files_unknown')}")
    if facts["other_compute_apps"]:
        differences.append(f"other processes use GPU {kit.gpu}: {facts['other_compute_apps']}")


def check_memory_info(kit, procs, facts, failures, differences):
    smi = kit.smi_gpu()
    g = gpu_json(kit.ps(), kit.gpu)
    mem = g.get("memory", {})
    facts["nvidia_smi_mib"] = {k: smi.get(k) for k in
                               ("memory.total", "memory.used", "memory.free", "memory.reserved")}
    facts["gpureap_bytes"] = {k: mem.get(k) for k in
                              ("total_bytes", "used_bytes", "free_bytes", "reserved_bytes")}
    total, used, free, reserved = (mem.get(k) for k in
                                   ("total_bytes", "used_bytes", "free_bytes", "reserved_bytes"))
    expect(total is not None and smi["memory.total"] is not None and
           total // MIB == smi["memory.total"],
           f"total: gpureap {total} bytes, nvidia-smi {smi['memory.total']} MiB", failures)
    expect(reserved is not None,
           "gpureap has no reserved figure: it read nvmlDeviceGetMemoryInfo (v1), not _v2", failures)
    if smi.get("memory.reserved") is not None and reserved is not None:
        expect(abs(reserved // MIB - smi["memory.reserved"]) <= 1,
               f"reserved: gpureap {reserved} bytes, nvidia-smi {smi['memory.reserved']} MiB",
               failures)
    # Used and free move with other processes; a few MiB between the two reads is allowed.
    if used is not None and smi["memory.used"] is not None:
        if abs(used // MIB - smi["memory.used"]) <= 4:
            facts["nvidia_smi_used_is"] = "used (v2: reserved excluded)"
        elif reserved is not None and abs((used + reserved) // MIB - smi["memory.used"]) <= 4:
            facts["nvidia_smi_used_is"] = "used + reserved"
            differences.append("nvidia-smi's memory.used includes the reserved memory; "
                               "gpureap's used_bytes (NVML v2) does not")
        else:
            failures.append(f"used: gpureap {used} bytes, nvidia-smi {smi['memory.used']} MiB")
    expect(free is not None and smi["memory.free"] is not None and
           abs(free // MIB - smi["memory.free"]) <= 4,
           f"free: gpureap {free} bytes, nvidia-smi {smi['memory.free']} MiB", failures)


def check_healthy_holder(kit, procs, facts, failures, differences):
    p, _ = kit.start_hold(procs, "hold")
    kit.wait_listed(p.pid)
    snap, row = compare_holder(kit, p.pid, facts, failures)
    if row:
        facts["anomalies"] = row.get("anomalies")
        facts["devices"] = [d.get("path") for d in row.get("devices", [])]
        expect(row.get("listed_by_driver") is True and row.get("in_proc") is True,
               "the holder is not both listed and in /proc", failures)
        expect(row.get("anomalies") == [], f"a healthy holder has anomalies {row.get('anomalies')}",
               failures)
        expect(any(os.path.basename(d or "").startswith("nvidia") and
                   os.path.basename(d)[6:].isdigit() for d in facts["devices"]),
               f"the holder's /dev/nvidia<N> is not among its devices {facts['devices']}", failures)
    g = gpu_json(snap, kit.gpu)
    facts["attributed_bytes"] = g["memory"].get("attributed_bytes")
    facts["ghost_bytes"] = g["memory"].get("ghost_bytes")
    expect(g["memory"].get("ghost_bytes") == 0, "ghost memory on a GPU with a healthy holder",
           failures)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    expect(p.returncode == 0, f"gpukit-hold exited {p.returncode} after SIGTERM", failures)


def check_process_records(kit, procs, facts, failures, differences):
    p, _ = kit.start_hold(procs, "hold")
    kit.wait_listed(p.pid)
    snap, row = compare_holder(kit, p.pid, facts, failures)
    g = gpu_json(snap, kit.gpu)
    layout = g.get("details", {}).get("process_record_layout")
    facts["gpureap_record_layout"] = layout
    probe = nvml_probe(kit.gpu)
    facts["nvml_probe"] = probe
    expect(layout is not None, "gpureap names no process_record_layout", failures)
    if "error" in probe:
        failures.append(f"NVML probe: {probe['error']}")
        return
    expected_fn = ("nvmlDeviceGetComputeRunningProcesses_v3"
                   if probe.get("nvmlDeviceGetComputeRunningProcesses_v3_exported")
                   else "nvmlDeviceGetComputeRunningProcesses_v2")
    expect(layout is not None and layout.startswith(expected_fn + ","),
           f"gpureap used {layout}, the library exports {expected_fn}", failures)
    count, written = probe.get("count", 0), probe.get("written_bytes", 0)
    stride = None
    if probe.get("rc") == 0 and count > 0:
        for s in (24, 32):
            if (count - 1) * s + 16 <= written <= count * s:
                stride = s
                break
    facts["measured_stride"] = stride
    expect(stride is not None and layout is not None and layout.endswith(f", {stride}-byte records"),
           f"the driver wrote {written} bytes for {count} records (stride {stride}); gpureap "
           f"says {layout}", failures)
    if stride == 32:
        differences.append("this driver writes 32-byte _v3 records (the R535 layout)")
    decoded = next((d["records"] for d in probe.get("decoded", []) if d["stride"] == stride), [])
    mine = next((r for r in decoded if r["pid"] == p.pid), None)
    expect(mine is not None and mine["used_bytes"] == facts.get("holder_gpureap_bytes"),
           f"NVML's own record for {p.pid} ({mine}) differs from gpureap's "
           f"{facts.get('holder_gpureap_bytes')} bytes", failures)
    mem = probe.get("memory_v2")
    gm = g.get("memory", {})
    if mem:
        expect(mem["rc"] == 0, f"nvmlDeviceGetMemoryInfo_v2 returned {mem['rc']}", failures)
        expect(mem["total"] == gm.get("total_bytes") and mem["reserved"] == gm.get("reserved_bytes"),
               f"memory v2: NVML total {mem['total']} reserved {mem['reserved']}, gpureap "
               f"{gm.get('total_bytes')} {gm.get('reserved_bytes')}", failures)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def check_forked_ghost(kit, procs, facts, failures, differences):
    p, workers = kit.start_hold(procs, "fork", workers=2)
    p.wait(timeout=30)
    facts.update({"gone_pid": p.pid, "workers": workers})
    time.sleep(1)  # the parent is gone; does the driver keep its context while workers hold it?
    expect(all(alive(w) for w in workers), "a worker died", failures)
    apps = kit.smi_apps()
    facts["nvidia_smi_lists"] = {str(k): v for k, v in apps.items()}
    if p.pid not in apps:
        listed_workers = [w for w in workers if w in apps]
        raise CheckFailed(f"nvidia-smi does not list the gone PID {p.pid} "
                          f"(lists workers {listed_workers}): the ghost did not form")
    snap, row = compare_holder(kit, p.pid, facts, failures, prefix="ghost")
    if row:
        ghost = row.get("ghost") or {}
        facts["ghost"] = ghost
        facts["anomalies"] = row.get("anomalies")
        expect(row.get("in_proc") is False, "the gone PID is in /proc", failures)
        expect("no-such-process" in row.get("anomalies", []),
               f"the gone PID's anomalies are {row.get('anomalies')}", failures)
        expect(sorted(ghost.get("keepers", [])) == sorted(workers),
               f"keepers {ghost.get('keepers')}, the workers are {workers}", failures)
        expect(ghost.get("leaked") is False, "the ghost is called leaked", failures)
    for w in workers:
        wrow = row_json(snap, w) or {}
        expect("inherited-holder" in wrow.get("anomalies", []) and p.pid in wrow.get("keeps", []),
               f"worker {w}: anomalies {wrow.get('anomalies')}, keeps {wrow.get('keeps')}", failures)
    g = gpu_json(snap, kit.gpu)
    facts["ghost_bytes"] = g["memory"].get("ghost_bytes")
    rc, out, err = kit.gpureap("kill", str(p.pid), "--yes", "--json", "--grace", "5s",
                               "--wait-release", "60s", timeout=120)
    try:
        report = json.loads(out)
    except ValueError:
        raise CheckFailed(f"gpureap kill exited {rc} without JSON: {err.strip()[-300:]}")
    summary = report.get("summary", {})
    gone = report.get("gone_outcomes", [])
    facts["kill"] = {"exit_code": rc, "summary": summary, "gone_outcomes": gone,
                     "outcomes": [{k: o.get(k) for k in ("pid", "outcome", "signals", "release_ms")}
                                  for o in report.get("outcomes", [])]}
    expect(rc == 0, f"gpureap kill exited {rc}: {err.strip()[-300:]}", failures)
    expect(sorted(o.get("pid") for o in report.get("outcomes", [])) == sorted(workers),
           "gpureap kill did not target exactly the workers", failures)
    expect(any(g.get("pid") == p.pid and g.get("released") for g in gone),
           f"gpureap kill did not verify the release of {p.pid}: {gone}", failures)
    still = kit.smi_apps()
    expect(p.pid not in still, f"nvidia-smi still lists {p.pid} after the kill", failures)
    expect(not any(alive(w) for w in workers), "a worker outlived gpureap kill", failures)


def check_stopped_holder(kit, procs, facts, failures, differences):
    p, _ = kit.start_hold(procs, "stop")
    ok, _ = kit.wait_until(lambda: proc_state(p.pid) == "T", 10)
    if not ok:
        raise CheckFailed(f"the holder {p.pid} did not stop (state {proc_state(p.pid)})")
    kit.wait_listed(p.pid)
    snap, row = compare_holder(kit, p.pid, facts, failures)
    if row:
        facts["anomalies"] = row.get("anomalies")
        expect(row.get("state") == "T" and "stopped" in row.get("anomalies", []),
               f"state {row.get('state')}, anomalies {row.get('anomalies')}", failures)
    rc, out, err = kit.gpureap("kill", str(p.pid), "--yes", "--json", "--grace", "5s",
                               "--wait-release", "60s", timeout=120)
    try:
        report = json.loads(out)
    except ValueError:
        raise CheckFailed(f"gpureap kill exited {rc} without JSON: {err.strip()[-300:]}")
    outcomes = report.get("outcomes", [])
    facts["kill"] = {"exit_code": rc, "summary": report.get("summary"),
                     "outcomes": [{k: o.get(k) for k in ("pid", "outcome", "signals", "release_ms",
                                                         "released_bytes")} for o in outcomes]}
    expect(rc == 0 and any(o.get("pid") == p.pid and o.get("outcome") == "released"
                           for o in outcomes),
           f"gpureap kill exited {rc}; outcomes {facts['kill']['outcomes']}", failures)
    expect(p.pid not in kit.smi_apps(), f"nvidia-smi still lists {p.pid}", failures)


def check_run_supervised(kit, procs, facts, failures, differences):
    report_path = os.path.join(kit.work, "run-report.json")
    ready = os.path.join(kit.work, "run-ready")
    cmd = [kit.args.gpureap, "run", "--grace", "3s", "--release-timeout", "60s", "--sample",
           "500ms", "--report", report_path, "--", kit.args.hold, "--gpu", str(kit.gpu), "--mib",
           str(kit.args.mib), "--mode", "fork", "--workers", "2", "--seconds", "240",
           "--ready-file", ready]
    err = open(os.path.join(kit.work, "run.err"), "w")
    run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=kit.gpureap_env,
                           start_new_session=True)
    procs.popens.append(run)
    procs.add(run.pid)
    kit.log.write(f"started {' '.join(cmd)}: pid {run.pid}")
    ok, _ = kit.wait_until(lambda: os.path.exists(ready) or run.poll() is not None, 60, 0.05)
    job = []
    if os.path.exists(ready):
        with open(ready, encoding="utf-8") as f:
            fields = dict(kv.split("=", 1) for kv in f.read().split()[1:])
        job = [int(fields["pid"])] + [int(w) for w in fields.get("workers", "").split(",") if w]
        for pid in job:
            procs.add(pid)
    try:
        rc = run.wait(timeout=120)
    except subprocess.TimeoutExpired:
        raise CheckFailed("gpureap run did not finish within 120s")
    with open(err.name, encoding="utf-8", errors="replace") as f:
        facts["stderr"] = f.read().strip().splitlines()[-8:]
    facts["exit_code"] = rc
    facts["job_pids"] = job
    try:
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise CheckFailed(f"gpureap run wrote no report ({e}); exit {rc}")
    release = report.get("release", {})
    facts["release"] = release
    facts["leftovers"] = [{k: o.get(k) for k in ("pid", "signals", "ended")}
                          for o in report.get("leftovers", [])]
    facts["peaks"] = report.get("gpu", {}).get("peaks")
    expect(rc == 0, f"gpureap run exited {rc}", failures)
    expect(len(job) == 3, f"the job's ready line names {job}", failures)
    expect(release.get("checked") and release.get("released") and
           release.get("method") == "driver",
           f"release: {release}", failures)
    expect(isinstance(release.get("seconds"), (int, float)), "no release time reported", failures)
    expect(sorted(o.get("pid") for o in report.get("leftovers", [])) == sorted(job[1:]),
           f"leftovers {facts['leftovers']}, the workers are {job[1:]}", failures)
    apps = kit.smi_apps()
    expect(not any(pid in apps for pid in job), f"nvidia-smi still lists the job: {apps}", failures)
    expect(not any(alive(pid) for pid in job), "a process of the job outlived gpureap run",
           failures)


def check_exit_release(kit, procs, facts, failures, differences):
    p, _ = kit.start_hold(procs, "hold")
    kit.wait_listed(p.pid)
    p.send_signal(signal.SIGKILL)  # dies holding: no cuMemFree, no cuCtxDestroy
    p.wait(timeout=30)
    ok, seconds = kit.wait_until(lambda: p.pid not in kit.smi_apps(), 30, 0.05)
    facts["driver_release_seconds"] = round(seconds, 3)
    expect(ok, f"nvidia-smi still lists {p.pid} 30s after it died", failures)
    row = row_json(kit.ps(), p.pid)
    expect(row is None, f"gpureap still lists {p.pid}: {row and row.get('anomalies')}", failures)
    # The same through gpureap run: a job that exits without freeing leaves nothing either.
    report_path = os.path.join(kit.work, "run-exit-report.json")
    rc, _, err = kit.gpureap("run", "--release-timeout", "60s", "--report", report_path, "--",
                             kit.args.hold, "--gpu", str(kit.gpu), "--mib", str(kit.args.mib),
                             "--mode", "exit", timeout=120)
    try:
        with open(report_path, encoding="utf-8") as f:
            release = json.load(f).get("release", {})
    except (OSError, ValueError) as e:
        raise CheckFailed(f"gpureap run -- gpukit-hold --mode exit wrote no report ({e}); exit {rc}")
    facts["run_exit_release"] = release
    expect(rc == 0 and release.get("released") is True,
           f"gpureap run -- gpukit-hold --mode exit: exit {rc}, release {release}", failures)


def check_timing(kit, procs, facts, failures, differences):
    p, _ = kit.start_hold(procs, "hold")
    kit.wait_listed(p.pid)
    commands = {
        "gpureap_ps_json": ([kit.args.gpureap, "ps", "--json", *kit.ps_extra], kit.gpureap_env),
        "nvidia_smi_query_compute_apps": (["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                           "--format=csv,noheader,nounits"], None),
    }
    samples = {name: {"wall_ms": [], "cpu_ms": []} for name in commands}
    for round_ in range(kit.args.runs + 1):  # round 0 warms up
        for name, (cmd, env) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                               timeout=60)
            wall = (time.perf_counter() - start) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                failures.append(f"{name} exited {r.returncode}")
            if round_ == 0:
                continue
            cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
            samples[name]["wall_ms"].append(round(wall, 2))
            samples[name]["cpu_ms"].append(round(cpu, 2))
    for name, s in samples.items():
        w = s["wall_ms"]
        facts[name] = {"runs": len(w), "median_ms": round(statistics.median(w), 2),
                       "min_ms": min(w), "max_ms": max(w),
                       "cpu_median_ms": round(statistics.median(s["cpu_ms"]), 2),
                       "wall_ms": w}
    facts["ratio_gpureap_to_nvidia_smi"] = round(
        facts["gpureap_ps_json"]["median_ms"] / facts["nvidia_smi_query_compute_apps"]["median_ms"],
        2)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


CHECKS = {
    "environment": check_environment,
    "memory_info": check_memory_info,
    "healthy_holder": check_healthy_holder,
    "process_records": check_process_records,
    "forked_ghost": check_forked_ghost,
    "stopped_holder": check_stopped_holder,
    "run_supervised": check_run_supervised,
    "exit_release": check_exit_release,
    "timing": check_timing,
}


def on_term(signum, frame):
    raise SystemExit(128 + signum)


def on_alarm(signum, frame):
    raise CheckFailed("the check ran past its --check-timeout")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpureap", required=True)
    ap.add_argument("--gpureap-libs", default="")
    ap.add_argument("--hold", required=True)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--check-timeout", type=int, default=150)
    ap.add_argument("--work", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--pid-file", required=True)
    ap.add_argument("--checks", nargs="+", required=True)
    ap.add_argument("--describe", nargs="*", default=[])  # name=what, from validate.sh
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    log = Log(os.path.join(os.path.dirname(args.result), "gpukit-log.txt"))
    kit = Kit(args, log)
    what = dict(d.split("=", 1) for d in args.describe)
    started = time.monotonic()
    result = {"schema": SCHEMA, "status": "failed", "started_at": now_iso(),
              "host": {"hostname": socket.gethostname(), "kernel": platform.release(),
                       "root": os.geteuid() == 0},
              "settings": {"gpu": args.gpu, "mib": args.mib, "runs": args.runs},
              "tools": {"gpureap": args.gpureap, "hold": args.hold}, "checks": []}
    try:
        try:
            kit.smi_gpu()
        except CheckFailed as e:
            result["reason"] = str(e)
            return 1
        for name in args.checks:
            check = {"name": name, "what": what.get(name, ""), "status": "fail", "seconds": None,
                     "facts": {}, "failures": [], "differences": []}
            result["checks"].append(check)
            procs = Processes(args.pid_file, log)
            start = time.monotonic()
            log.write(f"== {name}")
            # The alarm bounds the whole check, whatever it waits on.
            signal.signal(signal.SIGALRM, on_alarm)
            signal.alarm(args.check_timeout)
            try:
                CHECKS[name](kit, procs, check["facts"], check["failures"], check["differences"])
                check["status"] = "pass" if not check["failures"] else "fail"
            except CheckFailed as e:
                check["failures"].append(str(e))
            except Exception as e:  # a bug in the kit, or a surprise from a tool: keep going
                check["status"] = "error"
                check["failures"].append(f"{type(e).__name__}: {e}")
            finally:
                signal.alarm(0)
                procs.cleanup()
            check["seconds"] = round(time.monotonic() - start, 2)
            log.write(f"== {name}: {check['status']} {check['failures']}")
        failed = [c for c in result["checks"] if c["status"] != "pass"]
        result["status"] = "passed" if not failed else "failed"
    finally:
        result["finished_at"] = now_iso()
        result["seconds"] = round(time.monotonic() - started, 2)
        result["exit_code"] = 0 if result["status"] == "passed" else 1
        with open(args.result, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        write_summary(result, args.summary)
    return result["exit_code"]


def key_fact(check):
    f = check["facts"]
    if check["failures"]:
        return check["failures"][0][:90]
    if check["name"] == "timing":
        g, s = f["gpureap_ps_json"], f["nvidia_smi_query_compute_apps"]
        return (f"ps --json {g['median_ms']} ms, nvidia-smi {s['median_ms']} ms "
                f"(median of {g['runs']}; {f['ratio_gpureap_to_nvidia_smi']}x)")
    if check["name"] == "process_records":
        return f"{f.get('gpureap_record_layout')}; memory v2 reserved read"
    if check["name"] == "forked_ghost":
        k = f.get("kill", {})
        rel = next((g.get("release_ms") for g in k.get("gone_outcomes", [])), None)
        return f"gone {f.get('gone_pid')} kept by {f.get('workers')}; kill released in {rel} ms"
    if check["name"] == "run_supervised":
        return f"released {f.get('release', {}).get('seconds')} s after teardown"
    if check["name"] == "exit_release":
        return (f"driver dropped a killed holder in {f.get('driver_release_seconds')} s; run: "
                f"{f.get('run_exit_release', {}).get('seconds')} s")
    if "holder_nvidia_smi_mib" in f:
        return f"{f['holder_nvidia_smi_mib']} MiB in both"
    return ""


def write_summary(result, path):
    lines = [f"gpukit on {result['host']['hostname']}: {result['status']} "
             f"({result['seconds']} s)", "",
             f"{'check':<17} {'status':<6} {'s':>6}  detail"]
    for c in result["checks"]:
        seconds = "-" if c["seconds"] is None else c["seconds"]
        try:
            detail = key_fact(c)
        except (KeyError, TypeError, ZeroDivisionError):
            detail = ""
        lines.append(f"{c['name']:<17} {c['status']:<6} {seconds:>6}  {detail}")
        for d in c["differences"]:
            lines.append(f"{'':<31}difference: {d}")
    text = "\n".join(lines) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    sys.exit(main())
