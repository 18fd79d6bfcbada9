# `cmake --install` (and the .deb, which CPack builds from the same rules): the program, the
# systemd unit, the example config, man pages, shell completions and the package's docs, in the
# places Debian and the tools that read them look. Paths that depend on the prefix are decided
# at install time, because `cmake --install --prefix` and CPack (prefix /usr) choose it then:
#   prefix /usr:   config in /etc/gpureap, zsh completion in share/zsh/vendor-completions
#   other prefix:  config in PREFIX/etc/gpureap, zsh completion in share/zsh/site-functions
include(GNUInstallDirs)
# Installing builds nothing: `cmake --install` never did, and cpack (which builds the
# "preinstall" target) must package a tree as built, not rebuild every test first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

install(TARGETS gpureap RUNTIME DESTINATION bin)
# The HTTP module (CMakeLists.txt) in the program's private library folder, where the program
# looks relative to itself, so any prefix finds it. Two levels below lib/: CPack gives a package
# with a library directly in lib/ or one level below an ldconfig script, which a module loaded
# by its path does not need.
install(TARGETS gpureap_http LIBRARY DESTINATION ${GPUREAP_HTTP_MODULE_DIR})

# Man pages, gzipped as Debian's policy asks (-n: no name or time, reproducible).
file(GLOB GPUREAP_MAN_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.1)
set(GPUREAP_MAN_GZ)
foreach(page ${GPUREAP_MAN_PAGES})
  get_filename_component(name ${page} NAME)
  set(gz ${PROJECT_BINARY_DIR}/man/${name}.gz)
  add_custom_command(OUTPUT ${gz}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND sh -c "gzip -9nc \"$1\" > \"$2\"" sh ${page} ${gz}
    DEPENDS ${page} VERBATIM)
  list(APPEND GPUREAP_MAN_GZ ${gz})
endforeach()
set(GPUREAP_DOC_GZ ${PROJECT_BINARY_DIR}/doc/changelog.gz ${PROJECT_BINARY_DIR}/doc/config.md.gz)
add_custom_command(OUTPUT ${GPUREAP_DOC_GZ}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/doc
  COMMAND sh -c "gzip -9nc \"$1\" > \"$2\"" sh ${PROJECT_SOURCE_DIR}/CHANGELOG.md
          ${PROJECT_BINARY_DIR}/doc/changelog.gz
  COMMAND sh -c "gzip -9nc \"$1\" > \"$2\"" sh ${PROJECT_SOURCE_DIR}/docs/config.md
          ${PROJECT_BINARY_DIR}/doc/config.md.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/docs/config.md VERBATIM)
add_custom_target(gpureap_docs ALL DEPENDS ${GPUREAP_MAN_GZ} ${GPUREAP_DOC_GZ})
install(FILES ${GPUREAP_MAN_GZ} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# /usr/share/doc/gpureap: Debian's copyright file (machine-readable, the license by name), the
# changelog, and the daemon's configuration reference that the man pages point to.
install(FILES ${PROJECT_SOURCE_DIR}/cmake/copyright ${GPUREAP_DOC_GZ}
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/gpureap)

# bash-completion loads completions/<command> on first use; fish reads vendor_completions.d.
install(FILES ${PROJECT_SOURCE_DIR}/completions/gpureap.bash
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME gpureap)
install(FILES ${PROJECT_SOURCE_DIR}/completions/gpureap.fish
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/fish/vendor_completions.d)

# The unit runs the installed binary: its ExecStart names PREFIX/bin/gpureap instead of the
# /usr/local/bin of a hand install (docs/daemon.md, "systemd"); the hand-install notes at its
# top go.
install(CODE "set(GPUREAP_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
set(GPUREAP_STAGE_DIR \"${PROJECT_BINARY_DIR}/install-stage\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/install_prefixed.cmake)
