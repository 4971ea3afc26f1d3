// Small system helpers shared by the local channels (src/pipe, src/shm):
// errno text, the folder of a channel path, and the privacy checks on the
// folder and files a channel lives in.
#ifndef MLBRIDGE_SRC_PIPE_SYS_UTIL_H
#define MLBRIDGE_SRC_PIPE_SYS_UTIL_H

#include <sys/stat.h>

#include <string>

#include "mlbridge/status.h"

namespace mlbridge {
namespace pipe {

// strerror_r text for `err` (thread-safe).
std::string errnoText(int err);
// The folder part of `path`: "." without a slash, "/" for a top-level path.
std::string parentDir(const std::string& path);
// Anyone who can open a channel can read features or forge decisions: `st`
// (described by `what`, e.g. "channel folder X") must belong to this user
// and be closed to others, unless `allowShared`. kPermissionDenied if not.
Status checkPrivate(const struct stat& st, const std::string& what, bool allowShared);
// `dir` must exist, be a directory, and be private (as above).
Status checkPrivateFolder(const std::string& dir, bool allowShared);

}  // namespace pipe
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_PIPE_SYS_UTIL_H
