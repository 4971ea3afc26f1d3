# Optional gRPC component: library mlbridge_grpc (alias mlbridge::grpc) with
# GrpcModelRunner (inference: the model serves) and GrpcTrainingServer
# (training: the compiler serves), their gtests, and install rules.
# Needs gRPC C++ and protobuf (Debian: libgrpc++-dev protobuf-compiler-grpc
# libprotobuf-dev protobuf-compiler). The core library never links gRPC.
option(MLBRIDGE_WITH_GRPC "Build the gRPC runner and training server (needs gRPC C++)" ON)

set(_mlb_grpc_reason "")
if(NOT MLBRIDGE_WITH_GRPC)
  set(_mlb_grpc_reason "MLBRIDGE_WITH_GRPC=OFF")
endif()

# ---- find gRPC: its CMake package, else pkg-config grpc++ -------------------
set(_mlb_grpc_libs "")
if(NOT _mlb_grpc_reason)
  if(NOT Protobuf_FOUND)
    find_package(Protobuf QUIET)
  endif()
  find_package(gRPC CONFIG QUIET)
  if(gRPC_FOUND AND TARGET gRPC::grpc++)
    set(_mlb_grpc_libs gRPC::grpc++)
    if(TARGET gRPC::grpc_cpp_plugin)
      get_target_property(_mlb_grpc_plugin gRPC::grpc_cpp_plugin IMPORTED_LOCATION_NONE)
      if(NOT _mlb_grpc_plugin)
        get_target_property(_mlb_grpc_plugin gRPC::grpc_cpp_plugin LOCATION)
      endif()
    endif()
    set(_mlb_grpc_how "CMake package gRPC ${gRPC_VERSION}")
  else()
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(MLB_GRPCPP QUIET IMPORTED_TARGET grpc++)
    endif()
    if(MLB_GRPCPP_FOUND)
      set(_mlb_grpc_libs PkgConfig::MLB_GRPCPP)
      set(_mlb_grpc_how "pkg-config grpc++ ${MLB_GRPCPP_VERSION}")
    endif()
  endif()
  if(NOT _mlb_grpc_plugin OR NOT EXISTS "${_mlb_grpc_plugin}")
    find_program(_mlb_grpc_plugin_prog grpc_cpp_plugin)
    set(_mlb_grpc_plugin ${_mlb_grpc_plugin_prog})
  endif()
  if(NOT _mlb_grpc_libs)
    set(_mlb_grpc_reason "gRPC C++ not found (install libgrpc++-dev)")
  elseif(NOT Protobuf_FOUND OR NOT Protobuf_PROTOC_EXECUTABLE)
    set(_mlb_grpc_reason "protobuf not found (install libprotobuf-dev protobuf-compiler)")
  elseif(NOT _mlb_grpc_plugin)
    set(_mlb_grpc_reason "grpc_cpp_plugin not found (install protobuf-compiler-grpc)")
  endif()
endif()

if(_mlb_grpc_reason)
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "grpc (${_mlb_grpc_reason})")
  message(STATUS "mlbridge: grpc disabled: ${_mlb_grpc_reason}")
  return()
endif()

# ---- C++ code generated from proto/ at build time ---------------------------
set(_mlb_proto_dir ${PROJECT_SOURCE_DIR}/proto)
set(_mlb_gen_dir ${PROJECT_BINARY_DIR}/grpc_gen)
set(_mlb_gen_srcs "")
set(_mlb_gen_hdrs "")
foreach(_name mlbridge service)
  set(_proto ${_mlb_proto_dir}/mlbridge/v1/${_name}.proto)
  set(_out ${_mlb_gen_dir}/mlbridge/v1/${_name})
  set(_outs ${_out}.pb.cc ${_out}.pb.h)
  set(_args --cpp_out=${_mlb_gen_dir})
  if(_name STREQUAL "service")
    list(APPEND _outs ${_out}.grpc.pb.cc ${_out}.grpc.pb.h)
    list(APPEND _args --grpc_out=${_mlb_gen_dir} --plugin=protoc-gen-grpc=${_mlb_grpc_plugin})
  endif()
  add_custom_command(OUTPUT ${_outs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_mlb_gen_dir}
    COMMAND ${Protobuf_PROTOC_EXECUTABLE} -I${_mlb_proto_dir} ${_args} ${_proto}
    DEPENDS ${_proto} ${_mlb_proto_dir}/mlbridge/v1/mlbridge.proto
    COMMENT "protoc: mlbridge/v1/${_name}.proto (C++ and gRPC)"
    VERBATIM)
  foreach(_f ${_outs})
    if(_f MATCHES "\\.cc$")
      list(APPEND _mlb_gen_srcs ${_f})
    else()
      list(APPEND _mlb_gen_hdrs ${_f})
    endif()
  endforeach()
endforeach()

