#include "pipe/sys_util.h"

#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace mlbridge {
namespace pipe {

std::string errnoText(int err) {
  char buf[128];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* s = strerror_r(err, buf, sizeof buf);
  return s ? s : "unknown error";
}

std::string parentDir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status checkPrivate(const struct stat& st, const std::string& what, bool allowShared) {
  if (allowShared) return Status::OK();
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status(StatusCode::kPermissionDenied, what + " is not private (mode " + mode +
                                                     "); use a folder with mode 0700 owned by this user, "
                                                     "or set allowSharedFolder");
  }
  return Status::OK();
}

Status checkPrivateFolder(const std::string& dir, bool allowShared) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    return Status(StatusCode::kNotFound, "channel folder " + dir + ": " + errnoText(errno));
  if (!S_ISDIR(st.st_mode)) return invalidArgument("channel folder " + dir + " is not a directory");
  return checkPrivate(st, "channel folder " + dir, allowShared);
}

}  // namespace pipe
}  // namespace mlbridge
