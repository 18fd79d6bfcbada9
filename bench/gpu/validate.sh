#!/usr/bin/env bash
# The GPU truth kit: checks gpureap against a real NVIDIA GPU in well under 5 minutes
# (bench/README.md, "GPU truth kit"). Never resets a GPU or changes its settings.
#
#   bench/gpu/validate.sh [--kit DIR] [--gpureap PATH] [--hold PATH] [--gpu K] [--mib N]
#                         [--runs N] [--out DIR] [--only NAME,...] [--plan]
#
# --kit DIR     a folder made by bench/gpu/bundle.sh: DIR/bin/gpureap, DIR/bin/gpukit-hold and
#               the libraries gpureap needs in DIR/lib (for a GPU machine that cannot build it)
# --gpureap     the binary (default: $GPUREAP, the kit's, else build/gpureap; built if missing)
# --hold        gpukit-hold (default: the kit's, else build/bench/gpu/gpukit-hold, else compiled
#               from bench/gpu/hold.c with cc)
# --gpu K       the NVIDIA GPU (nvidia-smi index) to use (0); --mib N MiB per holder (512)
# --runs N      timed runs of each command in the timing check (10)
# --out DIR     where gpukit-result.json, gpukit-summary.txt and gpukit-log.txt go
#               (default: $OUT when set, else ./gpukit-results)
# --only        run only these checks (names as --plan lists them), in their usual order
# --plan        print what would be checked and exit 0, touching no GPU
#
# Exit status: 0 every check passed; 1 a check failed; 2 usage or setup error (no gpureap, no
# gpukit-hold, no python3); 77 skipped: no NVIDIA GPU here (no nvidia-smi, or it lists no GPU),
# with a result file whose status is "skipped".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
EXIT_FAILED=1 EXIT_SETUP=2 EXIT_SKIPPED=77

# name|what: the plan, in the order the checks run (gpu_checks.py implements each name).
CHECKS=(
  "environment|gpureap's NVML backend answers and sees the GPUs nvidia-smi lists (index, UUID, name, driver version)"
  "memory_info|GPU memory total, reserved, used and free (nvmlDeviceGetMemoryInfo_v2) equal nvidia-smi's memory.* fields"
  "healthy_holder|a holder of N MiB: ps --json lists it with the MiB of nvidia-smi --query-compute-apps=pid,used_memory, no anomaly, its /dev/nvidia<N>"
  "process_records|the process-list function and record stride gpureap chose match what the driver writes (_v3 into a canary buffer via ctypes, 24 or 32 bytes), and the memory v2 struct"
  "forked_ghost|forked workers outlive their parent: the gone PID stays listed, ps shows no-such-process kept by the workers (inherited-holder), gpureap kill PID frees it and verifies"
  "stopped_holder|a SIGSTOPped holder: ps shows state T and the stopped anomaly with the driver's MiB; gpureap kill frees it"
  "run_supervised|gpureap run -- gpukit-hold --mode fork: its leftovers are ended, nothing stays listed, the report gives the release time"
  "exit_release|a holder killed without freeing: how long the driver takes to drop it, gpureap lists nothing after; gpureap run -- gpukit-hold --mode exit reports the release"
  "timing|gpureap ps --json against nvidia-smi --query-compute-apps (and its NVML calls in C), RUNS runs each after a warm-up: median, min, max, the ratio; each one's phases (GPUREAP_TIMING=1)"
  "daemon_events|the daemon following the kernel's events during a 10 s open storm by uid 65534 on /dev/nvidia<K>: new holders in its live view within 100 ms, events by file handle, no device fd of its own, never in the driver's list, CPU <= 10% of a core, one history point per interval"
  "mps_client|an MPS client of its own control daemon (private pipe folder, this GPU only) killed with SIGKILL: its memory kept by the MPS server, never the server planned, doctor's remedy MPS's terminate_client, which releases it; the daemon stopped after (skipped without nvidia-cuda-mps-control or root)"
  "mig_instances|where the GPU is already in MIG mode (never enabled here): its instances as nvidia-smi -L lists them, a holder on one listed on that instance, kill --gpu K/GI naming it (else skipped: MIG not enabled)"
)

usage() {
  sed -n '5,22p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit "$EXIT_SETUP"
}

kit="" gpureap="${GPUREAP:-}" hold="" gpu=0 mib=512 runs=10 out="${OUT:-}" plan_only=0 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --kit) kit=${2:?}; shift 2 ;;
    --gpureap) gpureap=${2:?}; shift 2 ;;
    --hold) hold=${2:?}; shift 2 ;;
    --gpu) gpu=${2:?}; shift 2 ;;
    --mib) mib=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --only) only=${2:?}; shift 2 ;;
    --plan) plan_only=1; shift ;;
    -h | --help) usage ;;
    *) echo "validate.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for n in "$gpu" "$mib" "$runs"; do
  case "$n" in '' | *[!0-9]*) echo "validate.sh: --gpu, --mib and --runs take whole numbers" >&2; exit "$EXIT_SETUP" ;; esac
