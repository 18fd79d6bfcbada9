# Part of `cmake --install` (cmake/install.cmake): the files whose place or text depends on the
# install prefix, known only now. file(INSTALL) adds DESTDIR and records them in the manifest.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(sysconfdir "/etc")
  set(zsh_dir "${prefix}/share/zsh/vendor-completions")  # Debian's zsh, for packages
else()
  set(sysconfdir "${prefix}/etc")
  set(zsh_dir "${prefix}/share/zsh/site-functions")
endif()

file(READ "${GPUREAP_SOURCE_DIR}/deploy/systemd/gpureap.service" unit)
string(FIND "${unit}" "[Unit]" unit_start)
string(SUBSTRING "${unit}" ${unit_start} -1 unit)
string(REPLACE "ExecStart=/usr/local/bin/gpureap " "ExecStart=${prefix}/bin/gpureap " unit "${unit}")
if(NOT unit MATCHES "ExecStart=${prefix}/bin/gpureap daemon")
  message(FATAL_ERROR "deploy/systemd/gpureap.service: no `ExecStart=/usr/local/bin/gpureap "
                      "daemon` line to point at ${prefix}/bin/gpureap")
endif()
file(MAKE_DIRECTORY "${GPUREAP_STAGE_DIR}")
file(WRITE "${GPUREAP_STAGE_DIR}/gpureap.service"
     "# gpureap node agent (gpureap-daemon(1)): systemctl enable --now gpureap\n${unit}")

file(INSTALL "${GPUREAP_STAGE_DIR}/gpureap.service" DESTINATION "${prefix}/lib/systemd/system"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# The example config is the daemon's working config (every key at its default, documented).
file(INSTALL "${GPUREAP_SOURCE_DIR}/deploy/config.toml" DESTINATION "${sysconfdir}/gpureap"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${GPUREAP_SOURCE_DIR}/completions/_gpureap" DESTINATION "${zsh_dir}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
