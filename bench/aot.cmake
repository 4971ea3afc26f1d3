# mlbridge-aot-bench: AOT-compiled models (docs/aot.md) against the same
# hand-written floor as mlbridge-engine-bench, compiled with the same flags.
# Include from bench/CMakeLists.txt (inside if(MLBRIDGE_WITH_ENGINE)):
#   include(${CMAKE_CURRENT_SOURCE_DIR}/aot.cmake OPTIONAL)
if(NOT TARGET mlbridge-aot)
  return()
endif()
include(${mlbridge_SOURCE_DIR}/cmake/MLBridgeAot.cmake)
if(NOT DEFINED MLBRIDGE_WARNINGS)
  set(MLBRIDGE_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
endif()

add_executable(mlbridge-aot-bench-models ${CMAKE_CURRENT_LIST_DIR}/aot_bench_models.cc)
target_compile_options(mlbridge-aot-bench-models PRIVATE ${MLBRIDGE_WARNINGS})
set(_aot_bench_dir ${CMAKE_CURRENT_BINARY_DIR}/aot_bench)
add_custom_command(
  OUTPUT ${_aot_bench_dir}/aot_bench_mlp.onnx ${_aot_bench_dir}/aot_bench_fc50k.onnx
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_aot_bench_dir}
  COMMAND mlbridge-aot-bench-models ${_aot_bench_dir}
  DEPENDS mlbridge-aot-bench-models
  COMMENT "Writing the AOT benchmark models"
  VERBATIM)
mlbridge_add_aot_model(TARGET mlbridge_aot_bench_mlp MODEL ${_aot_bench_dir}/aot_bench_mlp.onnx NAME AotBenchMlp
                       OUTPUT_DIR ${_aot_bench_dir}/mlp COMPILE_OPTIONS ${MLBRIDGE_WARNINGS})
mlbridge_add_aot_model(TARGET mlbridge_aot_bench_fc MODEL ${_aot_bench_dir}/aot_bench_fc50k.onnx NAME AotBenchFc50k
                       OUTPUT_DIR ${_aot_bench_dir}/fc COMPILE_OPTIONS ${MLBRIDGE_WARNINGS})

add_executable(mlbridge-aot-bench ${CMAKE_CURRENT_LIST_DIR}/aot_bench.cc)
target_compile_options(mlbridge-aot-bench PRIVATE ${MLBRIDGE_WARNINGS})
target_link_libraries(mlbridge-aot-bench PRIVATE mlbridge_aot_bench_mlp mlbridge_aot_bench_fc mlbridge)

# mlbridge-bench --runner aot (bench/inproc_bench.cc) uses the same generated models.
if(TARGET mlbridge-bench)
  target_compile_definitions(mlbridge-bench PRIVATE MLBRIDGE_BENCH_WITH_AOT=1)
  target_link_libraries(mlbridge-bench PRIVATE mlbridge_aot_bench_mlp mlbridge_aot_bench_fc)
endif()
