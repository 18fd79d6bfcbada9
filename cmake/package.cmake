# The .deb: `cpack` in a build tree (scripts/package.sh) writes gpureap_<version>_<arch>.deb
# from the rules of cmake/install.cmake, with prefix /usr. Its Depends come from what the binary
# links (dpkg-shlibdeps, from dpkg-dev); NVML is loaded at run time, so the driver is only
# suggested. The version is the binary's own (base::version(), from cmake/version.cmake), read
# when cpack runs, so the file name always matches `gpureap --version`.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpureap)
set(CPACK_PACKAGE_VENDOR gpureap)
set(CPACK_PACKAGE_CONTACT "gpureap maintainers <maintainers@gpureap.invalid>"
    CACHE STRING "The Maintainer field of the .deb")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "find every process holding GPU memory, explain ghosts, get the memory back")
# The synopsis line is the summary above; this is the extended description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "gpureap joins what the GPU driver reports (NVML for NVIDIA, DRM fdinfo and KFD for AMD and
Intel) with what /proc knows, finds every process that holds GPU memory or a GPU device
file, explains each ghost (forked workers that outlived their job, stopped or stuck holders,
processes of other namespaces, leaked contexts) and reclaims the memory safely.
.
It is a CLI (ps, doctor, kill, reset, run), a terminal UI (top) and a node agent (daemon:
Prometheus metrics, alerts, cleanup policies) in one binary.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gpureap_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE https://github.com/gpureap/gpureap)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libnvidia-ml1")
# The PCI ID database names AMD and Intel GPUs ("AMD Radeon RX 6900 XT", not "AMD 0x73bf");
# without it gpureap shows the ids.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "pci.ids | hwdata")
# The config is a conffile: an edited /etc/gpureap/config.toml survives upgrades, and only
# `apt purge` removes it.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
configure_file(${PROJECT_SOURCE_DIR}/cmake/cpack_version.cmake.in
               ${PROJECT_BINARY_DIR}/CPackVersion.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/CPackVersion.cmake)
include(CPack)
