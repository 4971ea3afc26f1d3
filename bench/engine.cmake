# mlbridge-engine-bench: the built-in ONNX engine against hand-written C++
# (bench/engine_bench.cc). Include from bench/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/engine.cmake)
if(DEFINED MLBRIDGE_WITH_ENGINE AND NOT MLBRIDGE_WITH_ENGINE)
  return()
endif()
add_executable(mlbridge-engine-bench ${CMAKE_CURRENT_LIST_DIR}/engine_bench.cc)
target_compile_options(mlbridge-engine-bench PRIVATE ${MLBRIDGE_WARNINGS})
target_link_libraries(mlbridge-engine-bench PRIVATE mlbridge::mlbridge)
install(TARGETS mlbridge-engine-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
