# The mlbridge LLVM pass plugins, built against the installed LLVM (Debian's
# llvm-19-dev; LLVM_DIR picks another, e.g. llvm-22):
#   libMLBridgeLLVM.so          ML inliner and phase ordering (runners onnx, aot, tfaot, pipe; runner_choice.cc)
#   libMLBridgeLLVMAot.so       the same with the AOT-compiled test policy linked in (runner aot)
#   libMLBridgeLLVMFull.so      the same plus runners onnxruntime and grpc, when those components are built
#   libMLBridgeLLVMBaseline.so  the same plugin hook without mlbridge (bench/llvm_overhead.py)
# ONNX Runtime and gRPC bring ~50 shared libraries into every compiler that
# loads them (docs/llvm-plugin.md, "Overhead"), hence their own plugin.
# Usage and options: docs/llvm-plugin.md.
if(NOT LLVM_DIR AND EXISTS /usr/lib/llvm-19/lib/cmake/llvm)
  set(LLVM_DIR /usr/lib/llvm-19/lib/cmake/llvm)
endif()
find_package(LLVM CONFIG QUIET)
if(NOT LLVM_FOUND)
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "llvm-plugin (llvm-19-dev not found)")
  return()
endif()
list(APPEND MLBRIDGE_ENABLED_COMPONENTS "llvm-plugin (LLVM ${LLVM_PACKAGE_VERSION})")

# Optional: an .onnx inlining policy compiled into libMLBridgeLLVM.so itself.
set(MLBRIDGE_LLVM_AOT_MODEL "" CACHE FILEPATH "ONNX inlining policy to compile into the LLVM plugin (runner=aot)")

# Built the way LLVM is: no RTTI, no exceptions (mlbridge's headers allow both).
function(mlbridge_llvm_settings target)
  target_include_directories(${target} SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR} ${PROJECT_SOURCE_DIR}/integrations/common)
  target_compile_definitions(${target} PRIVATE ${LLVM_DEFINITIONS})
  target_compile_options(${target} PRIVATE -fno-rtti -fno-exceptions ${MLBRIDGE_WARNINGS})
endfunction()

# Every source, compiled once for all plugins (integrations/common/runner_choice.cc
# is compiled per plugin, with what that plugin links),
# compiled once for all plugins.
file(GLOB MLBRIDGE_LLVM_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cc)
add_library(mlbridge_llvm_objs OBJECT ${MLBRIDGE_LLVM_SOURCES} ${PROJECT_SOURCE_DIR}/integrations/common/runner_kind.cc)
mlbridge_llvm_settings(mlbridge_llvm_objs)
target_link_libraries(mlbridge_llvm_objs PRIVATE mlbridge)

# mlbridge_llvm_plugin(NAME [AOT_MODEL file.onnx] [FULL]): one plugin .so.
include(${PROJECT_SOURCE_DIR}/cmake/MLBridgeAot.cmake)
function(mlbridge_llvm_plugin name)
  cmake_parse_arguments(ARG "FULL" "AOT_MODEL" "" ${ARGN})
  add_library(${name} MODULE $<TARGET_OBJECTS:mlbridge_llvm_objs> ${PROJECT_SOURCE_DIR}/integrations/common/runner_choice.cc
              ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/aot/embedded_aot_model.cc)
  mlbridge_llvm_settings(${name})
  set(libs mlbridge)
  if(MLBRIDGE_WITH_ENGINE)
    target_compile_definitions(${name} PRIVATE MLBRIDGE_RUNNERS_HAVE_ENGINE=1)
  endif()
  if(ARG_AOT_MODEL AND MLBRIDGE_WITH_ENGINE)
    mlbridge_add_aot_model(TARGET ${name}_policy MODEL ${ARG_AOT_MODEL} NAME MLBridgeInlinerPolicy
                           OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/mlbridge_aot/${name})
    target_compile_definitions(${name} PRIVATE MLBRIDGE_LLVM_AOT_HEADER="MLBridgeInlinerPolicy.h"
                               MLBRIDGE_LLVM_AOT_MODEL_FN=MLBridgeInlinerPolicy_model)
    list(APPEND libs ${name}_policy)
  endif()
  if(ARG_FULL AND TARGET mlbridge_onnxruntime)
    target_compile_definitions(${name} PRIVATE MLBRIDGE_RUNNERS_HAVE_ONNXRUNTIME=1)
    list(APPEND libs mlbridge_onnxruntime)
    get_filename_component(ort_dir "${MLBRIDGE_ONNXRUNTIME_LIBRARY}" DIRECTORY)
    set_target_properties(${name} PROPERTIES BUILD_RPATH "${ort_dir}")
  endif()
  if(ARG_FULL AND TARGET mlbridge_grpc)
    target_compile_definitions(${name} PRIVATE MLBRIDGE_RUNNERS_HAVE_GRPC=1)
    list(APPEND libs mlbridge_grpc)
  endif()
  # opt/clang already hold libLLVM: the plugin resolves LLVM symbols from them.
  # mlbridge stays private to the plugin (no symbol clashes with other plugins).
  target_link_libraries(${name} PRIVATE ${libs})
  target_link_options(${name} PRIVATE -Wl,--exclude-libs,ALL)
endfunction()

