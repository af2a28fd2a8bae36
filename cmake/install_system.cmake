# Runs at install time (cmake --install, cpack), after SLUICE_SOURCE_DIR, SLUICE_STAGE_DIR,
# SLUICE_SYSTEMD_UNITDIR and SLUICE_BINDIR_REL were set by cmake/packaging.cmake: writes the
# systemd units, their option files and the starting configuration for the prefix being
# installed to. Configuration goes to /etc under the prefix /usr (as GNUInstallDirs does),
# else to PREFIX/etc.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(SLUICE_SYSCONFDIR /etc)
else()
  set(SLUICE_SYSCONFDIR "${prefix}/etc")
endif()
set(SLUICE_BINDIR "${prefix}/${SLUICE_BINDIR_REL}")
set(units)
set(defaults)
foreach(d serve agent gateway)
  configure_file("${SLUICE_SOURCE_DIR}/deploy/systemd/sluice-${d}.service.in"
                 "${SLUICE_STAGE_DIR}/sluice-${d}.service" @ONLY)
  configure_file("${SLUICE_SOURCE_DIR}/deploy/systemd/sluice-${d}.default.in"
                 "${SLUICE_STAGE_DIR}/default/sluice-${d}" @ONLY)
  list(APPEND units "${SLUICE_STAGE_DIR}/sluice-${d}.service")
  list(APPEND defaults "${SLUICE_STAGE_DIR}/default/sluice-${d}")
endforeach()
file(INSTALL DESTINATION "${prefix}/${SLUICE_SYSTEMD_UNITDIR}" TYPE FILE FILES ${units})
file(INSTALL DESTINATION "${SLUICE_SYSCONFDIR}/default" TYPE FILE FILES ${defaults})
# The demo's two nodes and three teams: a valid start to edit (docs/config.md).
file(INSTALL DESTINATION "${SLUICE_SYSCONFDIR}/sluice" TYPE FILE
     FILES "${SLUICE_SOURCE_DIR}/examples/demo/cluster.yaml"
           "${SLUICE_SOURCE_DIR}/examples/demo/queues.yaml"
           "${SLUICE_SOURCE_DIR}/examples/gateway/gateway.yaml")
