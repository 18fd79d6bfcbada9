#!/usr/bin/env bash
# Builds the Debian package: build-package/gpureap_<version>_<arch>.deb (Release, prefix /usr,
# without the tests), then checks it in a throwaway root (scripts/package-check.sh).
#   sudo apt-get install ./build-package/gpureap_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --package
cmake -S . -B build-package -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build build-package -j"$(nproc)"
cpack --config build-package/CPackConfig.cmake -B build-package >/dev/null
deb=$(ls -t build-package/gpureap_*.deb | head -n 1)
bash scripts/package-check.sh "$deb"
echo "gpureap: built $deb"
