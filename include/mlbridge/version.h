// Library version. The C++ API follows semantic versioning from 1.0; the wire
// protocol has its own version (kProtocolVersion in wire_format.h).
#ifndef MLBRIDGE_VERSION_H
#define MLBRIDGE_VERSION_H

#define MLBRIDGE_VERSION_MAJOR 0
#define MLBRIDGE_VERSION_MINOR 1
#define MLBRIDGE_VERSION_PATCH 0

namespace mlbridge {
// The version of the library actually linked (may differ from the header's).
const char* versionString();
}  // namespace mlbridge

#endif  // MLBRIDGE_VERSION_H
