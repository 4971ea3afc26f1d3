// Test helpers: a Python model server in a child process, temp dirs, certificates.
#ifndef MLBRIDGE_TESTS_GRPC_HELPERS_H
#define MLBRIDGE_TESTS_GRPC_HELPERS_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/python_grpc_server.h"

namespace mlbtest {

inline void ensurePythonPath() {
  const char* old = std::getenv("PYTHONPATH");
  std::string src = std::string(MLBRIDGE_SOURCE_DIR) + "/python";
  if (!old || std::string(old).find(src) == std::string::npos)
    setenv("PYTHONPATH", (old && *old ? src + ":" + old : src).c_str(), 1);
}

// `python3 -m mlbridge.testing.grpc_models ARGS` with the in-tree package; waits for its ready line.
class PyServer : public mlbridge::tools::PythonGrpcServer {
 public:
  explicit PyServer(std::vector<std::string> args) : PythonGrpcServer((ensurePythonPath(), args)) {}
};

// A port that was free a moment ago (bound to port 0, then closed).
inline int freePort() {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(s);
  return port;
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/mlbridge-grpc-test-XXXXXX";
    path = mkdtemp(t) ? t : "/tmp";
  }
  ~TempDir() { (void)!std::system(("rm -rf '" + path + "'").c_str()); }
};

// CA, server certificate (CN/SAN localhost, 127.0.0.1) and a client
// certificate, made with openssl at test time (no private keys committed).
inline bool makeCerts(const std::string& dir) {
  std::string d = "'" + dir + "'";
  std::string cmd =
      "cd " + d + " && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=mlbridge-test-ca && "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost && "
      "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 "
      "-extfile san.ext && "
      "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=client && "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1";
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace mlbtest

#endif  // MLBRIDGE_TESTS_GRPC_HELPERS_H
