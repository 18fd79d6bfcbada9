"""The GPU kit's checks of the ways NVIDIA shares one GPU among processes: an MPS client's ghost
and MIG instances (run by gpu_checks.py; see bench/README.md).

Neither changes a card setting. The MPS check starts its own control daemon with a private pipe
and log folder and CUDA_VISIBLE_DEVICES set to the checked GPU, so it meets no MPS daemon the
machine already runs, and stops it when it ends. The MIG check only reads: it runs where the
GPU is already in MIG mode and says "skipped: MIG not enabled" everywhere else.
"""
import json
import os
import shutil
import signal
import subprocess

from gpukit_support import CheckFailed, CheckSkipped, alive, expect, gpu_json, row_json

MPS_CONTROL = "nvidia-cuda-mps-control"
MPS_SERVER = "nvidia-cuda-mps-server"


def _mps_command(kit, env, command, timeout=30):
    """Sends one command to the control daemon, as `echo COMMAND | nvidia-cuda-mps-control`."""
    try:
        p = subprocess.run([MPS_CONTROL], input=command + "\n", env=env, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"`echo {command} | {MPS_CONTROL}` did not answer within {timeout}s")
    kit.log.write(f"rc={p.returncode}: echo {command} | {MPS_CONTROL}: "
                  f"{(p.stdout + p.stderr).strip()[-500:]}")
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def _mps_servers(pipe_dir):
    """The MPS servers that serve this pipe folder (their environment names it)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            exe = os.path.basename(os.readlink(f"/proc/{entry}/exe"))
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if exe == MPS_SERVER and f"CUDA_MPS_PIPE_DIRECTORY={pipe_dir}".encode() in environ:
            found.append(int(entry))
    return found


def _kill_plan_pids(kit, *argv):
    rc, out, err = kit.gpureap("kill", *argv, "--dry-run", "--json")
    try:
        report = json.loads(out)
    except ValueError:
        raise CheckFailed(f"gpureap kill {' '.join(argv)} --dry-run exited {rc} without JSON: "
                          f"{err.strip()[-300:]}")
    return sorted(t.get("pid") for t in report.get("plan", {}).get("targets", []))


def check_mps_client(kit, procs, facts, failures, differences):
    if shutil.which(MPS_CONTROL) is None:
        raise CheckSkipped(f"{MPS_CONTROL} is not installed")
    if os.geteuid() != 0:
        raise CheckSkipped("the check starts an MPS control daemon, which it does as root")
    mode = kit.smi("--query-gpu=compute_mode", "--format=csv,noheader", "-i",
                   str(kit.gpu)).strip()
    facts["compute_mode"] = mode
    if mode == "Prohibited":
        raise CheckSkipped("the GPU's compute mode is Prohibited: no CUDA context can start")
    pipe = os.path.join(kit.work, "mps-pipe")
    log_dir = os.path.join(kit.work, "mps-log")
    os.makedirs(pipe, exist_ok=True)
    os.makedirs(log_dir, exist_ok=True)
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=log_dir,
               CUDA_VISIBLE_DEVICES=kit.uuid)
    started = subprocess.run([MPS_CONTROL, "-d"], env=env, capture_output=True, text=True,
                             timeout=30)
    kit.log.write(f"rc={started.returncode}: {MPS_CONTROL} -d (pipe {pipe})")
    if started.returncode != 0:
        raise CheckFailed(f"{MPS_CONTROL} -d failed: {(started.stdout + started.stderr).strip()}")
    client_env = {"CUDA_MPS_PIPE_DIRECTORY": pipe, "CUDA_MPS_LOG_DIRECTORY": log_dir,
                  "CUDA_VISIBLE_DEVICES": kit.uuid}
    servers = []
    try:
        client, _ = kit.start_hold(procs, "hold", env=client_env, cuda_gpu=0)
        ok, _ = kit.wait_until(lambda: _mps_servers(pipe), 30, 0.2)
        servers = _mps_servers(pipe)
        if not ok or len(servers) != 1:
            raise CheckFailed(f"expected one MPS server for the kit's pipe folder, found {servers}")
        server = servers[0]
        facts.update({"client_pid": client.pid, "server_pid": server})
        kit.wait_listed(client.pid)
        snap = kit.ps()
        crow, srow = row_json(snap, client.pid), row_json(snap, server)
        facts["client_row"] = {k: (crow or {}).get(k) for k in ("gpus", "anomalies", "mps")}
        facts["server_row"] = {k: (srow or {}).get(k) for k in ("gpus", "anomalies", "mps")}
        kinds = [u.get("kind") for u in (crow or {}).get("gpus", [])]
        expect("mps" in kinds, f"the client's listing kinds are {kinds}, not mps", failures)
        expect(srow is not None, f"gpureap ps does not list the MPS server {server}", failures)

        client.send_signal(signal.SIGKILL)
        client.wait(timeout=30)
        dropped, seconds = kit.wait_until(lambda: client.pid not in kit.smi_apps(), 5, 0.1)
        if dropped:
            facts["server_dropped_the_client_seconds"] = round(seconds, 3)
            differences.append(f"the MPS server dropped the killed client in {seconds:.2f} s: "
                               "no ghost formed, so its verdict was not checked")
            return
        snap = kit.ps()
        row = row_json(snap, client.pid) or {}
        ghost = row.get("ghost") or {}
        facts["ghost"] = ghost
        facts["anomalies"] = row.get("anomalies")
        expect("no-such-process" in (row.get("anomalies") or []),
               f"the gone client's anomalies are {row.get('anomalies')}", failures)
        expect(server in (ghost.get("servers") or []),
               f"the ghost does not name its MPS server {server}: {ghost}", failures)
        planned = _kill_plan_pids(kit, "--ghosts")
        facts["kill_ghosts_plan"] = planned
        expect(server not in planned, f"kill --ghosts plans the MPS server: {planned}", failures)
        rc, out, _ = kit.gpureap("doctor", "--json", "--no-daemon")
        steps = [s.get("command", "") for f in json.loads(out or "{}").get("findings", [])
                 if client.pid in f.get("pids", []) for s in f.get("steps", [])]
        facts["doctor_steps"] = steps
        expect(any("terminate_client" in s and str(client.pid) in s for s in steps),
               f"doctor's remedy for the client is not MPS's terminate_client: {steps}", failures)
        _mps_command(kit, env, f"terminate_client {server} {client.pid}")
        released, seconds = kit.wait_until(lambda: client.pid not in kit.smi_apps(), 30, 0.1)
        facts["terminate_client_release_seconds"] = round(seconds, 3)
        expect(released, f"nvidia-smi still lists {client.pid} after terminate_client", failures)
        expect(alive(server), "ending one client ended the MPS server", failures)
    finally:
        _mps_command(kit, env, "quit")
        for server in servers:
            kit.wait_until(lambda: not alive(server), 15, 0.2)
            if alive(server):
                failures.append(f"the MPS server {server} outlived quit by 15 s")
                procs.add(server)  # the kit's cleanup ends it


def _mig_devices(kit):
    """(uuid, name) of the MIG devices of the checked GPU, from nvidia-smi -L."""
    out = kit.smi("-L")
    devices, in_gpu = [], False
    for line in out.splitlines():
        text = line.strip()
        if text.startswith("GPU "):
            in_gpu = f"(UUID: {kit.uuid})" in text
        elif in_gpu and text.startswith("MIG ") and "(UUID: " in text:
            uuid = text.split("(UUID: ", 1)[1].rstrip(")")
            devices.append((uuid, text.split(" Device ", 1)[0]))
    return devices


def check_mig_instances(kit, procs, facts, failures, differences):
    mode = kit.smi("--query-gpu=mig.mode.current", "--format=csv,noheader", "-i",
                   str(kit.gpu)).strip()
    facts["mig_mode"] = mode
    if mode != "Enabled":
        raise CheckSkipped("MIG not enabled")
    devices = _mig_devices(kit)
    facts["nvidia_smi_mig_devices"] = devices
    snap = kit.ps()
    instances = gpu_json(snap, kit.gpu).get("instances") or []
    facts["gpureap_instances"] = [{k: i.get(k) for k in ("gpu_instance_id", "compute_instance_id",
                                                         "profile", "uuid")} for i in instances]
    expect(sorted(i.get("uuid") for i in instances) == sorted(u for u, _ in devices),
           f"gpureap's instances {facts['gpureap_instances']}, nvidia-smi's {devices}", failures)
    if not devices:
        raise CheckFailed("MIG is enabled but nvidia-smi -L lists no MIG device on this GPU")
    uuid = devices[0][0]
    holder, _ = kit.start_hold(procs, "hold", env={"CUDA_VISIBLE_DEVICES": uuid}, cuda_gpu=0)
    kit.wait_listed(holder.pid)
    row = row_json(kit.ps(), holder.pid) or {}
    wanted = next((i for i in instances if i.get("uuid") == uuid), {})
    uses = [u for u in row.get("gpus", []) if u.get("index") == kit.gpu]
    facts["holder_uses"] = uses
    expect(any(u.get("gpu_instance_id") == wanted.get("gpu_instance_id") for u in uses),
           f"the holder on {uuid} is listed on {uses}, not on instance {wanted}", failures)
    gi = wanted.get("gpu_instance_id")
    if gi is not None:
        planned = _kill_plan_pids(kit, str(holder.pid), "--gpu", f"{kit.gpu}/{gi}")
        expect(planned == [holder.pid], f"kill PID --gpu {kit.gpu}/{gi} plans {planned}", failures)
    holder.send_signal(signal.SIGTERM)
    holder.wait(timeout=30)


SHARING_CHECKS = {
    "mps_client": check_mps_client,
    "mig_instances": check_mig_instances,
}
