// The shared-memory runner against a scripted model end (shm::Channel in the
// model role, on a thread or in a forked process) and against the Python
// ShmServer: the happy path in every format, and every failure path (no
// model, model killed mid-request, hang-up, silence, garbage, oversized and
// mistyped replies). Nothing here sleeps to synchronize.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "mlbridge/pipe_runner.h"
#include "mlbridge/shm_runner.h"
#include "shm/channel.h"
#include "shm/layout.h"
#include "test_util.h"
#include "wire/codec.h"

namespace mlbridge {
namespace {

using testing::le64;
using Clock = std::chrono::steady_clock;

constexpr int kIoMs = 5000;  // bound on the fake model's waits: a broken test fails, never hangs

// A thread that is always joined, even when an assertion returns early.
struct Thread : std::thread {
  using std::thread::thread;
  ~Thread() {
    if (joinable()) join();
  }
};

// A private folder for one channel; removed (with what is left in it) at the end.
struct TempDir {
  std::string dir, base;
  TempDir() {
    StatusOr<std::string> d = makePrivateChannelDir("/tmp");
    dir = d.ok() ? *d : "";
    base = dir + "/chan";
  }
  ~TempDir() {
    unlink((base + ".shm").c_str());
    rmdir(dir.c_str());
  }
};

// The model end of a channel with a few scripted moves.
struct Model {
  std::unique_ptr<shm::Channel> ch;
  explicit Model(const std::string& base, uint32_t ringBytes = 1 << 16, int spinUs = 50) {
    auto c = shm::Channel::create(base, ringBytes, spinUs);
    EXPECT_TRUE(c.ok()) << c.status().toString();
    if (c.ok()) ch = std::move(*c);
  }
  bool accept() { return ch->accept(pipe::Deadline(kIoMs)).ok(); }
  std::string read(size_t n) {
    std::string s(n, '\0');
    size_t got = 0;
    if (n && !ch->readAtLeast(&s[0], n, n, &got, pipe::Deadline(kIoMs), "test model").ok()) return "";
    return s;
  }
  std::string readLine() {
    std::string s;
    for (std::string c = read(1); !c.empty(); c = read(1)) {
      s += c;
      if (c == "\n") break;
    }
    return s;
  }
  std::string readFrame() {
    std::string h = read(4);
    if (h.size() != 4) return "";
    uint32_t len;
    std::memcpy(&len, h.data(), 4);
    return read(len);
  }
  bool write(const std::string& bytes) {
    iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
    return ch->write(&iov, 1, pipe::Deadline(kIoMs), "test model").ok();
  }
  // Bitstream: the header's two lines, then the first observation (21 bytes
  // for features()); true if all of it arrived.
  bool takeHeaderAndObservation() {
    return !readLine().empty() && !readLine().empty() && read(21).size() == 21;
  }
};

std::vector<TensorSpec> features() {
  return {TensorSpec::create<int64_t>("callee_users", {1}), TensorSpec::create<float>("weights", {3})};
}
TensorSpec advice() { return TensorSpec::create<int64_t>("inlining_decision", {1}); }

ShmOptions opts(const TempDir& d, WireFormat f = WireFormat::kBitstream, int timeoutMs = 3000) {
  ShmOptions o;
  o.base = d.base;
  o.format = f;
  o.timeoutMs = timeoutMs;
  o.connectTimeoutMs = 3000;
  return o;
}

std::string encodeReply(WireFormat f, int64_t id, const TensorSpec* spec, const void* data) {
  wire::OutputList out;
  auto codec = wire::makeCodec(f);
  TensorRef ref{spec, data};
  EXPECT_TRUE(codec->encodeReply(id, spec ? Span<const TensorRef>(&ref, 1) : Span<const TensorRef>(), out).ok());
  return out.flatten();
}

TEST(ShmRunner, BitstreamCarriesLlvmsStream) {
  TempDir d;
  Model model(d.base);
  std::string header, ctx, obs;
  Thread t([&] {
    ASSERT_TRUE(model.accept());
    header = model.readLine();
    ctx = model.readLine();
    for (int i = 0; i < 2; ++i) {
      obs += model.readLine();
      obs += model.read(8 + 12 + 1);
      model.write(le64(1 - i));
    }
  });
  auto r = ShmModelRunner::create(features(), {advice()}, opts(d));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_TRUE((*r)->setContext("").ok());
  *(*r)->getTensor<int64_t>(0) = 10;  // 0x0A inside tensor bytes
  float w[3] = {1.f, 2.f, 3.f};
  std::memcpy((*r)->getTensor<float>(1), w, sizeof w);
  StatusOr<int64_t> d1 = (*r)->evaluate<int64_t>();
  StatusOr<int64_t> d2 = (*r)->evaluate<int64_t>();
  t.join();
  ASSERT_TRUE(d1.ok()) << d1.status().toString();
  ASSERT_TRUE(d2.ok()) << d2.status().toString();
  EXPECT_EQ(*d1, 1);
  EXPECT_EQ(*d2, 0);
  EXPECT_EQ(header.substr(0, 13), "{\"features\":[");
  EXPECT_EQ(ctx, "{\"context\":\"\"}\n");
  std::string bytes = le64(10) + std::string(reinterpret_cast<char*>(w), 12) + "\n";
  EXPECT_EQ(obs, "{\"observation\":0}\n" + bytes + "{\"observation\":1}\n" + bytes);
}

class ShmFramed : public ::testing::TestWithParam<WireFormat> {};

TEST_P(ShmFramed, HappyPathRemoteErrorAndCleanEnd) {
  TempDir d;
  Model model(d.base);
  const WireFormat f = GetParam();
  TensorSpec adv = advice();
  std::string preamble, end;
  Thread t([&] {
    ASSERT_TRUE(model.accept());
    preamble = model.read(8);
    model.readFrame();  // header
    model.write(encodeReply(f, -1, nullptr, nullptr));
    model.readFrame();
    int64_t v = 42;
    model.write(encodeReply(f, 0, &adv, &v));
    model.readFrame();
    wire::OutputList out;
    ASSERT_TRUE(wire::makeCodec(f)->encodeReplyError(1, "ValueError: no", out).ok());
    model.write(out.flatten());
    end = model.readFrame();
  });
  auto r = ShmModelRunner::create(features(), {adv}, opts(d, f));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  StatusOr<int64_t> v = (*r)->evaluate<int64_t>();
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, 42);
  Status e = (*r)->evaluate();
  EXPECT_EQ(e.code(), StatusCode::kAborted) << e.toString();
  EXPECT_NE(e.message().find("ValueError: no"), std::string::npos);
  EXPECT_TRUE((*r)->finish().ok());
  t.join();
  EXPECT_EQ(preamble.substr(0, 4), "MLBR");
  EXPECT_FALSE(end.empty());  // the end message
}

TEST_P(ShmFramed, GarbageOversizedAndMistypedReplies) {
  const WireFormat f = GetParam();
  TensorSpec adv = advice();
  TensorSpec wrongType = TensorSpec::create<float>("inlining_decision", {1});
  TensorSpec wrongShape = TensorSpec::create<int64_t>("inlining_decision", {2});
  float fv = 1.f;
  int64_t two[2] = {1, 2};
  const std::string oversized = std::string("\xF0\xFF\xFF\x7F", 4);
  const std::vector<std::pair<std::string, StatusCode>> cases = {
      {testing::frame("\x01\x02garbage"), StatusCode::kDataLoss},
      {oversized, StatusCode::kResourceExhausted},
      {encodeReply(f, 0, &wrongType, &fv), StatusCode::kInvalidArgument},
      {encodeReply(f, 0, &wrongShape, two), StatusCode::kInvalidArgument},
  };
  for (const auto& c : cases) {
    TempDir d;
    Model model(d.base);
    Thread t([&] {
      ASSERT_TRUE(model.accept());
      model.read(8);
      model.readFrame();
      model.write(encodeReply(f, -1, nullptr, nullptr));
      model.readFrame();
      model.write(c.first);
    });
    ShmOptions o = opts(d, f);
    o.maxMessageBytes = 1 << 20;
    auto r = ShmModelRunner::create(features(), {adv}, o);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    Status s = (*r)->evaluate();
    t.join();
    EXPECT_FALSE(s.ok());
    if (c.second == StatusCode::kResourceExhausted) {
      EXPECT_EQ(s.code(), c.second) << s.toString();
    }
    // No silent wrong answer: a broken session stays broken.
    if (s.code() != StatusCode::kAborted) {
      EXPECT_EQ((*r)->evaluate().code(), StatusCode::kFailedPrecondition);
    }
  }
}

TEST_P(ShmFramed, RefusedHeaderNamesTheReason) {
  TempDir d;
  Model model(d.base);
  const WireFormat f = GetParam();
  Thread t([&] {
    ASSERT_TRUE(model.accept());
    model.read(8);
    model.readFrame();
    wire::OutputList out;
    ASSERT_TRUE(wire::makeCodec(f)->encodeReplyError(-1, "SpecMismatch: need feature x", out).ok());
    model.write(out.flatten());
  });
  auto r = ShmModelRunner::create(features(), {advice()}, opts(d, f));
  t.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("need feature x"), std::string::npos) << r.status().toString();
}

