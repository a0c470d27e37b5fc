# Writes OUT, the header that stamps reports with the build: VERSION+`git describe --always --dirty` of
# SOURCE_DIR. Run at every build (CMakeLists.txt, lenscheck_build_version), not at configure time, so that
# an incremental build after a commit stamps that commit; OUT is rewritten only when the stamp changes,
# so an unchanged tree recompiles nothing.
execute_process(COMMAND git describe --always --dirty WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE described OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(described STREQUAL "")
  set(described "unknown")  # not a git checkout (an unpacked source archive)
endif()
set(text "#pragma once\n#define LENSCHECK_BUILD_VERSION \"${VERSION}+${described}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
