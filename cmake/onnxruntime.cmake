# Optional component `onnxruntime`: Microsoft's ONNX Runtime, through its C
# API, behind ModelRunner (include/mlbridge/onnxruntime_runner.h, src/ort/).
# Included at the end of the top-level CMakeLists.txt (after the tests).
#
# Looks in MLBRIDGE_ONNXRUNTIME_ROOT (default: .deps/onnxruntime, which
# scripts/get-onnxruntime.sh fills) and then in the system paths for
# onnxruntime_c_api.h and libonnxruntime, checks with a small program that the
# library loads and serves the headers' C API version, and when all is well
# builds mlbridge::onnxruntime, its tests (ctest prefix "ort.") and the
# benchmark (bench/ort.cmake). MLBRIDGE_WITH_ONNXRUNTIME: AUTO (default: on
# when found), ON (not found is an error), OFF.
set(MLBRIDGE_WITH_ONNXRUNTIME "AUTO" CACHE STRING "ONNX Runtime runner: AUTO (when found), ON (required) or OFF")
set_property(CACHE MLBRIDGE_WITH_ONNXRUNTIME PROPERTY STRINGS AUTO ON OFF)
set(MLBRIDGE_ONNXRUNTIME_ROOT "${PROJECT_SOURCE_DIR}/.deps/onnxruntime" CACHE PATH
    "ONNX Runtime installation to use (include/ and lib/); the system paths are searched after it")

function(mlbridge_onnxruntime_off reason)
  if(MLBRIDGE_WITH_ONNXRUNTIME STREQUAL "ON")
    message(FATAL_ERROR "mlbridge: onnxruntime: ${reason} (MLBRIDGE_WITH_ONNXRUNTIME=ON; run scripts/get-onnxruntime.sh "
                        "or set MLBRIDGE_ONNXRUNTIME_ROOT)")
  endif()
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "onnxruntime (${reason})")
  set(MLBRIDGE_DISABLED_COMPONENTS "${MLBRIDGE_DISABLED_COMPONENTS}" PARENT_SCOPE)
  message(STATUS "mlbridge: onnxruntime: off (${reason})")
endfunction()

if(MLBRIDGE_WITH_ONNXRUNTIME STREQUAL "OFF")
  mlbridge_onnxruntime_off("MLBRIDGE_WITH_ONNXRUNTIME=OFF")
  return()
endif()

# A new root: search again rather than keep what an earlier configure found.
if(NOT "${MLBRIDGE_ONNXRUNTIME_ROOT}" STREQUAL "${_MLBRIDGE_ONNXRUNTIME_ROOT_SEARCHED}")
  unset(MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR CACHE)
  unset(MLBRIDGE_ONNXRUNTIME_LIBRARY CACHE)
  set(_MLBRIDGE_ONNXRUNTIME_ROOT_SEARCHED "${MLBRIDGE_ONNXRUNTIME_ROOT}" CACHE INTERNAL "")
endif()
find_path(MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR onnxruntime_c_api.h
  HINTS "${MLBRIDGE_ONNXRUNTIME_ROOT}/include"
  PATH_SUFFIXES onnxruntime onnxruntime/core/session
  DOC "Folder holding ONNX Runtime's onnxruntime_c_api.h")
find_library(MLBRIDGE_ONNXRUNTIME_LIBRARY NAMES onnxruntime
  HINTS "${MLBRIDGE_ONNXRUNTIME_ROOT}/lib" "${MLBRIDGE_ONNXRUNTIME_ROOT}/lib64"
  DOC "ONNX Runtime's shared library (libonnxruntime.so)")
mark_as_advanced(MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR MLBRIDGE_ONNXRUNTIME_LIBRARY)

if(NOT MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR OR NOT MLBRIDGE_ONNXRUNTIME_LIBRARY)
  mlbridge_onnxruntime_off("not found in ${MLBRIDGE_ONNXRUNTIME_ROOT} or the system paths; scripts/get-onnxruntime.sh installs it")
  return()
endif()

file(STRINGS "${MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR}/onnxruntime_c_api.h" _mlb_ort_api_line
     REGEX "^#define ORT_API_VERSION [0-9]+" LIMIT_COUNT 1)
string(REGEX REPLACE "^#define ORT_API_VERSION ([0-9]+).*" "\\1" MLBRIDGE_ONNXRUNTIME_API_VERSION "${_mlb_ort_api_line}")

