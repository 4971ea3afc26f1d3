# Optional component `litert`: Google's LiteRT (TFLite) runtime, loaded at run
# time by LiteRtModelRunner (include/mlbridge/litert_runner.h, in the core
# library: it needs no header and links nothing). This file only finds
# libLiteRt.so for the tests (tests/tfaot, ctest label `tf`):
# MLBRIDGE_LITERT_LIBRARY, default .deps/litert/lib/libLiteRt.so
# (scripts/get-litert.sh).
set(MLBRIDGE_LITERT_LIBRARY "${PROJECT_SOURCE_DIR}/.deps/litert/lib/libLiteRt.so" CACHE FILEPATH
    "libLiteRt.so (ai-edge-litert 2.3.0) for the LiteRT runner's tests")
if(EXISTS "${MLBRIDGE_LITERT_LIBRARY}")
  list(APPEND MLBRIDGE_ENABLED_COMPONENTS "litert")
else()
  list(APPEND MLBRIDGE_DISABLED_COMPONENTS "litert (no ${MLBRIDGE_LITERT_LIBRARY}: bash scripts/get-litert.sh)")
endif()
