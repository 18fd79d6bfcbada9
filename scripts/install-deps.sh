#!/usr/bin/env bash
# Installs the Debian 12 packages gpureap needs, only those missing. Without options: what
# building the program needs (the README's first command), and pci.ids (the PCI ID database,
# 250 KiB), which it reads at run time for the names of AMD and Intel GPUs (the tests bring
# their own excerpt); nothing more.
#   --tests  also what the test suite needs: GoogleTest, the NVML test double's build, tmux
#         for the terminal tests, prometheus, prometheus-alertmanager and curl (which those
#         tests query them with) for the tests against the real engines and the cluster view,
#         busybox (its httpd serves the cluster test's nodes that export a split job as text),
#         and the packaging tools (--package)
#   --package  dpkg-dev and file for the .deb's dependencies (CPack runs dpkg-shlibdeps on what
#         file finds to be ELF), man-db for the package test's `man -w`
#   --ci  also what CI's extra stages need: clang and libFuzzer for the instrumented build
#         (scripts/sanitize.sh, scripts/fuzz.sh), llvm-symbolizer for readable sanitizer
#         reports, clang-format and clang-tidy (docs/development.md)
#   --slurm  also a single-node Slurm for its test (slurmctld, slurmd, slurm-client, munge: 4 MiB),
#         on a best-effort basis: where their setup fails (munge's runs as its own user, which a
#         chroot whose / only root may enter refuses) they are removed again, gpureap builds
#         anyway, and the Slurm test skips saying why.
#   --browser  headless Chromium for the report page's browser test
#   --containers  podman, runc and busybox-static for the container test, which runs a real
#         container from a root filesystem it builds (no registry); only tests need them.
#   --pytorch  Debian's PyTorch for the CPU (python3-torch) for the tests that run real PyTorch
#         jobs (DataLoader workers, torch.multiprocessing ranks); only tests need it.
set -euo pipefail
packages=(g++ make cmake libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
          libcpp-httplib-dev pkgconf libncurses-dev pci.ids)
package_tools=(dpkg-dev file man-db)
slurm=(slurmctld slurmd slurm-client munge)
want_slurm=0
for arg in "$@"; do
  case "$arg" in
    --tests) packages+=(libgtest-dev tmux prometheus prometheus-alertmanager curl busybox "${package_tools[@]}") ;;
    --package) packages+=("${package_tools[@]}") ;;
    --ci) packages+=(clang libclang-rt-14-dev llvm-14 clang-format clang-tidy) ;;
    --browser) packages+=(chromium) ;;
    --containers) packages+=(podman runc busybox-static) ;;
    --pytorch) packages+=(python3-torch) ;;
    --slurm) want_slurm=1 ;;
    *) echo "usage: $0 [--tests] [--package] [--ci] [--browser] [--containers] [--pytorch] [--slurm]" >&2; exit 2 ;;
  esac
done
missing_of() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
mapfile -t missing_slurm < <([ $want_slurm = 1 ] && missing_of "${slurm[@]}")
[ ${#missing[@]} -eq 0 ] && [ ${#missing_slurm[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "gpureap: missing packages: ${missing[*]} ${missing_slurm[*]}; install them as root (apt-get install ${missing[*]} ${missing_slurm[*]})" >&2
  [ ${#missing[@]} -eq 0 ] && exit 0  # only the Slurm test's: it skips
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "gpureap: installing ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#missing_slurm[@]} -gt 0 ]; then
  echo "gpureap: installing ${missing_slurm[*]} (for the Slurm test)"
  if ! apt-get install -y -qq --no-install-recommends "${missing_slurm[@]}" >/dev/null 2>&1; then
    # Half-configured packages would fail every later apt-get: take them out again.
    apt-get purge -y -qq "${slurm[@]}" >/dev/null 2>&1 || true
    echo "gpureap: note: Slurm could not be set up here (see apt-get install ${slurm[*]}); its test will skip" >&2
  fi
fi
