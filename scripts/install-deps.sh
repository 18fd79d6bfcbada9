#!/usr/bin/env bash
# Installs the Debian 12 packages gpureap needs to build, package and test, only those missing:
# dpkg-dev and file for the .deb's dependencies (CPack runs dpkg-shlibdeps on what file finds
# to be ELF), man-db for the package test's `man -w`; for the tests against the real engines
# prometheus, prometheus-alertmanager (10 MiB, with amtool) and a single-node Slurm (slurmctld,
# slurmd, slurm-client, munge: 4 MiB).
#   --ci  also what CI's extra stages need: clang and libFuzzer for scripts/fuzz.sh, and
#         llvm-symbolizer for readable sanitizer reports (README, "Development").
#   --browser  headless Chromium for the report page's browser test (scripts/browser-test.sh)
set -euo pipefail
packages=(g++ make cmake libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
          libtomlplusplus-dev libcpp-httplib-dev pkgconf prometheus prometheus-alertmanager
          libncurses-dev tmux dpkg-dev file man-db slurmctld slurmd slurm-client munge)
for arg in "$@"; do
  case "$arg" in
    --ci) packages+=(clang libclang-rt-14-dev llvm-14 clang-format clang-tidy) ;;
    --browser) packages+=(chromium) ;;
    *) echo "usage: $0 [--ci] [--browser]" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "gpureap: missing packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "gpureap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
