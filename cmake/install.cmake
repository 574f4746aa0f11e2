# Install and package: `cmake --install build` (prefix /usr/local unless
# CMAKE_INSTALL_PREFIX says otherwise) and `cpack -G DEB` (prefix /usr).
#   bin/chokepoint
#   libexec/chokepoint/chokepoint-agent, chokepoint-agent-server-ARCH (where the
#     orchestrator looks first: lib/remote/endpoint.cc, agent_dirs)
#   share/man/man1/chokepoint.1, share/bash-completion/completions/chokepoint
#     (generated from the command table at build time)
#   share/doc/chokepoint/: the example plans, README.md, docs/
include(GNUInstallDirs)

set(CP_GENERATED ${PROJECT_BINARY_DIR}/share)
set(CP_MAN ${CP_GENERATED}/man/man1/chokepoint.1)
set(CP_COMPLETION ${CP_GENERATED}/bash-completion/completions/chokepoint)
foreach(pair "man;${CP_MAN}" "bash-completion;${CP_COMPLETION}")
  list(GET pair 0 what)
  list(GET pair 1 out)
  get_filename_component(dir ${out} DIRECTORY)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:chokepoint> -DWHAT=${what} -DOUT=${out}
            -P ${PROJECT_SOURCE_DIR}/cmake/generate.cmake
    DEPENDS chokepoint ${PROJECT_SOURCE_DIR}/cmake/generate.cmake
    COMMENT "Generating ${out}"
    VERBATIM)
endforeach()
add_custom_target(chokepoint-docs ALL DEPENDS ${CP_MAN} ${CP_COMPLETION})

set(CP_AGENT_DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/chokepoint)
install(TARGETS chokepoint RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS chokepoint-agent RUNTIME DESTINATION ${CP_AGENT_DESTINATION})
# The static server agents come from scripts/build-agents.sh (their own
# trees), each where it was built: this machine's always, the other when it
# was built (scripts/build-agents.sh aarch64).
foreach(arch x86_64 aarch64)
  install(PROGRAMS ${PROJECT_BINARY_DIR}/bin/chokepoint-agent-server-${arch}
          DESTINATION ${CP_AGENT_DESTINATION} OPTIONAL)
endforeach()
install(CODE "
  if(NOT EXISTS \"${PROJECT_BINARY_DIR}/bin/chokepoint-agent-server-${CMAKE_HOST_SYSTEM_PROCESSOR}\")
    message(FATAL_ERROR \"no static server agent for ${CMAKE_HOST_SYSTEM_PROCESSOR} in ${PROJECT_BINARY_DIR}/bin: \"
                        \"run scripts/build-agents.sh ${CMAKE_HOST_SYSTEM_PROCESSOR} first (servers get it)\")
  endif()")
install(FILES ${CP_MAN} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CP_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
file(GLOB CP_EXAMPLES ${PROJECT_SOURCE_DIR}/examples/*.ini)
install(FILES ${CP_EXAMPLES} ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")

# The Debian package: its Depends are what dpkg-shlibdeps finds the installed
# binaries need (Debian 12's runtime libraries: libssh-4, libsqlite3-0,
# libboost-*1.81.0, libfmt9, libcurl4, libsmbclient, libnfs13, ...; never -dev).
set(CPACK_PACKAGE_NAME chokepoint)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "which layer caps file-transfer throughput: disk, network, TCP, protocol or CPU")
set(CPACK_PACKAGE_CONTACT "chokepoint developers <chokepoint@localhost>")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# ssh(1) is not run (libssh is linked); the lab needs more, which only a
# developer's machine has (scripts/install-deps.sh).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
include(CPack)
