#include "test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace mlbridge {
namespace testing {

namespace {
constexpr int kTestIoMs = 5000;
}

TempChannel::TempChannel() {
  char templ[] = "/tmp/mlbridge-test-XXXXXX";
  const char* d = mkdtemp(templ);
  dir_ = d ? d : "";
  base_ = dir_ + "/chan";
  mkfifo((base_ + ".in").c_str(), 0600);
  mkfifo((base_ + ".out").c_str(), 0600);
}

TempChannel::~TempChannel() {
  unlink((base_ + ".in").c_str());
  unlink((base_ + ".out").c_str());
  rmdir(dir_.c_str());
}

FakeModel::FakeModel(std::string base) : base_(std::move(base)) {}

FakeModel::~FakeModel() {
  join();
  closeAll();
}

void FakeModel::open() {
  inFd_ = ::open((base_ + ".in").c_str(), O_RDWR | O_CLOEXEC);
  outFd_ = ::open((base_ + ".out").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

void FakeModel::closeIn() {
  if (inFd_ >= 0) ::close(inFd_);
  inFd_ = -1;
}

void FakeModel::closeAll() {
  closeIn();
  if (outFd_ >= 0) ::close(outFd_);
  outFd_ = -1;
}

std::string FakeModel::read(size_t n) {
  std::string s;
  char buf[65536];
  while (s.size() < n) {
    struct pollfd p = {outFd_, POLLIN, 0};
    if (poll(&p, 1, kTestIoMs) <= 0) return "";
    ssize_t r = ::read(outFd_, buf, std::min(sizeof buf, n - s.size()));
    if (r == 0) return "";
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return "";
    }
    s.append(buf, static_cast<size_t>(r));
  }
  return s;
}

std::string FakeModel::readLine() {
  std::string s;
  for (;;) {
    std::string c = read(1);
    if (c.empty()) return s;
    s += c;
    if (c == "\n") return s;
  }
}

std::string FakeModel::readFrame() {
  std::string h = read(4);
  if (h.size() != 4) return "";
  uint32_t len = 0;
  std::memcpy(&len, h.data(), 4);
  return read(len);
}

std::string FakeModel::readToEnd() {
  std::string s;
  char buf[65536];
  for (;;) {
    struct pollfd p = {outFd_, POLLIN, 0};
    if (poll(&p, 1, kTestIoMs) <= 0) return s;
    ssize_t r = ::read(outFd_, buf, sizeof buf);
    if (r == 0) return s;
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return s;
    }
    s.append(buf, static_cast<size_t>(r));
  }
}

void FakeModel::write(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t w = ::write(inFd_, bytes.data() + off, bytes.size() - off);
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

void FakeModel::writeFrame(const std::string& payload) { write(frame(payload)); }

void FakeModel::run(std::function<void(FakeModel&)> script) {
  thread_ = std::thread([this, script] { script(*this); });
}

void FakeModel::join() {
  if (thread_.joinable()) thread_.join();
}

std::string le64(int64_t v) {
  std::string s(8, '\0');
  std::memcpy(&s[0], &v, 8);
  return s;
}

std::string frame(const std::string& payload) {
  uint32_t len = static_cast<uint32_t>(payload.size());
  std::string s(4, '\0');
  std::memcpy(&s[0], &len, 4);
  return s + payload;
}

}  // namespace testing
}  // namespace mlbridge
