"""What the GPU kit's checks (gpu_checks.py) stand on: running tools with timeouts, the holder
processes and their cleanup, reading gpureap's and nvidia-smi's answers, and NVML read directly
through ctypes (an independent reading of its record layouts).
"""
import ctypes
import json
import os
import signal
import subprocess
import time

MIB = 1 << 20


class CheckFailed(Exception):
    pass


class CheckSkipped(Exception):
    """The machine lacks what the check needs (MPS's tools, a GPU already in MIG mode): the
    check says why and does not count as a failure. Nothing is changed to make it possible."""


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
    def start_hold(self, procs, mode, mib=None, workers=2, seconds=240, env=None, cuda_gpu=None):
        """env: extra environment (an MPS pipe folder, a MIG device in CUDA_VISIBLE_DEVICES);
        cuda_gpu: the CUDA ordinal when it is not the checked GPU's index (0 under a MIG UUID)."""
        self.counter += 1
        ready = os.path.join(self.work, f"ready-{self.counter}")
        gpu = self.gpu if cuda_gpu is None else cuda_gpu
        cmd = [self.args.hold, "--gpu", str(gpu), "--mib", str(mib or self.args.mib),
               "--mode", mode, "--workers", str(workers), "--seconds", str(seconds),
               "--ready-file", ready]
        err = open(os.path.join(self.work, f"hold-{self.counter}.err"), "w")
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                             env=dict(os.environ, **env) if env else None)
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
