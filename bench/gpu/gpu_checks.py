#!/usr/bin/env python3
"""The checks of bench/gpu/validate.sh on a real NVIDIA GPU (run by it; see bench/README.md).

Each check starts its own gpukit-hold processes, compares what gpureap says with what
nvidia-smi (and, for the record layouts, NVML itself through ctypes) says, and cleans up: every
process it starts is killed by PID (after a start-time check) when the check ends, however it
ends. Nothing here changes a GPU setting or resets a GPU.
"""
import argparse
import json
import os
import platform
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time

from gpu_sharing_checks import SHARING_CHECKS
from gpukit_support import (MIB, CheckFailed, CheckSkipped, Kit, Log, Processes, alive,
                            compare_holder, expect, gpu_json, now_iso, nvml_probe, proc_state,
                            row_json)

SCHEMA = "gpureap.gpukit/v1"


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


TIMING_LINE = re.compile(r"^(?:gpureap|smi-standin): timing: (.+): ([0-9]+(?:\.[0-9]+)?) ms$")


def timing_phases(stderr):
    """{phase: ms} from the lines GPUREAP_TIMING (and the stand-in's --timing) print."""
    phases = {}
    for line in stderr.splitlines():
        m = TIMING_LINE.match(line.strip())
        if m:
            phases[m.group(1)] = phases.get(m.group(1), 0) + float(m.group(2))
    return phases


