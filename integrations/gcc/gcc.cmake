# The mlbridge GCC plugin (mlbridge.so, used as -fplugin=.../mlbridge.so):
# GCC asks a model, through the C API, how far to unroll each loop.
# A plugin is built by the g++ of the GCC it loads into, against that GCC's
# plugin headers (Debian: gcc-12-plugin-dev), so it needs g++ as the C++
# compiler and a GNU C compiler of the same version to test it with.
set(_mlb_gcc_reason "")
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_mlb_gcc_reason "needs g++ as the C++ compiler, not ${CMAKE_CXX_COMPILER_ID}")
elseif(NOT CMAKE_C_COMPILER_ID STREQUAL "GNU" OR NOT CMAKE_C_COMPILER_VERSION VERSION_EQUAL CMAKE_CXX_COMPILER_VERSION)
  set(_mlb_gcc_reason "needs gcc ${CMAKE_CXX_COMPILER_VERSION} as the C compiler")
else()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=plugin
                  OUTPUT_VARIABLE MLBRIDGE_GCC_PLUGIN_DIR OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT EXISTS "${MLBRIDGE_GCC_PLUGIN_DIR}/include/gcc-plugin.h")
    string(REGEX MATCH "^[0-9]+" _mlb_gcc_major "${CMAKE_CXX_COMPILER_VERSION}")
    set(_mlb_gcc_reason "gcc-${_mlb_gcc_major}-plugin-dev not found")
  endif()
endif()
if(_mlb_gcc_reason)
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "gcc-plugin (${_mlb_gcc_reason})")
  return()
endif()
list(APPEND MLBRIDGE_ENABLED_COMPONENTS "gcc-plugin (GCC ${CMAKE_CXX_COMPILER_VERSION})")

add_library(mlbridge_gcc_plugin MODULE
  ${CMAKE_CURRENT_LIST_DIR}/plugin.cc
  ${CMAKE_CURRENT_LIST_DIR}/advisor.cc
  ${CMAKE_CURRENT_LIST_DIR}/decision_log.cc
  ${PROJECT_SOURCE_DIR}/integrations/common/runner_kind.cc)
# The plugin's name is its file name: mlbridge.so takes -fplugin-arg-mlbridge-*.
set_target_properties(mlbridge_gcc_plugin PROPERTIES PREFIX "" OUTPUT_NAME mlbridge
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/integrations/gcc
  CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(mlbridge_gcc_plugin SYSTEM PRIVATE ${MLBRIDGE_GCC_PLUGIN_DIR}/include)
# runner_kind.h: the runner names every integration parses the same way.
target_include_directories(mlbridge_gcc_plugin PRIVATE ${PROJECT_SOURCE_DIR}/integrations/common)
# Built the way GCC is: cc1 has no RTTI, so a pass class with RTTI would not load.
target_compile_options(mlbridge_gcc_plugin PRIVATE -fno-rtti -fno-exceptions ${MLBRIDGE_WARNINGS})
# The core library is linked in (it is PIC); its symbols stay inside the plugin.
target_link_libraries(mlbridge_gcc_plugin PRIVATE mlbridge)
target_link_options(mlbridge_gcc_plugin PRIVATE -Wl,--exclude-libs,ALL)
set(MLBRIDGE_GCC_PLUGIN $<TARGET_FILE:mlbridge_gcc_plugin>)
# gcc -fplugin=PREFIX/lib/mlbridge/mlbridge.so
install(TARGETS mlbridge_gcc_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/mlbridge)

if(MLBRIDGE_BUILD_TESTS)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND)
    # One ctest entry per pytest file: gcc.policies, gcc.faults, ...
    file(GLOB _mlb_gcc_tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/integrations/gcc/test_*.py)
    foreach(_t IN LISTS _mlb_gcc_tests)
      get_filename_component(_name ${_t} NAME_WE)
      string(REGEX REPLACE "^test_" "" _name ${_name})
      add_test(NAME gcc.${_name} COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${_t}
               WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
      set_tests_properties(gcc.${_name} PROPERTIES TIMEOUT 120 LABELS integrations ENVIRONMENT
        "MLBRIDGE_GCC_PLUGIN=${MLBRIDGE_GCC_PLUGIN};MLBRIDGE_GCC=${CMAKE_C_COMPILER};MLBRIDGE_LIBRARY=$<TARGET_FILE:mlbridge>;PYTHONPATH=${PROJECT_SOURCE_DIR}/python")
    endforeach()
  endif()
endif()