done
[ "$mib" -ge 1 ] && [ "$runs" -ge 1 ] || { echo "validate.sh: --mib and --runs must be at least 1" >&2; exit "$EXIT_SETUP"; }
if [ -n "$only" ]; then
  selected=()
  IFS=, read -r -a wanted <<<"$only"
  for name in "${wanted[@]}"; do
    known=0
    for entry in "${CHECKS[@]}"; do [ "${entry%%|*}" = "$name" ] && known=1; done
    [ "$known" = 1 ] || { echo "validate.sh: --only: no check named '$name'" >&2; exit "$EXIT_SETUP"; }
  done
  for entry in "${CHECKS[@]}"; do
    case ",$only," in *",${entry%%|*},"*) selected+=("$entry") ;; esac
  done
  CHECKS=("${selected[@]}")
fi
[ -n "$out" ] || out=$PWD/gpukit-results
mkdir -p "$out" || { echo "validate.sh: cannot create the result folder $out" >&2; exit "$EXIT_SETUP"; }
out=$(cd "$out" && pwd)
result=$out/gpukit-result.json summary=$out/gpukit-summary.txt

# --- the binaries ------------------------------------------------------------------------------
gpureap_libs=""
if [ -n "$kit" ]; then
  [ -d "$kit" ] || { echo "validate.sh: --kit $kit is not a folder (make one with bench/gpu/bundle.sh)" >&2; exit "$EXIT_SETUP"; }
  kit=$(cd "$kit" && pwd)
  [ -n "$gpureap" ] || gpureap=$kit/bin/gpureap
  [ -n "$hold" ] || hold=$kit/bin/gpukit-hold
  [ -d "$kit/lib" ] && gpureap_libs=$kit/lib
fi
[ -n "$gpureap" ] || gpureap=$root/build/gpureap
[ -n "$hold" ] || hold=$root/build/bench/gpu/gpukit-hold

