# Benchmark of the ONNX Runtime runner (bench/ort_bench.cc, bench/ort_bench.h).
# Included by cmake/onnxruntime.cmake once mlbridge_onnxruntime exists; a
# no-op anywhere earlier (e.g. from bench/CMakeLists.txt, which runs before
# ONNX Runtime is looked for).
#  * mlbridge-ort-bench: standalone, also counts heap allocations per call;
#  * mlbridge-bench gets ort_bench.cc, MLBRIDGE_HAVE_ONNXRUNTIME=1 and the
#    library, so it can call mlbridge::bench::runOrtBench().
if(NOT TARGET mlbridge_onnxruntime)
  return()
endif()
get_target_property(_mlb_ortb_rpath mlbridge_onnxruntime BUILD_RPATH)

add_executable(mlbridge-ort-bench ${CMAKE_CURRENT_LIST_DIR}/ort_bench.cc ${CMAKE_CURRENT_LIST_DIR}/ort_bench_main.cc)
target_include_directories(mlbridge-ort-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/tests/ort)
target_compile_options(mlbridge-ort-bench PRIVATE ${MLBRIDGE_WARNINGS})
target_link_libraries(mlbridge-ort-bench PRIVATE mlbridge::onnxruntime)
set_target_properties(mlbridge-ort-bench PROPERTIES
  BUILD_RPATH "${_mlb_ortb_rpath}" INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS mlbridge-ort-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

if(TARGET mlbridge-bench)
  target_sources(mlbridge-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/ort_bench.cc)
  target_include_directories(mlbridge-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/tests/ort)
  target_compile_definitions(mlbridge-bench PRIVATE MLBRIDGE_HAVE_ONNXRUNTIME=1)
  target_link_libraries(mlbridge-bench PRIVATE mlbridge::onnxruntime)
  set_property(TARGET mlbridge-bench APPEND PROPERTY BUILD_RPATH "${_mlb_ortb_rpath}")
  set_property(TARGET mlbridge-bench APPEND PROPERTY INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()
