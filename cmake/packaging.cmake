# Install rules, systemd units, man pages and the Debian package.
#
#   cmake --install build --prefix /usr/local          (or DESTDIR=/tmp/root cmake --install build)
#   (cd build && cpack -G DEB)                          -> build/sluice_<version>_<arch>.deb
#
# Installed: bin/sluice; man pages (help2man, when installed, at build time); systemd units for
# serve, agent and gateway (enabled by nobody: installing starts nothing); /etc/default/ option
# files and a starting configuration in /etc/sluice (conffiles in the package); the Grafana
# dashboard and Prometheus files in share/sluice; README and docs in share/doc/sluice.
include(GNUInstallDirs)

set(SLUICE_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "Where the systemd units go (relative: under the install prefix)")

install(TARGETS sluice RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# 1. Man pages: sluice(1) and one per daemon command, from their --help. help2man runs the
# command through a small wrapper, so `sluice serve --help` becomes sluice-serve(1).
find_program(SLUICE_HELP2MAN help2man)
if(SLUICE_HELP2MAN AND NOT SLUICE_SANITIZE)  # an ASan binary may report leaks at exit
  set(man_dir ${CMAKE_BINARY_DIR}/man)
  set(man_pages)
  foreach(page sluice serve agent up)
    if(page STREQUAL "sluice")
      set(name sluice)
      set(sub "")
      set(what "a queue-based GPU cluster scheduler")
    else()
      set(name sluice-${page})
      set(sub ${page})
      set(what "sluice ${page}: see sluice(1)")
    endif()
    file(GENERATE OUTPUT ${man_dir}/${name}
      CONTENT "#!/bin/sh\nexec \"$<TARGET_FILE:sluice>\" ${sub} \"$@\"\n"
      FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                       WORLD_READ WORLD_EXECUTE)
    add_custom_command(OUTPUT ${man_dir}/${name}.1.gz
      COMMAND ${SLUICE_HELP2MAN} --no-info --name=${what} --version-string=${PROJECT_VERSION}
              --include=${CMAKE_SOURCE_DIR}/deploy/man/sluice.h2m
              --output=${man_dir}/${name}.1 ${man_dir}/${name}
      COMMAND gzip -9nf ${man_dir}/${name}.1
      DEPENDS sluice ${CMAKE_SOURCE_DIR}/deploy/man/sluice.h2m
      COMMENT "Man page ${name}(1)"
      VERBATIM)
    list(APPEND man_pages ${man_dir}/${name}.1.gz)
  endforeach()
  add_custom_target(sluice_man ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "No man pages: help2man not found (Debian package help2man), or a sanitizer build")
endif()

# 2. Units, option files and the starting configuration name the prefix they are installed
# under, which is known only at install time (CPack's DEB generator installs under /usr):
# cmake/install_system.cmake writes them then.
install(CODE "set(SLUICE_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
set(SLUICE_STAGE_DIR \"${CMAKE_BINARY_DIR}/install-stage\")
set(SLUICE_SYSTEMD_UNITDIR \"${SLUICE_SYSTEMD_UNITDIR}\")
set(SLUICE_BINDIR_REL \"${CMAKE_INSTALL_BINDIR}\")")
install(SCRIPT cmake/install_system.cmake)

# 3. Monitoring assets and documentation.
install(FILES deploy/grafana/sluice-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/sluice/grafana)
install(FILES deploy/prometheus/prometheus.yml deploy/prometheus/alerts.yml
              deploy/prometheus/alerts_test.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/sluice/prometheus)
# Shell completion where Debian's bash-completion and zsh look for it.
install(FILES deploy/completion/sluice.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME sluice)
install(FILES deploy/completion/_sluice DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES deploy/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME deploy.md)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        PATTERN "*.csv" EXCLUDE PATTERN "*.gz" EXCLUDE)

# 4. The Debian package. Its maintainer scripts do nothing: installing enables and starts no
# service (`systemctl enable --now sluice-serve` does).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VENDOR "sluice")
set(CPACK_PACKAGE_CONTACT "sluice maintainers <sluice@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "queue-based GPU cluster scheduler")
set(CPACK_PACKAGE_DESCRIPTION
    "Admission, ordering and placement of GPU jobs in Kueue-compatible queues: gang placement,\
 topology, preemption, fair sharing and budgets; a control-plane server, a node agent and an\
 inference gateway in one binary.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/sluice")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bubblewrap")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, chromium")
find_program(SLUICE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(SLUICE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the binary's shared libraries
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libsqlite3-0, libyaml-cpp0.7, libssl3")
endif()
set(conffiles)
foreach(f default/sluice-serve default/sluice-agent default/sluice-gateway sluice/cluster.yaml
          sluice/queues.yaml sluice/gateway.yaml)
  string(APPEND conffiles "/etc/${f}\n")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/debian/conffiles "${conffiles}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/conffiles)
include(CPack)
