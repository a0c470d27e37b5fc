# Fails unless FILE's SHA-256 equals the first word of EXPECTED_FILE.
file(SHA256 "${FILE}" actual)
file(READ "${EXPECTED_FILE}" expected)
string(REGEX MATCH "^[0-9a-f]+" expected "${expected}")
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "${FILE}: SHA-256 ${actual}, expected ${expected} (${EXPECTED_FILE}): the fixture generator's output moved")
endif()
message(STATUS "${FILE}: SHA-256 ${actual} as recorded")
