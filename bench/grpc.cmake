# gRPC benchmarks (bench/grpc_bench.cc). Included by cmake/grpc.cmake when
# gRPC is found (so mlbridge::grpc exists).
#  * mlbridge-bench-grpc: standalone, same CLI/JSON as mlbridge-bench.
#  * mlbridge-bench --runner grpc: when bench/mlbridge_bench.cc forwards to
#    mlbridgeBenchGrpc() under MLBRIDGE_BENCH_WITH_GRPC (see docs/grpc.md).
add_executable(mlbridge-bench-grpc ${PROJECT_SOURCE_DIR}/bench/grpc_bench.cc
  ${PROJECT_SOURCE_DIR}/bench/grpc_floor_server.cc)
target_compile_options(mlbridge-bench-grpc PRIVATE ${MLBRIDGE_WARNINGS})
target_compile_definitions(mlbridge-bench-grpc PRIVATE MLBRIDGE_GRPC_BENCH_MAIN=1
  MLBRIDGE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# The C++ floor server (grpc_floor_server.cc) uses the generated service, grpc++ and the
# library's own spec reading (src/grpc/common.h) directly.
target_link_libraries(mlbridge-bench-grpc PRIVATE mlbridge::grpc ${_mlb_grpc_libs} protobuf::libprotobuf)
target_include_directories(mlbridge-bench-grpc PRIVATE ${PROJECT_SOURCE_DIR}/tools ${PROJECT_SOURCE_DIR}/src ${_mlb_gen_dir})
install(TARGETS mlbridge-bench-grpc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET mlbridge-bench)
  target_sources(mlbridge-bench PRIVATE ${PROJECT_SOURCE_DIR}/bench/grpc_bench.cc
    ${PROJECT_SOURCE_DIR}/bench/grpc_floor_server.cc)
  target_compile_definitions(mlbridge-bench PRIVATE MLBRIDGE_BENCH_WITH_GRPC=1)
  target_link_libraries(mlbridge-bench PRIVATE mlbridge::grpc ${_mlb_grpc_libs} protobuf::libprotobuf)
  target_include_directories(mlbridge-bench PRIVATE ${PROJECT_SOURCE_DIR}/tools ${PROJECT_SOURCE_DIR}/src ${_mlb_gen_dir})
endif()

# The gRPC runner runs (small), and its C++ floor server (gRPC alone) starts,
# answers and is reported beside the Python servers.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(MLBRIDGE_BUILD_TESTS AND TARGET mlbridge-bench AND Python3_FOUND AND NOT MLBRIDGE_SANITIZE)
  add_test(NAME bench_grpc_cxx_floor COMMAND mlbridge-bench latency --runner grpc --pin none --iterations 100)
  set_tests_properties(bench_grpc_cxx_floor PROPERTIES TIMEOUT 180
    ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python"
    PASS_REGULAR_EXPRESSION "\"cxx_floor\":{\"total_ms\":[0-9.]+,\"p50_us\":[1-9]")
endif()
