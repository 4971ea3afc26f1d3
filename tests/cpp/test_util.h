// Test helpers: a private channel folder and a scripted fake model that opens
// the FIFOs the way the Python model side does, so the C++ runner can be
// driven through every failure path without Python.
#ifndef MLBRIDGE_TESTS_TEST_UTIL_H
#define MLBRIDGE_TESTS_TEST_UTIL_H

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace mlbridge {
namespace testing {

// A 0700 temporary folder with BASE.in / BASE.out FIFOs; removed at the end.
class TempChannel {
 public:
  TempChannel();
  ~TempChannel();
  const std::string& dir() const { return dir_; }
  const std::string& base() const { return base_; }

 private:
  std::string dir_, base_;
};

// The model side of a channel, run by a script on its own thread. Every read
// is bounded (5 s) so a broken test fails instead of hanging.
class FakeModel {
 public:
  explicit FakeModel(std::string base);
  ~FakeModel();  // joins the script thread, closes everything

  // Opens BASE.in read-write and BASE.out read-only (protocol.md).
  void open();
  void closeAll();
  void closeIn();
  // Reads exactly n bytes from BASE.out ("" on timeout or EOF).
  std::string read(size_t n);
  // Reads up to and including the next '\n'.
  std::string readLine();
  // Framed formats: the 8-byte preamble, and one frame's payload.
  std::string readPreamble() { return read(8); }
  std::string readFrame();
  // Reads until the compiler closes BASE.out; returns what came.
  std::string readToEnd();
  void write(const std::string& bytes);
  void writeFrame(const std::string& payload);

  // Runs `script` on a thread (after open()).
  void run(std::function<void(FakeModel&)> script);
  void join();

 private:
  std::string base_;
  int inFd_ = -1, outFd_ = -1;
  std::thread thread_;
};

std::string le64(int64_t v);
std::string frame(const std::string& payload);

}  // namespace testing
}  // namespace mlbridge

#endif  // MLBRIDGE_TESTS_TEST_UTIL_H
