# The mlbridge LLVM pass plugin (libMLBridgeLLVM.so), built against the
# installed LLVM (Debian's llvm-19-dev; LLVM_DIR picks another, e.g. llvm-22).
if(NOT LLVM_DIR AND EXISTS /usr/lib/llvm-19/lib/cmake/llvm)
  set(LLVM_DIR /usr/lib/llvm-19/lib/cmake/llvm)
endif()
find_package(LLVM CONFIG QUIET)
if(NOT LLVM_FOUND)
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "llvm-plugin (llvm-19-dev not found)")
  return()
endif()
list(APPEND MLBRIDGE_ENABLED_COMPONENTS "llvm-plugin (LLVM ${LLVM_PACKAGE_VERSION})")

file(GLOB MLBRIDGE_LLVM_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cc)
add_library(MLBridgeLLVM MODULE ${MLBRIDGE_LLVM_SOURCES})
target_include_directories(MLBridgeLLVM SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
target_include_directories(MLBridgeLLVM PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_compile_definitions(MLBridgeLLVM PRIVATE ${LLVM_DEFINITIONS})
# Built the way LLVM is: no RTTI, no exceptions (mlbridge's headers allow both).
target_compile_options(MLBridgeLLVM PRIVATE -fno-rtti -fno-exceptions ${MLBRIDGE_WARNINGS})
# opt/clang already hold libLLVM; the plugin resolves LLVM symbols from them.
target_link_libraries(MLBridgeLLVM PRIVATE mlbridge)
set(MLBRIDGE_LLVM_PLUGIN $<TARGET_FILE:MLBridgeLLVM>)
set(MLBRIDGE_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})
