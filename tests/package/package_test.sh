#!/usr/bin/env bash
# The .deb of this build tree, checked as a user would meet it (scripts/package-check.sh):
# cpack writes it into a temporary folder, then it is installed into a throwaway root, used
# (version, man pages, completions, GPU indices from the NVML test double with two GPUs),
# removed and purged. Nothing of this machine changes.
#   usage: package_test.sh BUILD_DIR SOURCE_DIR FAKE_NVML_LIBRARY
# Skips (77) where the packaging tools are missing: dpkg-dev, file, man-db, binutils
# (scripts/install-deps.sh installs them).
set -uo pipefail
build=$1 src=$2 nvml=$3
for tool in dpkg-shlibdeps file dpkg-deb man readelf; do
  command -v "$tool" >/dev/null || { echo "package_test: skipped: no $tool (bash scripts/install-deps.sh)"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-package-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cpack --config "$build/CPackConfig.cmake" -B "$work" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; echo "package_test: cpack failed"; exit 1; }
debs=("$work"/gpureap_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { cat "$work/cpack.log"; echo "package_test: no one .deb"; exit 1; }
cat > "$work/scenario.json" <<'JSON'
{"gpus": [{"name": "NVIDIA H200", "minor": 0, "total_bytes": 150754820096},
          {"name": "NVIDIA H200", "minor": 1, "total_bytes": 150754820096}]}
JSON
GPUREAP_NVML_LIBRARY=$nvml FAKE_NVML_SCENARIO=$work/scenario.json \
  bash "$src/scripts/package-check.sh" "${debs[0]}"
