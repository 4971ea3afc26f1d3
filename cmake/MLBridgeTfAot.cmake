# mlbridge_add_tf_aot_model: compile a TensorFlow SavedModel ahead of time with
# XLA (`saved_model_cli aot_compile_cpu`, LLVM's release mode; docs/tfaot.md)
# into a library exposing `const mlbridge_tfaot_model* <NAME>_tfaot_model(void)`
# for mlbridge::TfAotModelRunner (include/mlbridge/tfaot_runner.h).
#
#   mlbridge_add_tf_aot_model(TARGET inliner_policy SAVED_MODEL ${dir}/saved_policy NAME InlinerPolicy
#                             [SIGNATURE serving_default] [TAG_SET serve]
#                             [FEEDS callee_users ...] [FETCHES inlining_decision ...]
#                             [MODULE])
#   target_link_libraries(my_pass PRIVATE inliner_policy mlbridge::mlbridge)
#
# FEEDS / FETCHES, when given, must be in the signature (checked here, so a
# renamed feature fails the configure step naming it). MODULE makes a shared
# library to load at run time (e.g. the LLVM plugin's
# -mlbridge-inline-runner=tfaot -mlbridge-inline-model=LIB.so); default: static.
#
# The compile runs at configure time, with the TensorFlow environment's Python
# (MLBRIDGE_TF_PYTHON: scripts/get-tensorflow.sh makes .deps/tf-venv), and again
# whenever the SavedModel changes. The library links the compiled object, the
# generated descriptor and only the XLA runtime sources the object needs (the
# class's base, plus one source per `__xla_cpu_runtime_*` symbol it calls): the
# result needs nothing but libc, libm and libstdc++.
include_guard(GLOBAL)

set(MLBRIDGE_TFAOT_COMPILE_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/mlbridge_tfaot_compile.py)