json_text() {  # a JSON string of $1
  local s=$1
  s=${s//\\/\\\\} s=${s//\"/\\\"} s=${s//$'\n'/\\n} s=${s//$'\t'/\\t} s=${s//$'\r'/\\r}
  printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\037')"
}

print_plan() {
  local entry
  echo "gpukit: checks on NVIDIA GPU $gpu, holders of $mib MiB:"
  for entry in "${CHECKS[@]}"; do printf '  %-16s %s\n' "${entry%%|*}" "${entry#*|}"; done
  echo "gpukit: gpureap: $gpureap$([ -x "$gpureap" ] || echo " (missing: it would be built)")"
  echo "gpukit: gpukit-hold: $hold$([ -x "$hold" ] || echo " (missing: it would be compiled from bench/gpu/hold.c)")"
}

# --- no GPU: say what would be checked, write a "skipped" result --------------------------------
no_gpu=""
if [ "$plan_only" = 0 ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    no_gpu="nvidia-smi not found: no NVIDIA driver on this machine"
  elif ! listed=$(timeout 30 nvidia-smi --query-gpu=index --format=csv,noheader 2>&1) ||
       ! printf '%s\n' "$listed" | grep -qx "[[:space:]]*$gpu[[:space:]]*"; then
    no_gpu="nvidia-smi lists no GPU $gpu: $(printf '%s' "$listed" | head -3 | tr '\n' ' ')"
  fi
fi
if [ "$plan_only" = 1 ] || [ -n "$no_gpu" ]; then
  print_plan
  [ "$plan_only" = 1 ] && exit 0
  echo "gpukit: skipped: $no_gpu"
  {
    printf '{"schema": "gpureap.gpukit/v1", "status": "skipped", "exit_code": %d,\n' "$EXIT_SKIPPED"
    printf ' "reason": %s, "started_at": "%s",\n' "$(json_text "$no_gpu")" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf ' "host": {"hostname": %s, "kernel": %s},\n' "$(json_text "$(uname -n)")" "$(json_text "$(uname -r)")"
    printf ' "settings": {"gpu": %d, "mib": %d, "runs": %d},\n' "$gpu" "$mib" "$runs"
    printf ' "checks": ['
    sep=""
    for entry in "${CHECKS[@]}"; do
      printf '%s\n  {"name": %s, "what": %s, "status": "skipped"}' "$sep" \
        "$(json_text "${entry%%|*}")" "$(json_text "${entry#*|}")"
      sep=","
    done
    printf ']}\n'
  } >"$result"
  {
    echo "gpukit: skipped ($no_gpu)"
    for entry in "${CHECKS[@]}"; do printf '%-17s skipped\n' "${entry%%|*}"; done
  } >"$summary"
  echo "gpukit: result: $result"
  exit "$EXIT_SKIPPED"
fi

# --- a GPU: make sure of the tools, then run the checks ---------------------------------------
command -v python3 >/dev/null || { echo "validate.sh: the checks need python3" >&2; exit "$EXIT_SETUP"; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpukit.XXXXXX")
pid_file=$work/pids
: >"$pid_file"
# Whatever ends the script, every process the checks started (recorded with its start time, so
# a recycled PID is never hit) is killed; the checks clean up after themselves too.
cleanup() {
  local pid ticks now
  while read -r pid ticks; do
    now=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f20)
    if [ -n "$now" ] && [ "$now" = "$ticks" ]; then kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; fi
  done <"$pid_file"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ ! -x "$gpureap" ] || [ ! -x "$hold" ]; then
  if [ ! -x "$gpureap" ] && command -v cmake >/dev/null; then
    echo "gpukit: building gpureap into $root/build-gpukit"
    if ! { cmake -S "$root" -B "$root/build-gpukit" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF &&
           cmake --build "$root/build-gpukit" -j"$(nproc)" --target gpureap gpukit_hold; } >"$out/gpukit-build.txt" 2>&1; then
      echo "validate.sh: gpureap could not be built here (see $out/gpukit-build.txt; its Debian packages may be missing):" \
           "build a kit where it builds (bench/gpu/bundle.sh DIR) and pass --kit DIR" >&2
      exit "$EXIT_SETUP"
    fi
    gpureap=$root/build-gpukit/gpureap
    [ -x "$hold" ] || hold=$root/build-gpukit/bench/gpu/gpukit-hold
  fi
  if [ ! -x "$hold" ] && command -v cc >/dev/null; then
    hold=$work/gpukit-hold
    cc -O2 -o "$hold" "$here/hold.c" -ldl || { echo "validate.sh: cannot compile bench/gpu/hold.c" >&2; exit "$EXIT_SETUP"; }
  fi
fi
# nvidia-smi's NVML calls in C, for the timing check's second breakdown (skipped without cc).
standin=""
if command -v cc >/dev/null && cc -O2 -o "$work/smi-standin" "$root/bench/smi_standin.c" -ldl 2>"$work/smi-standin-cc.txt"; then
  standin=$work/smi-standin
fi
[ -x "$gpureap" ] || { echo "validate.sh: no gpureap at $gpureap (and cmake cannot build one here)" >&2; exit "$EXIT_SETUP"; }
[ -x "$hold" ] || { echo "validate.sh: no gpukit-hold at $hold (and no cc to compile bench/gpu/hold.c)" >&2; exit "$EXIT_SETUP"; }
if ! version=$(LD_LIBRARY_PATH="$gpureap_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$gpureap" --version 2>&1); then
  echo "validate.sh: $gpureap does not run here: $version" >&2
  exit "$EXIT_SETUP"
fi
echo "gpukit: $version; gpukit-hold $hold; results in $out"
: >"$out/gpukit-log.txt"

rm -f "$result" "$summary"
names=() describe=()
for entry in "${CHECKS[@]}"; do names+=("${entry%%|*}"); describe+=("${entry%%|*}=${entry#*|}"); done
# The checks bound themselves (150 s each at most); the whole run is bounded here too.
timeout -s TERM 290 python3 "$here/gpu_checks.py" --gpureap "$gpureap" --gpureap-libs "$gpureap_libs" \
  --hold "$hold" --standin "$standin" --gpu "$gpu" --mib "$mib" --runs "$runs" --work "$work" --result "$result" \
  --summary "$summary" --pid-file "$pid_file" --checks "${names[@]}" --describe "${describe[@]}"
rc=$?
if [ ! -s "$result" ]; then
  printf '{"schema": "gpureap.gpukit/v1", "status": "failed", "exit_code": 1, "reason": %s, "checks": []}\n' \
    "$(json_text "the checks ended abnormally (status $rc) before writing a result; see gpukit-log.txt")" >"$result"
fi
echo "gpukit: result: $result"
case $rc in
  0) exit 0 ;;
  1) exit "$EXIT_FAILED" ;;
  *) echo "validate.sh: the checks ended abnormally (status $rc); see $out/gpukit-log.txt" >&2; exit "$EXIT_FAILED" ;;
esac
