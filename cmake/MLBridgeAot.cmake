# mlbridge_add_aot_model: compile an .onnx model ahead of time into plain C++
# (docs/aot.md) at build time, as a static library.
#
#   mlbridge_add_aot_model(TARGET inliner_policy MODEL ${CMAKE_CURRENT_SOURCE_DIR}/policy.onnx
#                          NAME InlinerPolicy [OUTPUT_DIR dir] [DIMS batch=4 ...] [DEFAULT_DIM n]
#                          [COMPILE_OPTIONS -O3 ...])
#   target_link_libraries(my_pass PRIVATE inliner_policy)   # #include "InlinerPolicy.h"
#
# The generated library needs nothing but a C++17 compiler. To use it behind
# mlbridge::ModelRunner, also link mlbridge::mlbridge and call
# mlbridge::AotModelRunner::create(InlinerPolicy_model(), features, advice).
# The generator is the mlbridge-aot target of this build, else the installed
# mlbridge::mlbridge-aot, else ${MLBRIDGE_AOT_EXECUTABLE} / mlbridge-aot on PATH.
include_guard(GLOBAL)

function(mlbridge_add_aot_model)
  cmake_parse_arguments(ARG "" "TARGET;MODEL;NAME;OUTPUT_DIR;DEFAULT_DIM" "DIMS;COMPILE_OPTIONS" ${ARGN})
  foreach(req TARGET MODEL NAME)
    if(NOT ARG_${req})
      message(FATAL_ERROR "mlbridge_add_aot_model: ${req} is required")
    endif()
  endforeach()
  if(NOT ARG_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "mlbridge_add_aot_model: NAME '${ARG_NAME}' must be a C identifier")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/mlbridge_aot/${ARG_NAME})
  endif()
  get_filename_component(model ${ARG_MODEL} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  if(TARGET mlbridge-aot)
    set(tool $<TARGET_FILE:mlbridge-aot>)
    set(tool_dep mlbridge-aot)
  elseif(TARGET mlbridge::mlbridge-aot)
    set(tool $<TARGET_FILE:mlbridge::mlbridge-aot>)
    set(tool_dep mlbridge::mlbridge-aot)
  else()
    if(NOT MLBRIDGE_AOT_EXECUTABLE)
      find_program(MLBRIDGE_AOT_EXECUTABLE mlbridge-aot REQUIRED)
    endif()
    set(tool ${MLBRIDGE_AOT_EXECUTABLE})
    set(tool_dep ${MLBRIDGE_AOT_EXECUTABLE})
  endif()
  set(opts)
  foreach(d IN LISTS ARG_DIMS)
    list(APPEND opts --dim ${d})
  endforeach()
  if(DEFINED ARG_DEFAULT_DIM)
    list(APPEND opts --default-dim ${ARG_DEFAULT_DIM})
  endif()
  set(hdr ${ARG_OUTPUT_DIR}/${ARG_NAME}.h)
  set(src ${ARG_OUTPUT_DIR}/${ARG_NAME}.cc)
  add_custom_command(OUTPUT ${hdr} ${src}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_OUTPUT_DIR}
    COMMAND ${tool} ${model} --name ${ARG_NAME} -o ${ARG_OUTPUT_DIR} ${opts}
    DEPENDS ${model} ${tool_dep}
    COMMENT "mlbridge-aot: ${ARG_NAME} from ${ARG_MODEL}"
    VERBATIM)
  add_library(${ARG_TARGET} STATIC ${src} ${hdr})
  target_include_directories(${ARG_TARGET} PUBLIC $<BUILD_INTERFACE:${ARG_OUTPUT_DIR}>)
  target_compile_features(${ARG_TARGET} PUBLIC cxx_std_17)
  set_target_properties(${ARG_TARGET} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(ARG_COMPILE_OPTIONS)
    target_compile_options(${ARG_TARGET} PRIVATE ${ARG_COMPILE_OPTIONS})
  endif()
endfunction()