function(mlbridge_add_tf_aot_model)
  cmake_parse_arguments(ARG "MODULE" "TARGET;SAVED_MODEL;NAME;SIGNATURE;TAG_SET;OUTPUT_DIR" "FEEDS;FETCHES" ${ARGN})
  foreach(req TARGET SAVED_MODEL NAME)
    if(NOT ARG_${req})
      message(FATAL_ERROR "mlbridge_add_tf_aot_model: ${req} is required")
    endif()
  endforeach()
  if(NOT MLBRIDGE_TF_PYTHON)
    message(FATAL_ERROR "mlbridge_add_tf_aot_model: MLBRIDGE_TF_PYTHON is not set (the Python of a TensorFlow 2.15 "
                        "environment: bash scripts/get-tensorflow.sh)")
  endif()
  if(NOT ARG_SIGNATURE)
    set(ARG_SIGNATURE serving_default)
  endif()
  if(NOT ARG_TAG_SET)
    set(ARG_TAG_SET serve)
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/mlbridge_tfaot/${ARG_NAME})
  endif()
  get_filename_component(saved ${ARG_SAVED_MODEL} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  string(REPLACE ";" "," feeds "${ARG_FEEDS}")
  string(REPLACE ";" "," fetches "${ARG_FETCHES}")
  set(nm nm)
  if(CMAKE_NM)
    set(nm ${CMAKE_NM})
  endif()

  # Recompile only when the SavedModel, the script or the arguments change.
  file(GLOB_RECURSE model_files LIST_DIRECTORIES false ${saved}/saved_model.pb ${saved}/variables/*)
  set(key "${MLBRIDGE_TF_PYTHON};${ARG_NAME};${ARG_SIGNATURE};${ARG_TAG_SET};${feeds};${fetches}")
  foreach(f IN LISTS model_files ITEMS ${MLBRIDGE_TFAOT_COMPILE_SCRIPT})
    file(SHA256 ${f} h)
    string(APPEND key ";${h}")
  endforeach()
  string(SHA256 key "${key}")
  set(stamp ${ARG_OUTPUT_DIR}/.mlbridge-tfaot.stamp)
  set(old "")
  if(EXISTS ${stamp})
    file(READ ${stamp} old)
  endif()
  if(NOT old STREQUAL key)
    file(REMOVE_RECURSE ${ARG_OUTPUT_DIR})
    execute_process(
      COMMAND ${MLBRIDGE_TF_PYTHON} ${MLBRIDGE_TFAOT_COMPILE_SCRIPT} --saved-model ${saved} --name ${ARG_NAME}
              --out ${ARG_OUTPUT_DIR} --signature ${ARG_SIGNATURE} --tag-set ${ARG_TAG_SET}
              --feeds "${feeds}" --fetches "${fetches}" --nm ${nm}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 900)
    if(NOT rc EQUAL 0)
      string(REGEX MATCH "mlbridge_tfaot_compile: error: [^\n]*" msg "${err}")
      if(NOT msg)
        set(msg "${err}")
      endif()
      message(FATAL_ERROR "mlbridge_add_tf_aot_model(${ARG_TARGET}) from ${ARG_SAVED_MODEL}: ${msg}")
    endif()
    if(out)
      string(STRIP "${out}" out)
      message(STATUS "${out}")
    endif()
    file(WRITE ${stamp} "${key}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${model_files} ${MLBRIDGE_TFAOT_COMPILE_SCRIPT})

  file(STRINGS ${ARG_OUTPUT_DIR}/runtime_base.txt base)
  file(STRINGS ${ARG_OUTPUT_DIR}/runtime_sources.txt runtime)
  file(STRINGS ${ARG_OUTPUT_DIR}/runtime_dir.txt runtime_dir)
  file(STRINGS ${ARG_OUTPUT_DIR}/include_dir.txt tf_include)
  list(TRANSFORM base PREPEND ${runtime_dir}/)
  list(TRANSFORM runtime PREPEND ${runtime_dir}/)
  # The class's base is the same for every model: built once per project.
  if(NOT TARGET mlbridge_tfaot_xla_runtime)
    add_library(mlbridge_tfaot_xla_runtime STATIC ${base})
    target_include_directories(mlbridge_tfaot_xla_runtime PRIVATE ${tf_include})
    target_compile_definitions(mlbridge_tfaot_xla_runtime PRIVATE _GLIBCXX_USE_CXX11_ABI=1)
    target_compile_options(mlbridge_tfaot_xla_runtime PRIVATE -w)  # XLA's sources: their warnings are not ours
    target_compile_features(mlbridge_tfaot_xla_runtime PRIVATE cxx_std_17)
    set_target_properties(mlbridge_tfaot_xla_runtime PROPERTIES POSITION_INDEPENDENT_CODE ON
                          CXX_VISIBILITY_PRESET hidden)
  endif()
  if(ARG_MODULE)
    add_library(${ARG_TARGET} MODULE)
  else()
    add_library(${ARG_TARGET} STATIC)
  endif()
  target_sources(${ARG_TARGET} PRIVATE ${ARG_OUTPUT_DIR}/${ARG_NAME}.o ${ARG_OUTPUT_DIR}/${ARG_NAME}_tfaot.cc ${runtime})
  set_source_files_properties(${ARG_OUTPUT_DIR}/${ARG_NAME}.o PROPERTIES EXTERNAL_OBJECT ON GENERATED ON)
  # XLA's sources: their own warnings are not ours.
  if(runtime)
    set_source_files_properties(${runtime} PROPERTIES COMPILE_OPTIONS "-w")
  endif()
  target_include_directories(${ARG_TARGET} PUBLIC $<BUILD_INTERFACE:${ARG_OUTPUT_DIR}> PRIVATE ${tf_include})
  if(TARGET mlbridge)
    target_include_directories(${ARG_TARGET} PRIVATE $<TARGET_PROPERTY:mlbridge,INTERFACE_INCLUDE_DIRECTORIES>)
  elseif(TARGET mlbridge::mlbridge)
    target_include_directories(${ARG_TARGET} PRIVATE $<TARGET_PROPERTY:mlbridge::mlbridge,INTERFACE_INCLUDE_DIRECTORIES>)
  endif()
  # TF 2.15's headers and objects: the C++11 string ABI, C++17.
  target_compile_definitions(${ARG_TARGET} PRIVATE _GLIBCXX_USE_CXX11_ABI=1)
  target_compile_features(${ARG_TARGET} PRIVATE cxx_std_17)
  set_target_properties(${ARG_TARGET} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(${ARG_TARGET} PRIVATE mlbridge_tfaot_xla_runtime m)
  if(ARG_MODULE)
    set_target_properties(${ARG_TARGET} PROPERTIES PREFIX "lib" C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
  endif()
endfunction()
