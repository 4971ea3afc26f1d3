# Optional component `tfaot`: TensorFlow SavedModels compiled ahead of time by
# XLA (LLVM's release mode; docs/tfaot.md). The runner itself
# (TfAotModelRunner, src/tfaot/) is in the core library and needs nothing; this
# component is the build-time side: mlbridge_add_tf_aot_model
# (cmake/MLBridgeTfAot.cmake) and the tests that build models with TensorFlow
# (ctest label `tf`, names "tf.").
#
# On when a TensorFlow environment is found: MLBRIDGE_TF_PYTHON (default
# .deps/tf-venv/bin/python, made by scripts/get-tensorflow.sh) with
# saved_model_cli beside it. MLBRIDGE_WITH_TFAOT: AUTO (default), ON (required), OFF.
set(MLBRIDGE_WITH_TFAOT "AUTO" CACHE STRING "TensorFlow AOT models: AUTO (when a TF environment is found), ON or OFF")
set_property(CACHE MLBRIDGE_WITH_TFAOT PROPERTY STRINGS AUTO ON OFF)
set(MLBRIDGE_TF_PYTHON "" CACHE FILEPATH "Python of a TensorFlow 2.15 environment (default: .deps/tf-venv/bin/python)")

set(_mlb_tf_python "${MLBRIDGE_TF_PYTHON}")
if(NOT _mlb_tf_python)
  set(_mlb_tf_python "${PROJECT_SOURCE_DIR}/.deps/tf-venv/bin/python")
endif()
get_filename_component(_mlb_tf_bin "${_mlb_tf_python}" DIRECTORY)
set(_mlb_tf_reason "")
if(MLBRIDGE_WITH_TFAOT STREQUAL "OFF")
  set(_mlb_tf_reason "MLBRIDGE_WITH_TFAOT=OFF")
elseif(NOT EXISTS "${_mlb_tf_python}" OR NOT EXISTS "${_mlb_tf_bin}/saved_model_cli")
  set(_mlb_tf_reason "no TensorFlow environment at ${_mlb_tf_python}: bash scripts/get-tensorflow.sh")
elseif(MLBRIDGE_SANITIZE)
  set(_mlb_tf_reason "not with sanitizers (XLA's generated code is not instrumented)")
endif()

if(_mlb_tf_reason)
  if(MLBRIDGE_WITH_TFAOT STREQUAL "ON")
    message(FATAL_ERROR "mlbridge: tfaot: ${_mlb_tf_reason} (MLBRIDGE_WITH_TFAOT=ON)")
  endif()
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "tfaot (${_mlb_tf_reason})")
else()
  set(MLBRIDGE_TF_PYTHON "${_mlb_tf_python}")
  include(${CMAKE_CURRENT_LIST_DIR}/MLBridgeTfAot.cmake)
  list(APPEND MLBRIDGE_ENABLED_COMPONENTS "tfaot")
  if(TARGET mlbridge-bench)
    include(${PROJECT_SOURCE_DIR}/bench/tfaot.cmake)
  endif()
  if(MLBRIDGE_BUILD_TESTS AND MLBRIDGE_WITH_ENGINE AND GTest_FOUND)
    add_subdirectory(${PROJECT_SOURCE_DIR}/tests/tfaot ${PROJECT_BINARY_DIR}/tests/tfaot)
  endif()
endif()