def check_timing(kit, procs, facts, failures, differences):
    p, _ = kit.start_hold(procs, "hold")
    kit.wait_listed(p.pid)
    ps_cmd = [kit.args.gpureap, "ps", "--json", *kit.ps_extra]
    commands = {
        "gpureap_ps_json": (ps_cmd, kit.gpureap_env),
        "nvidia_smi_query_compute_apps": (["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                           "--format=csv,noheader,nounits"], None),
    }
    # nvidia-smi's NVML calls for that query, in C (bench/smi_standin.c), against this driver:
    # where nvidia-smi's own time goes, which nvidia-smi does not say.
    if kit.args.standin:
        commands["smi_standin"] = ([kit.args.standin], None)
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
    # Where the time goes: one more run of each with its phases on stderr.
    env = dict(kit.gpureap_env, GPUREAP_TIMING="1")
    _, _, err = kit.run(ps_cmd, env=env)
    facts["gpureap_phases_ms"] = timing_phases(err)
    if not facts["gpureap_phases_ms"]:
        failures.append("GPUREAP_TIMING=1 gpureap ps --json printed no phase timings")
    if kit.args.standin:
        _, _, err = kit.run([kit.args.standin, "--timing"])
        facts["nvidia_smi_standin_phases_ms"] = timing_phases(err)
    else:
        differences.append("no C compiler: nvidia-smi's NVML calls were not timed (smi_standin.c)")
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def _daemon_get(port, path, timeout=2):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return json.loads(r.read(16 << 20))


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _device_fds(pid, device):
    fds = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == device:
                fds.add(int(fd))
        except OSError:
            pass
    return fds


def check_daemon_events(kit, procs, facts, failures, differences):
    """The daemon following the kernel's events on the real device files during an open storm
    by an unprivileged user: a new holder seen within 100 ms, the daemon never a holder itself
    (no device fd of its own appears, the driver never lists it), its CPU low, its history whole.
    """
    if os.geteuid() != 0:
        raise CheckFailed("the daemon's events (fanotify) need root: run the kit as root")
    device = f"/dev/nvidia{kit.gpu}"
    storm_seconds, interval_s = 10, 1
    config = os.path.join(kit.work, "daemon.toml")
    with open(config, "w", encoding="utf-8") as f:
        f.write(f'interval = "{interval_s}s"\nhistory = "10m"\nlocal_socket = ""\n')
    log_path = os.path.join(kit.work, "daemon.log")
    log = open(log_path, "w")
    d = subprocess.Popen([kit.args.gpureap, "daemon", "--config", config, "--listen",
                          "127.0.0.1:0"], stdout=log, stderr=subprocess.STDOUT,
                         env=kit.gpureap_env, start_new_session=True)
    procs.popens.append(d)
    procs.add(d.pid)

    def daemon_log():
        with open(log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    ok, _ = kit.wait_until(lambda: "holder tracking:" in daemon_log() and
                           "listening on http://127.0.0.1:" in daemon_log(), 30, 0.1)
    text = daemon_log()
    if not ok:
        raise CheckFailed(f"the daemon did not start following holders within 30s: {text[-500:]}")
    port = int(text.split("listening on http://127.0.0.1:", 1)[1].split("/", 1)[0])
    tracking = [line for line in text.splitlines() if "holder tracking:" in line]
    facts["tracking_log"] = tracking
    status = _daemon_get(port, "/api/v1/status").get("holder_tracking", {})
    facts["status"] = status
    expect(status.get("mode") in ("events", "opens"),
           f"the daemon does not follow the kernel's events: {tracking}", failures)
    expect(status.get("event_source") == "file_handles",
           f"events name GPU files by {status.get('event_source')} "
           f"({status.get('event_source_fallback')}): the kernel opens {device} in the daemon",
           failures)
    ok, _ = kit.wait_until(lambda: _daemon_get(port, "/api/v1/snapshot").get("gpus"), 30, 0.2)
    expect(bool(ok), "the daemon's snapshot lists no GPU", failures)
    baseline = _device_fds(d.pid, device)

    # The storm: an unprivileged user (as /dev/nvidia* is usually 0666) opening and closing.
    def as_nobody():
        os.setgid(65534)
        os.setuid(65534)
    storm_code = ("import os,sys,time\nend=time.monotonic()+float(sys.argv[2])\n"
                  "n=0\nwhile time.monotonic()<end:\n os.close(os.open(sys.argv[1],os.O_RDONLY))\n"
                  " n+=1\nprint(n)\n")
    storm = subprocess.Popen([sys.executable, "-c", storm_code, device, str(storm_seconds)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=as_nobody, start_new_session=True)
    procs.popens.append(storm)
    procs.add(storm.pid)
    cpu_before, wall_before = _cpu_seconds(d.pid), time.monotonic()
    time.sleep(1)

    # New holders during the storm: the time from their open to the daemon's live view.
    holder_code = ("import os,sys,time\nfd=os.open(sys.argv[1],os.O_RDONLY)\n"
                   "t=time.monotonic()\nopen(sys.argv[2],'w').write(repr(t))\ntime.sleep(60)\n")
    latencies, transient = [], set()
    for i in range(5):
        stamp = os.path.join(kit.work, f"opened-{i}")
        h = subprocess.Popen([sys.executable, "-c", holder_code, device, stamp],
                             start_new_session=True)
        procs.popens.append(h)
        procs.add(h.pid)
        seen = None
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            transient |= _device_fds(d.pid, device) - baseline
            snap = _daemon_get(port, "/api/v1/snapshot")
            row = row_json(snap, h.pid)
            if row and row.get("holds_device") and os.path.exists(stamp):
                seen = time.monotonic()
                break
            time.sleep(0.002)
        if seen is None:
            failures.append(f"a holder opened during the storm ({h.pid}) was not seen within 5s")
        else:
            with open(stamp, encoding="ascii") as f:
                latencies.append(round((seen - float(f.read())) * 1000, 1))
        h.kill()
        h.wait(timeout=10)
        time.sleep(0.5)
    # The rest of the storm: the daemon is never among the driver's processes, and no device
    # file of its own appears (the fallback's per-event opens would show here).
    listed, asked_driver = False, 0.0
    while storm.poll() is None:
        transient |= _device_fds(d.pid, device) - baseline
        if time.monotonic() - asked_driver > 1:  # nvidia-smi takes a while: once a second
            listed = listed or d.pid in kit.smi_apps()
            asked_driver = time.monotonic()
        time.sleep(0.002)
    cpu = (_cpu_seconds(d.pid) - cpu_before) / (time.monotonic() - wall_before)
    out, err = storm.communicate(timeout=10)
    facts["storm_opens"] = int(out.strip() or 0)
    facts["storm_seconds"] = storm_seconds
    facts["new_holder_latency_ms"] = latencies
    facts["daemon_cpu_share_during_storm"] = round(cpu, 3)
    facts["daemon_transient_device_fds"] = sorted(transient)
    expect(facts["storm_opens"] > 1000,
           f"the storm opened {device} only {facts['storm_opens']} times: {err.strip()[-300:]}",
           failures)
    expect(latencies and max(latencies) <= 100,
           f"new holders were seen after {latencies} ms (over 100 ms)", failures)
    expect(cpu <= 0.10, f"the daemon used {cpu:.0%} of a core during the storm", failures)
    expect(not transient, f"the daemon itself opened {device} during the storm (fds "
           f"{sorted(transient)})", failures)
    expect(not listed, "the driver listed the daemon among the GPU's processes", failures)
    snap = _daemon_get(port, "/api/v1/snapshot")
    expect(row_json(snap, d.pid) is None or not row_json(snap, d.pid).get("listed_by_driver"),
           "gpureap lists the daemon as a holder the driver knows", failures)
    # The history: one point per interval, the storm notwithstanding.
    history = _daemon_get(port, "/api/v1/history?since=1h")
    points = [p["time"] for g in history.get("gpus", []) if g.get("gpu") == kit.gpu
              for p in g.get("samples", [])]
    facts["history_points"] = len(points)
    span = (points[-1] - points[0]) if len(points) >= 2 else 0
    facts["history_span_seconds"] = round(span, 1)
    slots = {int(t // interval_s) for t in points}
    expect(len(slots) == len(points), "the history has two points in one interval", failures)
    expect(len(points) <= span / interval_s + 2,
           f"{len(points)} history points over {span:.1f}s at {interval_s}s", failures)
    d.send_signal(signal.SIGTERM)
    try:
        d.wait(timeout=15)
    except subprocess.TimeoutExpired:
        failures.append("the daemon did not stop within 15s of SIGTERM")


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
    "daemon_events": check_daemon_events,
    **SHARING_CHECKS,
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
    ap.add_argument("--standin", default="")  # bench/smi_standin.c compiled; "" without a compiler
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
            except CheckSkipped as e:
                check["status"] = "skipped"
                check["reason"] = str(e)
            except Exception as e:  # a bug in the kit, or a surprise from a tool: keep going
                check["status"] = "error"
                check["failures"].append(f"{type(e).__name__}: {e}")
            finally:
                signal.alarm(0)
                procs.cleanup()
            check["seconds"] = round(time.monotonic() - start, 2)
            log.write(f"== {name}: {check['status']} {check['failures']}")
        failed = [c for c in result["checks"] if c["status"] not in ("pass", "skipped")]
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
    if check["status"] == "skipped":
        return f"skipped: {check.get('reason')}"
    if check["name"] == "mps_client":
        if "server_dropped_the_client_seconds" in f:
            return f"the MPS server dropped a killed client in {f['server_dropped_the_client_seconds']} s"
        return (f"gone client {f.get('client_pid')} kept by MPS server {f.get('server_pid')}; "
                f"terminate_client released it in {f.get('terminate_client_release_seconds')} s")
    if check["name"] == "mig_instances":
        return f"{len(f.get('gpureap_instances', []))} instances, as nvidia-smi -L lists them"
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
    if check["name"] == "daemon_events":
        return (f"storm of {f.get('storm_opens')} opens: new holders in "
                f"{f.get('new_holder_latency_ms')} ms, daemon CPU "
                f"{f.get('daemon_cpu_share_during_storm')}, {f.get('history_points')} history "
                f"points over {f.get('history_span_seconds')} s")
    if "holder_nvidia_smi_mib" in f:
        return f"{f['holder_nvidia_smi_mib']} MiB in both"
    return ""


def phase_lines(check):
    """The timing check's two breakdowns, side by side, under its row of the summary."""
    f = check.get("facts", {})
    ours, theirs = f.get("gpureap_phases_ms"), f.get("nvidia_smi_standin_phases_ms") or {}
    if check.get("name") != "timing" or not ours:
        return []
    lines = [f"{'':<32}{'phase':<38} {'gpureap ms':>10} {'smi calls ms':>12}"]
    for phase in list(ours) + [p for p in theirs if p not in ours]:
        a = f"{ours[phase]:.3f}" if phase in ours else "-"
        b = f"{theirs[phase]:.3f}" if phase in theirs else "-"
        lines.append(f"{'':<32}{phase:<38} {a:>10} {b:>12}")
    return lines


def write_summary(result, path):
    lines = [f"gpukit on {result['host']['hostname']}: {result['status']} "
             f"({result['seconds']} s)", "",
             f"{'check':<17} {'status':<7} {'s':>6}  detail"]
    for c in result["checks"]:
        seconds = "-" if c["seconds"] is None else c["seconds"]
        try:
            detail = key_fact(c)
        except (KeyError, TypeError, ZeroDivisionError):
            detail = ""
        lines.append(f"{c['name']:<17} {c['status']:<7} {seconds:>6}  {detail}")
        for d in c["differences"]:
            lines.append(f"{'':<32}difference: {d}")
        lines.extend(phase_lines(c))
    text = "\n".join(lines) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    sys.exit(main())
