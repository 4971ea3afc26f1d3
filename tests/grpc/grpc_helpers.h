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

namespace mlbtest {

inline void ensurePythonPath() {
  const char* old = std::getenv("PYTHONPATH");
  std::string src = std::string(MLBRIDGE_SOURCE_DIR) + "/python";
  if (!old || std::string(old).find(src) == std::string::npos)
    setenv("PYTHONPATH", (old && *old ? src + ":" + old : src).c_str(), 1);
}

// `python3 -m mlbridge.grpc_server ARGS`; waits for its ready line.
class PyServer {
 public:
  explicit PyServer(std::vector<std::string> args) {
    ensurePythonPath();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      std::vector<std::string> all = {"python3", "-m", "mlbridge.grpc_server"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    std::string line;
    pollfd p{fds[0], POLLIN, 0};
    while (line.find('\n') == std::string::npos && poll(&p, 1, 30000) > 0) {
      char buf[256];
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
    size_t at = line.find("\"port\": ");
    if (at != std::string::npos) port_ = std::atoi(line.c_str() + at + 8);
  }
  ~PyServer() { kill(SIGKILL); }
  PyServer(const PyServer&) = delete;
  PyServer& operator=(const PyServer&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void kill(int sig) {
    if (pid_ > 0) {
      ::kill(pid_, sig);
      int st;
      waitpid(pid_, &st, 0);
      pid_ = -1;
    }
  }
  // Waits for the process to exit on its own; true if it did within ms.
  bool waitExit(int ms) {
    for (int i = 0; i < ms / 10 && pid_ > 0; ++i) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return true;
      }
      usleep(10000);
    }
    return pid_ <= 0;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
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
