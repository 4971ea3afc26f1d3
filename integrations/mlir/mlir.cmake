# mlbridge-mlir-opt: mlir-opt with the `mlbridge-unroll` pass, which asks a
# model (ONNX engine or a Python process over pipes) for each scf.for /
# affine.for unroll factor. Built against the installed MLIR (Debian's
# libmlir-19-dev; MLIR_DIR picks another) and linked to its shared libMLIR.so,
# which links in seconds where the static libraries take minutes.
# MLIR must come from the same LLVM as the plugin (llvm.cmake): its sibling
# cmake folder when LLVM_DIR is set (e.g. llvm-22 without libmlir-22-dev is off).
if(NOT MLIR_DIR AND LLVM_DIR AND EXISTS "${LLVM_DIR}/../mlir/MLIRConfig.cmake")
  get_filename_component(MLIR_DIR "${LLVM_DIR}/../mlir" ABSOLUTE)
elseif(NOT MLIR_DIR AND NOT LLVM_DIR AND EXISTS /usr/lib/llvm-19/lib/cmake/mlir)
  set(MLIR_DIR /usr/lib/llvm-19/lib/cmake/mlir)
endif()
# MLIRConfig requires its LLVM: look for it quietly first (llvm.cmake may have
# found it already, with the same LLVM_DIR default), so a missing LLVM is a
# disabled component rather than a configure error.
if(NOT LLVM_FOUND)
  if(NOT LLVM_DIR AND EXISTS /usr/lib/llvm-19/lib/cmake/llvm)
    set(LLVM_DIR /usr/lib/llvm-19/lib/cmake/llvm)
  endif()
  find_package(LLVM CONFIG QUIET)
endif()
if(LLVM_FOUND AND MLIR_DIR AND EXISTS "${MLIR_DIR}/MLIRConfig.cmake")
  find_package(MLIR CONFIG QUIET)
endif()
if(NOT MLIR_FOUND)
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "mlir-opt (MLIR for LLVM ${LLVM_PACKAGE_VERSION} not found: libmlir-NN-dev)")
  return()
endif()
if(NOT TARGET MLIR)
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "mlir-opt (MLIR ${MLIR_VERSION} has no shared libMLIR)")
  return()
endif()
list(APPEND MLBRIDGE_ENABLED_COMPONENTS "mlir-opt (MLIR ${LLVM_PACKAGE_VERSION})")

add_executable(mlbridge-mlir-opt
  ${CMAKE_CURRENT_LIST_DIR}/mlbridge_mlir_opt.cc
  ${CMAKE_CURRENT_LIST_DIR}/unroll_pass.cc
  ${PROJECT_SOURCE_DIR}/integrations/common/runner_choice.cc
  ${PROJECT_SOURCE_DIR}/integrations/common/runner_kind.cc)
target_include_directories(mlbridge-mlir-opt SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
target_include_directories(mlbridge-mlir-opt PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/integrations/common)
if(MLBRIDGE_WITH_ENGINE)
  target_compile_definitions(mlbridge-mlir-opt PRIVATE MLBRIDGE_RUNNERS_HAVE_ENGINE=1)
endif()
target_compile_definitions(mlbridge-mlir-opt PRIVATE ${LLVM_DEFINITIONS})
# Built the way LLVM's own code is: no RTTI, no exceptions (mlbridge's headers allow both).
target_compile_options(mlbridge-mlir-opt PRIVATE -fno-rtti -fno-exceptions ${MLBRIDGE_WARNINGS})
target_link_libraries(mlbridge-mlir-opt PRIVATE mlbridge MLIR LLVM)
set_target_properties(mlbridge-mlir-opt PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/integrations/mlir)
set(MLBRIDGE_MLIR_OPT $<TARGET_FILE:mlbridge-mlir-opt>)
install(TARGETS mlbridge-mlir-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

if(MLBRIDGE_BUILD_TESTS)
  find_package(Python3 COMPONENTS Interpreter)
  find_program(MLBRIDGE_FILECHECK NAMES FileCheck FileCheck-19 HINTS ${LLVM_TOOLS_BINARY_DIR})
  if(Python3_FOUND AND MLBRIDGE_FILECHECK)
    # One ctest entry per .mlir test (mlir.<name>): lit_driver.py runs its RUN
    # lines, FileCheck checks them.
    file(GLOB _mlb_mlir_tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/integrations/mlir/*.mlir)
    foreach(_t IN LISTS _mlb_mlir_tests)
      get_filename_component(_name ${_t} NAME_WE)
      add_test(NAME mlir.${_name} COMMAND ${Python3_EXECUTABLE}
               ${PROJECT_SOURCE_DIR}/tests/integrations/mlir/lit_driver.py ${_t})
      set_tests_properties(mlir.${_name} PROPERTIES TIMEOUT 180 LABELS integrations ENVIRONMENT
        "MLBRIDGE_MLIR_OPT=${MLBRIDGE_MLIR_OPT};MLBRIDGE_FILECHECK=${MLBRIDGE_FILECHECK};PYTHONPATH=${PROJECT_SOURCE_DIR}/python")
    endforeach()
  endif()
endif()