INSTANTIATE_TEST_SUITE_P(Formats, ShmFramed, ::testing::Values(WireFormat::kJson, WireFormat::kProtobuf),
                         [](const ::testing::TestParamInfo<WireFormat>& i) { return wireFormatName(i.param); });

TEST(ShmRunner, ModelNeverAppearsIsAnErrorWithinTheTimeout) {
  TempDir d;
  ShmOptions o = opts(d);
  o.connectTimeoutMs = 200;
  auto t0 = Clock::now();
  auto r = ShmModelRunner::create(features(), {advice()}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("is the model running"), std::string::npos) << r.status().message();
}

TEST(ShmRunner, ModelThatNeverAcceptsIsAnErrorWithinTheTimeout) {
  TempDir d;
  Model model(d.base);  // exists, but never accepts
  ShmOptions o = opts(d);
  o.connectTimeoutMs = 200;
  auto r = ShmModelRunner::create(features(), {advice()}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().toString();
}

TEST(ShmRunner, SilentModelTimesOut) {
  TempDir d;
  Model model(d.base);
  Thread t([&] {
    ASSERT_TRUE(model.accept());
    model.readLine();
  });
  auto r = ShmModelRunner::create(features(), {advice()}, opts(d, WireFormat::kBitstream, 200));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  t.join();
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.toString();
}

TEST(ShmRunner, ModelHangsUp) {
  TempDir d;
  Model model(d.base);
  Thread t([&] {
    ASSERT_TRUE(model.accept());
    ASSERT_TRUE(model.takeHeaderAndObservation());
    model.ch->end();  // bitstream cannot say why: it hangs up
  });
  auto r = ShmModelRunner::create(features(), {advice()}, opts(d));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  Status s = (*r)->evaluate();
  t.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.toString();
  EXPECT_NE(s.message().find("closed the channel"), std::string::npos) << s.toString();
  EXPECT_EQ((*r)->evaluate().code(), StatusCode::kFailedPrecondition);
}

TEST(ShmRunner, TooManyReplyBytesAreDetected) {
  TempDir d;
  Model model(d.base);
  Thread t([&] {
    ASSERT_TRUE(model.accept());
    ASSERT_TRUE(model.takeHeaderAndObservation());
    model.write(le64(1) + le64(2));
  });
  auto r = ShmModelRunner::create(features(), {advice()}, opts(d));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  Status s = (*r)->evaluate();
  t.join();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.toString();
}

// A model that scribbles over the control page (here: a reply tail far
// beyond the ring) is an error, never a read outside the ring.
TEST(ShmRunner, CorruptControlPageIsAnError) {
  TempDir d;
  Model model(d.base);
  Thread t([&] {
    ASSERT_TRUE(model.accept());
    ASSERT_TRUE(model.takeHeaderAndObservation());
    int fd = open((d.base + ".shm").c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    void* p = mmap(nullptr, shm::kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    uint32_t* tail = reinterpret_cast<uint32_t*>(static_cast<char*>(p) + shm::kRepTail);
    __atomic_store_n(tail, *tail + 0x80000000u, __ATOMIC_RELEASE);
    munmap(p, shm::kControlBytes);
    close(fd);
  });
  auto r = ShmModelRunner::create(features(), {advice()}, opts(d));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  Status s = (*r)->evaluate();
  t.join();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.toString();
  EXPECT_NE(s.message().find("inconsistent"), std::string::npos) << s.toString();
}

// The model process is SIGKILLed after it read the request and before it
// replied (and is not reaped yet: a zombie). The runner says so within the
// timeout instead of waiting forever.
TEST(ShmRunner, ModelKilledMidRequest) {
  TempDir d;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto c = shm::Channel::create(d.base, 1 << 16, 0);
    if (!c.ok() || !(*c)->accept(pipe::Deadline(kIoMs)).ok()) _exit(1);
    // The header, then the first observation's line and its 21 bytes.
    std::string seen;
    const std::string line = "{\"observation\":0}\n";
    for (;;) {
      char buf[512];
      size_t got = 0;
      if (!(*c)->readAtLeast(buf, 1, sizeof buf, &got, pipe::Deadline(kIoMs), "child").ok()) _exit(1);
      seen.append(buf, got);
      size_t at = seen.find(line);
      if (at != std::string::npos && seen.size() >= at + line.size() + 21) break;
    }
    raise(SIGKILL);
  }
  ShmOptions o = opts(d, WireFormat::kBitstream, 10000);
  auto r = ShmModelRunner::create(features(), {advice()}, o);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  auto t0 = Clock::now();
  Status s = (*r)->evaluate();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(9));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.toString();
  EXPECT_NE(s.message().find("died"), std::string::npos) << s.toString();
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
}

TEST(ShmRunner, OneCompilerAtATimeAndSessionsOneAfterAnother) {
  TempDir d;
  Model model(d.base);
  Thread t([&] {
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(model.accept());
      ASSERT_TRUE(model.takeHeaderAndObservation());
      model.write(le64(100 + i));
    }
  });
  {
    auto r1 = ShmModelRunner::create(features(), {advice()}, opts(d));
    ASSERT_TRUE(r1.ok()) << r1.status().toString();
    // A second compiler cannot claim the channel while the first holds it.
    ShmOptions o = opts(d);
    o.connectTimeoutMs = 100;
    auto r2 = ShmModelRunner::create(features(), {advice()}, o);
    ASSERT_FALSE(r2.ok());
    EXPECT_NE(r2.status().message().find("another compiler"), std::string::npos) << r2.status().toString();
    StatusOr<int64_t> v = (*r1)->evaluate<int64_t>();
    ASSERT_TRUE(v.ok()) << v.status().toString();
    EXPECT_EQ(*v, 100);
  }
  auto r3 = ShmModelRunner::create(features(), {advice()}, opts(d));
  ASSERT_TRUE(r3.ok()) << r3.status().toString();
  StatusOr<int64_t> v = (*r3)->evaluate<int64_t>();
  t.join();
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, 101);
}

