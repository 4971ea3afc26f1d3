# mlbridge-bench --runner tfaot: the in-process benchmark's models (same
# weights, bench/mlp_floor.h) as TensorFlow SavedModels compiled by XLA.
# Included by cmake/tfaot.cmake when the TF environment is found. Everything
# happens at configure time (mlbridge_add_tf_aot_model needs the SavedModel
# then): the ONNX writer runs through try_run, the SavedModels are built from
# its weights by bench/tfaot_bench_models.py in the TF environment.
set(_tfb ${PROJECT_BINARY_DIR}/bench/tfaot_bench)
file(SHA256 ${CMAKE_CURRENT_LIST_DIR}/mlp_floor.h _h1)
file(SHA256 ${CMAKE_CURRENT_LIST_DIR}/tfaot_bench_models.py _h2)
set(_key "${MLBRIDGE_TF_PYTHON};${_h1};${_h2}")
set(_old "")
if(EXISTS ${_tfb}/.stamp)
  file(READ ${_tfb}/.stamp _old)
endif()
if(NOT _old STREQUAL _key)
  file(REMOVE_RECURSE ${_tfb})
  file(MAKE_DIRECTORY ${_tfb}/onnx)
  try_run(_run _compiled ${_tfb}/try ${CMAKE_CURRENT_LIST_DIR}/aot_bench_models.cc
          CMAKE_FLAGS -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_STANDARD_REQUIRED=ON
          COMPILE_OUTPUT_VARIABLE _cout ARGS ${_tfb}/onnx)
  if(NOT _compiled OR NOT _run EQUAL 0)
    message(FATAL_ERROR "mlbridge: tfaot: cannot write the benchmark models: ${_cout}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env TF_CPP_MIN_LOG_LEVEL=3 --unset=PYTHONPATH ${MLBRIDGE_TF_PYTHON}
                          ${CMAKE_CURRENT_LIST_DIR}/tfaot_bench_models.py ${_tfb}/onnx ${_tfb}
                  RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET TIMEOUT 600)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "mlbridge: tfaot: bench/tfaot_bench_models.py failed: ${_err}")
  endif()
  file(WRITE ${_tfb}/.stamp "${_key}")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/tfaot_bench_models.py
             ${CMAKE_CURRENT_LIST_DIR}/mlp_floor.h)
mlbridge_add_tf_aot_model(TARGET mlbridge_tfaot_bench_mlp SAVED_MODEL ${_tfb}/mlp NAME TfAotBenchMlp
                          OUTPUT_DIR ${_tfb}/gen_mlp)
mlbridge_add_tf_aot_model(TARGET mlbridge_tfaot_bench_fc SAVED_MODEL ${_tfb}/fc50k NAME TfAotBenchFc50k
                          OUTPUT_DIR ${_tfb}/gen_fc)
target_link_libraries(mlbridge-bench PRIVATE mlbridge_tfaot_bench_mlp mlbridge_tfaot_bench_fc)
target_compile_definitions(mlbridge-bench PRIVATE MLBRIDGE_BENCH_WITH_TFAOT=1)