mlbridge_llvm_plugin(MLBridgeLLVM AOT_MODEL "${MLBRIDGE_LLVM_AOT_MODEL}")
set(MLBRIDGE_LLVM_TEST_DIR ${PROJECT_SOURCE_DIR}/tests/integrations/llvm)
if(MLBRIDGE_WITH_ENGINE AND TARGET mlbridge-aot)
  mlbridge_llvm_plugin(MLBridgeLLVMAot AOT_MODEL ${MLBRIDGE_LLVM_TEST_DIR}/models/callee_bb_le_3.onnx)
endif()
if(TARGET mlbridge_onnxruntime OR TARGET mlbridge_grpc)
  mlbridge_llvm_plugin(MLBridgeLLVMFull FULL AOT_MODEL "${MLBRIDGE_LLVM_AOT_MODEL}")
endif()

# The overhead table's reference: the same inline-advisor hook, no mlbridge.
add_library(MLBridgeLLVMBaseline MODULE ${PROJECT_SOURCE_DIR}/bench/llvm_overhead_plugin.cc)
mlbridge_llvm_settings(MLBridgeLLVMBaseline)

# Installed where the Python package looks for it (mlbridge.corpus.compile.find_plugin):
# PREFIX/lib/mlbridge/libMLBridgeLLVM.so; in a wheel, PREFIX is mlbridge/_native.
install(TARGETS MLBridgeLLVM LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/mlbridge)
if(TARGET MLBridgeLLVMFull)
  install(TARGETS MLBridgeLLVMFull LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/mlbridge)
endif()

set(MLBRIDGE_LLVM_PLUGIN $<TARGET_FILE:MLBridgeLLVM>)
set(MLBRIDGE_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})

# pytest driving opt-19 / clang-19 with the plugin (tests/integrations/llvm).
find_package(Python3 COMPONENTS Interpreter)
if(MLBRIDGE_BUILD_TESTS AND Python3_FOUND AND TARGET MLBridgeLLVMAot)
  set(_mlb_llvm_env
    "MLBRIDGE_LLVM_PLUGIN=$<TARGET_FILE:MLBridgeLLVM>"
    "MLBRIDGE_LLVM_PLUGIN_AOT=$<TARGET_FILE:MLBridgeLLVMAot>"
    "MLBRIDGE_LLVM_TOOLS_DIR=${LLVM_TOOLS_BINARY_DIR}"
    "MLBRIDGE_AOT=$<TARGET_FILE:mlbridge-aot>"
    "PYTHONPATH=${PROJECT_SOURCE_DIR}/python")
  if(TARGET MLBridgeLLVMFull)
    list(APPEND _mlb_llvm_env "MLBRIDGE_LLVM_PLUGIN_FULL=$<TARGET_FILE:MLBridgeLLVMFull>")
  endif()
  if(TARGET MLBridgeLLVMFull AND TARGET mlbridge_onnxruntime)
    list(APPEND _mlb_llvm_env "MLBRIDGE_LLVM_HAVE_ONNXRUNTIME=1")
  endif()
  if(TARGET MLBridgeLLVMFull AND TARGET mlbridge_grpc)
    list(APPEND _mlb_llvm_env "MLBRIDGE_LLVM_HAVE_GRPC=1")
  endif()
  foreach(_t inliner faults training filecheck corpus_evaluate settings room train tune order_policy)
    add_test(NAME llvm.${_t}
             COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${MLBRIDGE_LLVM_TEST_DIR}/test_${_t}.py
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(llvm.${_t} PROPERTIES TIMEOUT 300 ENVIRONMENT "${_mlb_llvm_env}")
  endforeach()
  # The plugin's training logs, read by Python (docs/training-logs.md).
  add_test(NAME llvm.training_log
           COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${MLBRIDGE_LLVM_TEST_DIR}/test_training_log.py
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(llvm.training_log PROPERTIES TIMEOUT 300 ENVIRONMENT "${_mlb_llvm_env}")
  # ~30 s on an idle 2-core machine; compiles a corpus under 6 policies
  set_tests_properties(llvm.corpus_evaluate PROPERTIES TIMEOUT 900)
  # whole programs linked in four settings, ThinLTO backends, the room search and
  # training under LTO: minutes on a loaded 2-core machine (a bound on hangs only)
  set_tests_properties(llvm.settings llvm.room llvm.train llvm.tune llvm.order_policy PROPERTIES TIMEOUT 1200)
  # A TensorFlow SavedModel compiled by XLA, loaded by the plugin (tests/tfaot, cmake/tfaot.cmake).
  if(TARGET MLBridgeTfAotInliner)
    add_test(NAME tf.llvm
             COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${MLBRIDGE_LLVM_TEST_DIR}/test_tfaot.py
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(tf.llvm PROPERTIES TIMEOUT 300 LABELS tf ENVIRONMENT "${_mlb_llvm_env};MLBRIDGE_TFAOT_INLINER_LIB=$<TARGET_FILE:MLBridgeTfAotInliner>;MLBRIDGE_TF_MODELS_DIR=${MLBRIDGE_TF_MODELS_DIR}")
  endif()
endif()

# Phase ordering registers its own tests.
include(${CMAKE_CURRENT_LIST_DIR}/phase_ordering.cmake OPTIONAL)
