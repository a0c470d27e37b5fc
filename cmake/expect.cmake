# Runs COMMAND (a ;-list) and checks its exit code is EXPECTED and its output matches REGEX: how CTest
# holds a command to a verdict other than pass (the fp16 and int8 candidates fail the fp32 rule; a
# candidate that cannot start is exit 2).
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code STREQUAL EXPECTED)
  message(FATAL_ERROR "exit code ${code}, expected ${EXPECTED}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match: ${REGEX}")
endif()
