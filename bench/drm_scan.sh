#!/usr/bin/env bash
# The cost of AMD/Intel accounting in the holder scan: `gpureap ps --json` on the fleet whose
# holders hold a stand-in render node as well as the NVIDIA files, three ways:
#   nvidia only   a dev root with the NVIDIA stand-ins alone (hard links: the same files), and
#                 a sysfs with no DRM GPU: the NVIDIA-only scan
#   no DRM GPU    the render node in the dev root too, still no DRM GPU in sysfs
#   DRM           a sysfs naming the render node as an amdgpu GPU's, so the DRM backend reads
#                 the fdinfo of every holder's render fd (only the fds the scan matched)
# Target: DRM within 1.10x of the NVIDIA-only scan.
#   PROCS=2000 FDS=40 HOLDERS=100 RUNS=11 bench/drm_scan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PROCS=${PROCS:-2000} FDS=${FDS:-40} HOLDERS=${HOLDERS:-100} RUNS=${RUNS:-11}
GPUREAP=${GPUREAP:-build/gpureap}
# shellcheck source=bench/lib/fleet.sh
source bench/lib/fleet.sh
# shellcheck source=bench/lib/timing.sh
source bench/lib/timing.sh
[ -x "$GPUREAP" ] || fleet_die "no gpureap binary at $GPUREAP (cmake --build build)"

fleet_init
BENCH_TIME_FILE="$FLEET_WORK/time"
fleet_make_dev_root
mkdir -p "$FLEET_DEV/dri"
: >"$FLEET_DEV/dri/renderD128"
FLEET_DEV_FILES+=("$FLEET_DEV/dri/renderD128")

nv_dev="$FLEET_WORK/dev-nvidia"
mkdir -p "$nv_dev"
for f in nvidia0 nvidiactl nvidia-uvm; do ln "$FLEET_DEV/$f" "$nv_dev/$f"; done

# A sysfs with one amdgpu GPU whose render node is renderD128 (226:128), and one with none.
no_drm="$FLEET_WORK/sys-none"
mkdir -p "$no_drm/class/drm"
sys="$FLEET_WORK/sys-amd"
pci="$sys/devices/pci0000:00/0000:03:00.0"
mkdir -p "$pci/drm/renderD128" "$sys/class/drm"
printf 'DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n' >"$pci/uevent"
printf '0x1002\n' >"$pci/vendor"
printf '0x73bf\n' >"$pci/device"
printf '%d\n' $((16 << 30)) >"$pci/mem_info_vram_total"
printf '%d\n' $((1 << 30)) >"$pci/mem_info_vram_used"
printf '226:128\n' >"$pci/drm/renderD128/dev"
ln -s "$pci" "$pci/drm/renderD128/device"
ln -s "$pci/drm/renderD128" "$sys/class/drm/renderD128"

fleet_check_limits "$PROCS" "$FDS"
fleet_build
fleet_start "$PROCS" "$FDS" "$HOLDERS"

run() {  # dev root, sys root, output
  GPUREAP_NVML_LIBRARY=/nonexistent bench_time "$3" /dev/null \
    "$GPUREAP" ps --json --dev-root "$1" --sys-root "$2"
}
nvidia=() alone=() drm=()
for ((i = 0; i <= RUNS; i++)); do
  run "$nv_dev" "$no_drm" "$FLEET_WORK/nvidia.json"
  [ $i -gt 0 ] && nvidia+=("$BENCH_REAL_MS")
  run "$FLEET_DEV" "$no_drm" "$FLEET_WORK/alone.json"
  [ $i -gt 0 ] && alone+=("$BENCH_REAL_MS")
  run "$FLEET_DEV" "$sys" "$FLEET_WORK/drm.json"
  [ $i -gt 0 ] && drm+=("$BENCH_REAL_MS")
done
gpus=$(grep -c '"backend": "amdgpu"' "$FLEET_WORK/drm.json" || true)
[ "$gpus" -ge 1 ] || fleet_die "the amdgpu backend did not report the fixture's GPU"
read -r nm nmin nmax <<<"$(bench_stats "${nvidia[@]}")"
read -r am amin amax <<<"$(bench_stats "${alone[@]}")"
read -r dm dmin dmax <<<"$(bench_stats "${drm[@]}")"
echo "DRM accounting: $PROCS processes x $FDS fds, $HOLDERS holding nvidia0, nvidiactl, nvidia-uvm and renderD128"
printf '%-34s %8s %8s %8s\n' view "median ms" min max
printf '%-34s %8s %8s %8s\n' "NVIDIA-only scan" "$nm" "$nmin" "$nmax"
printf '%-34s %8s %8s %8s\n' "render node held, no DRM GPU" "$am" "$amin" "$amax"
printf '%-34s %8s %8s %8s\n' "scan + fdinfo of the render fds" "$dm" "$dmin" "$dmax"
awk -v a="$dm" -v b="$nm" 'BEGIN {printf "DRM / NVIDIA-only: %.2fx (target <= 1.10x)\n", a / b}'