TEST(ShmRunner, RefusesSharedFoldersAndBadOptions) {
  TempDir d;
  Model model(d.base);
  ASSERT_EQ(chmod(d.dir.c_str(), 0755), 0);
  auto r = ShmModelRunner::create(features(), {advice()}, opts(d));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().toString();
  chmod(d.dir.c_str(), 0700);
  ShmOptions o = opts(d);
  o.spinUs = -1;
  EXPECT_EQ(ShmModelRunner::create(features(), {advice()}, o).status().code(), StatusCode::kInvalidArgument);
  o = opts(d);
  o.base.clear();
  EXPECT_EQ(ShmModelRunner::create(features(), {advice()}, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ShmModelRunner::create({TensorSpec::create<std::string>("s", {1})}, {advice()}, opts(d)).status().code(),
            StatusCode::kUnimplemented);  // bitstream has no strings
}

// Two threads, one per end, many round trips with messages larger than the
// ring (so both sides wait for space and wrap around), with spinning and
// with futex-only waits. Run under ThreadSanitizer by the CI.
TEST(ShmRunner, ThreadsManyRoundTripsThroughASmallRing) {
  for (int spinUs : {0, 200}) {
    TempDir d;
    Model model(d.base, 4096, spinUs);
    const int64_t n = 5000;  // 20 KB of floats per observation, ring of 4 KB
    const int rounds = 200;
    Thread t([&] {
      ASSERT_TRUE(model.accept());
      model.read(8);
      model.readFrame();
      model.write(encodeReply(WireFormat::kProtobuf, -1, nullptr, nullptr));
      TensorSpec y = TensorSpec::create<float>("y", {1});
      for (int i = 0; i < rounds; ++i) {
        std::string frame = model.readFrame();
        ASSERT_GT(frame.size(), size_t(n * 4));
        // The last float of the observation, echoed back.
        float last;
        std::memcpy(&last, frame.data() + frame.size() - 4, 4);
        model.write(encodeReply(WireFormat::kProtobuf, i, &y, &last));
      }
      model.readFrame();  // end
    });
    ShmOptions o = opts(d, WireFormat::kProtobuf);
    o.spinUs = spinUs;
    auto r = ShmModelRunner::create({TensorSpec::create<float>("x", {n})}, {TensorSpec::create<float>("y", {1})}, o);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    for (int i = 0; i < rounds; ++i) {
      float* x = (*r)->getTensor<float>(0);
      for (int64_t k = 0; k < n; ++k) x[k] = static_cast<float>(i * 7 + k);
      StatusOr<float> v = (*r)->evaluate<float>();
      ASSERT_TRUE(v.ok()) << v.status().toString();
      ASSERT_EQ(*v, static_cast<float>(i * 7 + n - 1));
    }
    EXPECT_TRUE((*r)->finish().ok());
    t.join();
  }
}

// C++ compiler, Python model (mlbridge.ShmServer via bench_model), every format.
TEST(ShmRunner, PythonModelInEveryFormat) {
  if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 with numpy not found";
  TempDir d;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string path = std::string(MLBRIDGE_SOURCE_DIR) + "/python";
    setenv("PYTHONPATH", path.c_str(), 1);
    execlp("python3", "python3", "-m", "mlbridge.testing.bench_model", "--base", d.base.c_str(), "--model", "echo",
           "--transport", "shm", "--idle-timeout", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  for (WireFormat f : {WireFormat::kBitstream, WireFormat::kJson, WireFormat::kProtobuf}) {
    ShmOptions o = opts(d, f, 20000);
    o.connectTimeoutMs = 30000;  // Python and numpy start-up
    auto r = ShmModelRunner::create({TensorSpec::create<int64_t>("x", {2})}, {TensorSpec::create<int64_t>("y", {2})},
                                    o);
    ASSERT_TRUE(r.ok()) << wireFormatName(f) << ": " << r.status().toString();
    for (int64_t k = 0; k < 50; ++k) {
      int64_t* x = (*r)->getTensor<int64_t>(0);
      x[0] = k * 1000003;
      x[1] = -k;
      ASSERT_TRUE((*r)->evaluate().ok());
      Span<const int64_t> y = (*r)->output<int64_t>(0);
      ASSERT_EQ(y.size(), 2u);
      ASSERT_EQ(y[0], k * 1000003);
      ASSERT_EQ(y[1], -k);
    }
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace mlbridge
