# C API pieces outside the core library's source glob. Included at the end of
# the top-level CMakeLists.txt, after the optional components:
#   include(src/c_api/c_api.cmake)
#
# - src/c_api/onnx.cc learns whether the built-in engine is compiled in;
# - the C entry points of runner kinds that live in optional libraries
#   (src/c_api/ext/<component>.cc) are compiled into those libraries;
# - their C tests are registered (tests/c/CMakeLists.txt defines the helper).

if(MLBRIDGE_WITH_ENGINE)
  set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/onnx.cc TARGET_DIRECTORY mlbridge APPEND PROPERTY COMPILE_DEFINITIONS MLBRIDGE_HAVE_ENGINE=1)
endif()

if(TARGET mlbridge_onnxruntime)
  target_sources(mlbridge_onnxruntime PRIVATE ${CMAKE_CURRENT_LIST_DIR}/ext/onnxruntime.cc)
endif()
if(TARGET mlbridge_grpc)
  target_sources(mlbridge_grpc PRIVATE ${CMAKE_CURRENT_LIST_DIR}/ext/grpc.cc)
endif()

if(MLBRIDGE_BUILD_TESTS AND COMMAND mlbridge_add_c_test)
  if(TARGET mlbridge_onnxruntime)
    mlbridge_add_c_test(mlbridge_c_onnxruntime_test ${PROJECT_SOURCE_DIR}/tests/c/onnxruntime_test.c
      LIBRARIES mlbridge_onnxruntime m
      DEFINITIONS MLBT_MODELS_DIR="${PROJECT_SOURCE_DIR}/tests/engine/models")
    get_target_property(_mlb_c_ort_rpath mlbridge_onnxruntime BUILD_RPATH)
    if(_mlb_c_ort_rpath)
      set_target_properties(mlbridge_c_onnxruntime_test PROPERTIES BUILD_RPATH "${_mlb_c_ort_rpath}")
    endif()
  endif()
  if(TARGET mlbridge_grpc)
    mlbridge_add_c_test(mlbridge_c_grpc_test ${PROJECT_SOURCE_DIR}/tests/c/grpc_test.c
      LIBRARIES mlbridge_grpc
      ENVIRONMENT "${MLBRIDGE_C_TEST_PYTHON_ENV}")
  endif()
endif()
