# Tests of the phase-ordering pass (integrations/llvm/phase_ordering*.cc):
# pytest driving opt-19 with libMLBridgeLLVM.so, in-process (ONNX engine,
# AOT library), over pipes, and under faults. Included by llvm.cmake once
# the MLBridgeLLVM target exists. docs/phase-ordering.md.
find_package(Python3 COMPONENTS Interpreter)
if(NOT (MLBRIDGE_BUILD_TESTS AND Python3_FOUND AND TARGET MLBridgeLLVM) OR MLBRIDGE_SANITIZE)
  return()  # a sanitized plugin cannot be loaded into a stock opt
endif()

set(_mlb_po_dir ${PROJECT_SOURCE_DIR}/tests/integrations/phase_ordering)
set(_mlb_po_env
  "MLBRIDGE_LLVM_PLUGIN=$<TARGET_FILE:MLBridgeLLVM>"
  "MLBRIDGE_LLVM_TOOLS_DIR=${LLVM_TOOLS_BINARY_DIR}"
  "PYTHONPATH=${PROJECT_SOURCE_DIR}/python")
if(TARGET mlbridge-aot)
  list(APPEND _mlb_po_env "MLBRIDGE_AOT=$<TARGET_FILE:mlbridge-aot>")
endif()
foreach(_t inprocess pipe faults)
  add_test(NAME llvm.phase_ordering.${_t}
           COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${_mlb_po_dir}/test_${_t}.py
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(llvm.phase_ordering.${_t} PROPERTIES TIMEOUT 180 ENVIRONMENT "${_mlb_po_env}")
endforeach()
