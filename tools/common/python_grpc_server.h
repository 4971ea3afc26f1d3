// `PYTHON -m mlbridge.testing.grpc_models ARGS` as a child process, for the gRPC tests
// and mlbridge-bench: started with stdin on /dev/null, its port read from the
// {"event": "ready", "port": N} line it prints, killed and reaped on
// destruction. Header-only; POSIX.
#ifndef MLBRIDGE_TOOLS_COMMON_PYTHON_GRPC_SERVER_H
#define MLBRIDGE_TOOLS_COMMON_PYTHON_GRPC_SERVER_H

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace mlbridge {
namespace tools {

class PythonGrpcServer {
 public:
  struct Options {
    std::string python = "python3";
    int cpu = -1;               // pin the server to this CPU (-1: any CPU, even if the parent is pinned)
    int readyTimeoutMs = 30000; // bound on waiting for the ready line
    // Run this instead (with `args` appended): another server that prints
    // the same ready line, e.g. the benchmark's C++ floor.
    std::vector<std::string> command;
  };

  PythonGrpcServer(const std::vector<std::string>& args, const Options& options) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int i = 0; i < CPU_SETSIZE; ++i)
        if (options.cpu < 0 || i == options.cpu) CPU_SET(i, &set);
      sched_setaffinity(0, sizeof set, &set);
      dup2(fds[1], 1);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      std::vector<std::string> all = options.command;
      if (all.empty()) all = {options.python, "-m", "mlbridge.testing.grpc_models"};
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
    while (line.find('\n') == std::string::npos && poll(&p, 1, options.readyTimeoutMs) > 0) {
      char buf[256];
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
    size_t at = line.find("\"port\": ");
    if (at != std::string::npos) port_ = std::atoi(line.c_str() + at + 8);
  }
  explicit PythonGrpcServer(const std::vector<std::string>& args) : PythonGrpcServer(args, Options()) {}
  ~PythonGrpcServer() { kill(SIGKILL); }
  PythonGrpcServer(const PythonGrpcServer&) = delete;
  PythonGrpcServer& operator=(const PythonGrpcServer&) = delete;

  // 0 if the server did not report ready in time.
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Sends `sig` and reaps the process.
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
      timespec tick{0, 10 * 1000 * 1000};
      nanosleep(&tick, nullptr);
    }
    return pid_ <= 0;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace tools
}  // namespace mlbridge

#endif  // MLBRIDGE_TOOLS_COMMON_PYTHON_GRPC_SERVER_H
