# `cmake --install`: tpagent and tpdump in bin/, the in-process agent in lib/tpagent/ (where
# tpagent's --inproc finds it from bin/), man pages made from --help by help2man; and CPack's
# .deb of the same tree (`cpack -G DEB` in the build folder).
include(GNUInstallDirs)

set(TP_INPROC_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/tpagent)
# tpagent looks for the library beside itself (the build tree), then here, relative to itself.
file(RELATIVE_PATH TP_INPROC_FROM_BIN /${CMAKE_INSTALL_BINDIR} /${TP_INPROC_INSTALL_DIR})
target_compile_definitions(tp_server PRIVATE TPAGENT_INPROC_FROM_BIN="${TP_INPROC_FROM_BIN}")

install(TARGETS tpagent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tpagent-inproc tpagent-inproc-image LIBRARY DESTINATION ${TP_INPROC_INSTALL_DIR})
if(TARGET tpdump)
  install(TARGETS tpdump RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# Man pages: what --help and --version print, as help2man lays it out.
find_program(HELP2MAN help2man)
if(HELP2MAN AND NOT CMAKE_CROSSCOMPILING)
  set(tp_man_pages "")
  foreach(tool_and_name "tpagent|GDB remote-protocol tracepoint agent"
                        "tpdump|print and chart tpagent and gdb trace files")
    string(REPLACE "|" ";" parts "${tool_and_name}")
    list(GET parts 0 tool)
    list(GET parts 1 name)
    if(TARGET ${tool})
      set(page ${CMAKE_BINARY_DIR}/man/${tool}.1)
      # Compressed, as Debian installs man pages (-n: no time stamp, the same bytes each build).
      add_custom_command(OUTPUT ${page}.gz
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
        COMMAND ${HELP2MAN} --no-info --section=1 --name=${name} --output=${page}
                $<TARGET_FILE:${tool}>
        COMMAND gzip -9nf ${page}
        DEPENDS ${tool}
        COMMENT "man page ${tool}.1")
      list(APPEND tp_man_pages ${page}.gz)
    endif()
  endforeach()
  add_custom_target(man_pages ALL DEPENDS ${tp_man_pages})
  install(FILES ${tp_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tpagent)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tpagent maintainers <tpagent@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GDB remote-protocol tracepoint agent")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "GDB remote-protocol tracepoint agent\n A gdbserver-style stub that gdb drives with `target remote`: run control, \
breakpoints,\n trap and fast tracepoints (with an in-process agent), disconnected tracing and\n trace files \
saved on the target; tpdump prints trace files and charts them in HTML.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS gdb)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
include(CPack)