# Does the library load here, and serve the headers' API? (Checked again at
# run time; here it decides whether the component is built at all.)
get_filename_component(_mlb_ort_libdir "${MLBRIDGE_ONNXRUNTIME_LIBRARY}" DIRECTORY)
set(_mlb_ort_key "${MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR}|${MLBRIDGE_ONNXRUNTIME_LIBRARY}")
if(EXISTS "${MLBRIDGE_ONNXRUNTIME_LIBRARY}")
  file(TIMESTAMP "${MLBRIDGE_ONNXRUNTIME_LIBRARY}" _mlb_ort_stamp "%s" UTC)
  string(APPEND _mlb_ort_key "|${_mlb_ort_stamp}")
endif()
if(NOT "${_mlb_ort_key}" STREQUAL "${_MLBRIDGE_ONNXRUNTIME_CHECKED}")
  set(_mlb_ort_probe "${PROJECT_BINARY_DIR}/CMakeFiles/mlbridge_onnxruntime_probe.c")
  file(WRITE "${_mlb_ort_probe}" [=[
#include <stdio.h>
#include <onnxruntime_c_api.h>
int main(void) {
  const OrtApiBase* base = OrtGetApiBase();
  if (!base) return 2;
  printf("%s", base->GetVersionString());
  return base->GetApi(ORT_API_VERSION) ? 0 : 1;
}
]=])
  try_run(_mlb_ort_run _mlb_ort_compiled "${PROJECT_BINARY_DIR}/CMakeFiles/mlbridge_onnxruntime_probe"
    "${_mlb_ort_probe}"
    CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR}"
    LINK_LIBRARIES "${MLBRIDGE_ONNXRUNTIME_LIBRARY}"
    LINK_OPTIONS "-Wl,-rpath,${_mlb_ort_libdir}"
    COMPILE_OUTPUT_VARIABLE _mlb_ort_compile_out
    RUN_OUTPUT_STDOUT_VARIABLE _mlb_ort_version
    RUN_OUTPUT_STDERR_VARIABLE _mlb_ort_stderr)
  if(NOT _mlb_ort_compiled)
    set(_mlb_ort_problem "a program using it does not build (see CMakeFiles/CMakeError.log)")
  elseif(NOT "${_mlb_ort_run}" STREQUAL "0")
    set(_mlb_ort_problem "the library (version '${_mlb_ort_version}') does not load or does not serve C API ${MLBRIDGE_ONNXRUNTIME_API_VERSION} of the headers")
  else()
    set(_mlb_ort_problem "")
  endif()
  set(_MLBRIDGE_ONNXRUNTIME_PROBLEM "${_mlb_ort_problem}" CACHE INTERNAL "")
  set(_MLBRIDGE_ONNXRUNTIME_VERSION "${_mlb_ort_version}" CACHE INTERNAL "")
  set(_MLBRIDGE_ONNXRUNTIME_CHECKED "${_mlb_ort_key}" CACHE INTERNAL "")
endif()
if(_MLBRIDGE_ONNXRUNTIME_PROBLEM)
  mlbridge_onnxruntime_off("${MLBRIDGE_ONNXRUNTIME_LIBRARY}: ${_MLBRIDGE_ONNXRUNTIME_PROBLEM}")
  return()
endif()
set(MLBRIDGE_ONNXRUNTIME_VERSION "${_MLBRIDGE_ONNXRUNTIME_VERSION}")

# ---- the library ---------------------------------------------------------------
add_library(mlbridge_onnxruntime_dep SHARED IMPORTED)
set_target_properties(mlbridge_onnxruntime_dep PROPERTIES
  IMPORTED_LOCATION "${MLBRIDGE_ONNXRUNTIME_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${MLBRIDGE_ONNXRUNTIME_INCLUDE_DIR}")  # imported: -isystem