# Generated code gets its own target, without our -Werror.
# (An object library: its objects go into mlbridge_grpc itself.)
add_library(mlbridge_grpc_proto OBJECT ${_mlb_gen_srcs} ${_mlb_gen_hdrs})
target_include_directories(mlbridge_grpc_proto PUBLIC ${_mlb_gen_dir})
target_link_libraries(mlbridge_grpc_proto PUBLIC ${_mlb_grpc_libs} protobuf::libprotobuf)
set_target_properties(mlbridge_grpc_proto PROPERTIES POSITION_INDEPENDENT_CODE ON)

# ---- the library -------------------------------------------------------------
file(GLOB MLBRIDGE_GRPC_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/grpc/*.cc)
add_library(mlbridge_grpc ${MLBRIDGE_GRPC_SOURCES} $<TARGET_OBJECTS:mlbridge_grpc_proto>)
add_library(mlbridge::grpc ALIAS mlbridge_grpc)
target_include_directories(mlbridge_grpc
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  PRIVATE ${PROJECT_SOURCE_DIR}/src ${_mlb_gen_dir})
add_dependencies(mlbridge_grpc mlbridge_grpc_proto)
target_compile_options(mlbridge_grpc PRIVATE ${MLBRIDGE_WARNINGS})
# Consumers of an installed static mlbridge_grpc need find_dependency(gRPC).
target_link_libraries(mlbridge_grpc PUBLIC mlbridge PRIVATE ${_mlb_grpc_libs} protobuf::libprotobuf)
set_target_properties(mlbridge_grpc PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0 EXPORT_NAME grpc)
list(APPEND MLBRIDGE_ENABLED_COMPONENTS "grpc")
message(STATUS "mlbridge: grpc enabled (${_mlb_grpc_how}, protobuf ${Protobuf_VERSION}, plugin ${_mlb_grpc_plugin})")

install(TARGETS mlbridge_grpc EXPORT MLBridgeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/proto/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mlbridge/proto)

# ---- tests -------------------------------------------------------------------
if(MLBRIDGE_BUILD_TESTS AND GTest_FOUND)
  # A stand-in compiler in training mode for the Python trainer tests.
  add_executable(mlbridge-grpc-testenv ${PROJECT_SOURCE_DIR}/tests/grpc/testenv.cc)
  target_compile_options(mlbridge-grpc-testenv PRIVATE ${MLBRIDGE_WARNINGS})
  target_link_libraries(mlbridge-grpc-testenv PRIVATE mlbridge_grpc)
  # The Python gRPC tests (tests/python/rpc/test_grpc_*.py) run in the main `python`
  # ctest entry, which finds this stand-in through MLBRIDGE_BUILD_DIR.
  file(GLOB MLBRIDGE_GRPC_TEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/grpc/*_test.cc)
  if(MLBRIDGE_GRPC_TEST_SOURCES)
    add_executable(mlbridge_grpc_tests ${MLBRIDGE_GRPC_TEST_SOURCES})
    target_include_directories(mlbridge_grpc_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tools ${PROJECT_SOURCE_DIR}/tests/grpc
      ${_mlb_gen_dir})
    target_compile_options(mlbridge_grpc_tests PRIVATE ${MLBRIDGE_WARNINGS})
    target_compile_definitions(mlbridge_grpc_tests PRIVATE MLBRIDGE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    # The tests also run fake servers and trainers from the generated classes.
    target_link_libraries(mlbridge_grpc_tests PRIVATE mlbridge_grpc ${_mlb_grpc_libs} protobuf::libprotobuf
      GTest::gtest GTest::gtest_main)
    include(GoogleTest)
    gtest_discover_tests(mlbridge_grpc_tests TEST_PREFIX "grpc." DISCOVERY_TIMEOUT 60
      PROPERTIES TIMEOUT 120 ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python")
  endif()
  # The public gRPC headers build the way LLVM and GCC plugins are built.
  add_library(mlbridge_grpc_noexcept_check OBJECT ${PROJECT_SOURCE_DIR}/tests/grpc/noexcept_check.cpp)
  target_compile_options(mlbridge_grpc_noexcept_check PRIVATE -fno-exceptions -fno-rtti ${MLBRIDGE_WARNINGS})
  target_link_libraries(mlbridge_grpc_noexcept_check PRIVATE mlbridge)
  add_executable(mlbridge_grpc_noexcept_test $<TARGET_OBJECTS:mlbridge_grpc_noexcept_check>)
  target_link_libraries(mlbridge_grpc_noexcept_test PRIVATE mlbridge_grpc)
  add_test(NAME grpc.noexcept_headers COMMAND mlbridge_grpc_noexcept_test)
endif()

# ---- benchmark (bench/grpc.cmake, when the lead wires it in) -----------------
if(MLBRIDGE_BUILD_TOOLS AND EXISTS ${PROJECT_SOURCE_DIR}/bench/grpc.cmake)
  include(${PROJECT_SOURCE_DIR}/bench/grpc.cmake)
endif()
