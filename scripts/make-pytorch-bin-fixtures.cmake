# Checkpoints whose weights are pytorch_model.bin, for tests/torch_archive_test.cpp: bundled fixtures and
# all-MiniLM-L6-v2 (.deps/models, 90 MB) written by torch.save itself (scripts/to-pytorch-bin.py on
# Debian's python3-torch), into FIXTURES/pytorch-bin/<name>, never into the source tree. Each holds the
# same values as its source's model.safetensors: as stored (F32, F64), rounded to F16 or BF16 by torch,
# or as views (transposed matrices, slices of shared storages); one is the legacy format lenscheck refuses.
# Run by CTest as a fixture set-up after make-fixtures.cmake.
foreach(var PYTHON FIXTURES MINILM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "make-pytorch-bin-fixtures.cmake needs -D${var}=...")
  endif()
endforeach()
function(convert src name)
  execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/to-pytorch-bin.py ${src} ${FIXTURES}/pytorch-bin/${name}
                          ${ARGN}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "to-pytorch-bin.py ${src} (${name}) failed (${rc}); it needs Debian's python3-torch "
                        "(scripts/install-deps.sh):\n${err}")
  endif()
endfunction()
convert(${FIXTURES}/bert-mini bert-mini)
convert(${FIXTURES}/bert-mini bert-mini-views --views)
convert(${FIXTURES}/bert-mini bert-mini-f16 --dtype float16)
convert(${FIXTURES}/bert-mini bert-mini-bf16 --dtype bfloat16 --views)
convert(${FIXTURES}/tiny-prefixed tiny-prefixed)
convert(${FIXTURES}/tiny-prefixed tiny-prefixed-legacy --legacy)
convert(${MINILM} all-MiniLM-L6-v2)