file(GLOB MLBRIDGE_ONNXRUNTIME_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/ort/*.cc)
add_library(mlbridge_onnxruntime ${MLBRIDGE_ONNXRUNTIME_SOURCES})
add_library(mlbridge::onnxruntime ALIAS mlbridge_onnxruntime)
target_include_directories(mlbridge_onnxruntime PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(mlbridge_onnxruntime PRIVATE ${MLBRIDGE_WARNINGS})
target_link_libraries(mlbridge_onnxruntime PUBLIC mlbridge PRIVATE $<BUILD_INTERFACE:mlbridge_onnxruntime_dep>)
set_target_properties(mlbridge_onnxruntime PROPERTIES
  EXPORT_NAME onnxruntime VERSION ${PROJECT_VERSION} SOVERSION 0
  BUILD_RPATH "${_mlb_ort_libdir}")

# ---- install: the library, and the ONNX Runtime it was built with when that
# came from MLBRIDGE_ONNXRUNTIME_ROOT (a system one stays where it is) -------------
get_filename_component(_mlb_ort_root_real "${MLBRIDGE_ONNXRUNTIME_ROOT}" REALPATH)
get_filename_component(_mlb_ort_lib_real "${MLBRIDGE_ONNXRUNTIME_LIBRARY}" REALPATH)
string(FIND "${_mlb_ort_lib_real}" "${_mlb_ort_root_real}/" _mlb_ort_in_root)
if(_mlb_ort_in_root EQUAL 0)
  get_filename_component(_mlb_ort_libname "${MLBRIDGE_ONNXRUNTIME_LIBRARY}" NAME)
  file(GLOB _mlb_ort_files "${_mlb_ort_libdir}/libonnxruntime.so*")
  list(FILTER _mlb_ort_files EXCLUDE REGEX "providers")
  install(FILES ${_mlb_ort_files} DESTINATION ${CMAKE_INSTALL_LIBDIR})  # symlinks stay symlinks
  target_link_libraries(mlbridge_onnxruntime INTERFACE
    "$<INSTALL_INTERFACE:$<INSTALL_PREFIX>/${CMAKE_INSTALL_LIBDIR}/${_mlb_ort_libname}>")
  set_target_properties(mlbridge_onnxruntime PROPERTIES INSTALL_RPATH "$ORIGIN")
else()
  target_link_libraries(mlbridge_onnxruntime INTERFACE "$<INSTALL_INTERFACE:${MLBRIDGE_ONNXRUNTIME_LIBRARY}>")
endif()
install(TARGETS mlbridge_onnxruntime EXPORT MLBridgeOnnxRuntimeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT MLBridgeOnnxRuntimeTargets NAMESPACE mlbridge:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/MLBridge)

# ---- tests ----------------------------------------------------------------------
if(MLBRIDGE_BUILD_TESTS AND GTest_FOUND)
  file(GLOB MLBRIDGE_ONNXRUNTIME_TEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/ort/*_test.cc)
  add_executable(mlbridge_ort_tests ${MLBRIDGE_ONNXRUNTIME_TEST_SOURCES})
  target_include_directories(mlbridge_ort_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests/ort
    ${PROJECT_SOURCE_DIR}/tests/engine)
  target_compile_options(mlbridge_ort_tests PRIVATE ${MLBRIDGE_WARNINGS})
  target_compile_definitions(mlbridge_ort_tests PRIVATE MLBRIDGE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_link_libraries(mlbridge_ort_tests PRIVATE mlbridge_onnxruntime GTest::gtest GTest::gtest_main)
  set_target_properties(mlbridge_ort_tests PROPERTIES BUILD_RPATH "${_mlb_ort_libdir}")
  include(GoogleTest)
  gtest_discover_tests(mlbridge_ort_tests TEST_PREFIX "ort." DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)

  # tests/policy (configured before this file): the shipped policy in ONNX Runtime too.
  if(TARGET mlbridge_shipped_policy_tests)
    target_compile_definitions(mlbridge_shipped_policy_tests PRIVATE MLBRIDGE_TEST_HAVE_ONNXRUNTIME=1)
    target_link_libraries(mlbridge_shipped_policy_tests PRIVATE mlbridge_onnxruntime)
    set_target_properties(mlbridge_shipped_policy_tests PROPERTIES BUILD_RPATH "${_mlb_ort_libdir}")
  endif()

  # The public header, built the way LLVM and GCC plugins are.
  add_executable(mlbridge_ort_header_check ${PROJECT_SOURCE_DIR}/tests/ort/header_check.cc)
  target_compile_options(mlbridge_ort_header_check PRIVATE -fno-exceptions -fno-rtti ${MLBRIDGE_WARNINGS})
  target_link_libraries(mlbridge_ort_header_check PRIVATE mlbridge_onnxruntime)
  set_target_properties(mlbridge_ort_header_check PROPERTIES BUILD_RPATH "${_mlb_ort_libdir}")
  add_test(NAME ort.header_without_exceptions_or_rtti COMMAND mlbridge_ort_header_check)
endif()

# ---- benchmark ------------------------------------------------------------------
if(MLBRIDGE_BUILD_TOOLS)
  include(${PROJECT_SOURCE_DIR}/bench/ort.cmake OPTIONAL)
endif()

list(APPEND MLBRIDGE_ENABLED_COMPONENTS "onnxruntime")
message(STATUS "mlbridge: onnxruntime: on, ONNX Runtime ${MLBRIDGE_ONNXRUNTIME_VERSION} (C API ${MLBRIDGE_ONNXRUNTIME_API_VERSION} headers) "
               "from ${MLBRIDGE_ONNXRUNTIME_LIBRARY}")
