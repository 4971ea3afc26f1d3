# gRPC benchmarks (bench/grpc_bench.cc). Included by cmake/grpc.cmake when
# gRPC is found (so mlbridge::grpc exists).
#  * mlbridge-bench-grpc: standalone, same CLI/JSON as mlbridge-bench.
#  * mlbridge-bench --runner grpc: when bench/mlbridge_bench.cc forwards to
#    mlbridgeBenchGrpc() under MLBRIDGE_BENCH_WITH_GRPC (see docs/grpc.md).
add_executable(mlbridge-bench-grpc ${PROJECT_SOURCE_DIR}/bench/grpc_bench.cc)
target_compile_options(mlbridge-bench-grpc PRIVATE ${MLBRIDGE_WARNINGS})
target_compile_definitions(mlbridge-bench-grpc PRIVATE MLBRIDGE_GRPC_BENCH_MAIN=1
  MLBRIDGE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(mlbridge-bench-grpc PRIVATE mlbridge::grpc)
target_include_directories(mlbridge-bench-grpc PRIVATE ${PROJECT_SOURCE_DIR}/tools)
install(TARGETS mlbridge-bench-grpc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET mlbridge-bench)
  target_sources(mlbridge-bench PRIVATE ${PROJECT_SOURCE_DIR}/bench/grpc_bench.cc)
  target_compile_definitions(mlbridge-bench PRIVATE MLBRIDGE_BENCH_WITH_GRPC=1)
  target_link_libraries(mlbridge-bench PRIVATE mlbridge::grpc)
  target_include_directories(mlbridge-bench PRIVATE ${PROJECT_SOURCE_DIR}/tools)
endif()
