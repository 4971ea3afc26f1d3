// The gRPC runner against the Python model server (python -m mlbridge.testing.grpc_models)
// and against fake C++ servers: results, failure behaviour, security.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <ifaddrs.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "grpc_helpers.h"
#include "mlbridge/grpc_runner.h"
#include "mlbridge/grpc_server.h"
#include "mlbridge/v1/service.grpc.pb.h"

using namespace mlbridge;
using mlbtest::PyServer;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<TensorSpec> features38() {
  std::vector<TensorSpec> f;
  for (int i = 0; i < 38; ++i) f.push_back(TensorSpec::create<int64_t>("f" + std::to_string(i), {1}));
  return f;
}

GrpcRunnerOptions fastFail(const std::string& address) {
  GrpcRunnerOptions o;
  o.address = address;
  o.deadlineMs = 5000;
  o.retry.maxAttempts = 4;
  o.retry.initialBackoffMs = 20;
  o.retry.maxBackoffMs = 100;
  o.retry.totalBudgetMs = 1000;
  return o;
}

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

TEST(GrpcRunner, ConstModelAnswers) {
  PyServer py({"--model", "const", "--value", "7"});
  ASSERT_GT(py.port(), 0);
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("decision", {1})},
                                   fastFail(py.address()));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_NE((*r)->sessionId(), 0u);
  for (int i = 0; i < 20; ++i) {
    *(*r)->getTensor<int64_t>(0) = i;
    StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
    ASSERT_TRUE(y.ok()) << y.status().toString();
    EXPECT_EQ(*y, 7);
  }
  EXPECT_TRUE((*r)->finish().ok());
}

TEST(GrpcRunner, EchoWithContextsAndStrings) {
  PyServer py({"--model", "echo"});
  ASSERT_GT(py.port(), 0);
  auto r = GrpcModelRunner::create({TensorSpec::create<float>("x", {2, 3}), TensorSpec("s", DType::kString, {2})},
                                   {TensorSpec::create<double>("y", {4})}, fastFail(py.address()));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (int ctx = 0; ctx < 3; ++ctx) {
    ASSERT_TRUE((*r)->setContext("function" + std::to_string(ctx)).ok());
    for (int k = 0; k < 5; ++k) {
      float* x = (*r)->getTensor<float>(0);
      for (int i = 0; i < 6; ++i) x[i] = static_cast<float>(ctx * 100 + k * 10 + i) + 0.5f;
      ASSERT_TRUE((*r)->setFeature("s", std::vector<std::string>{"a", "b"}).ok());
      ASSERT_TRUE((*r)->evaluate().ok());
      auto y = (*r)->outputVector<double>(0);
      ASSERT_TRUE(y.ok());
      for (int i = 0; i < 4; ++i) EXPECT_EQ((*y)[i], ctx * 100 + k * 10 + i + 0.5);
    }
  }
}

TEST(GrpcRunner, ManyThreadsShareOneChannel) {
  PyServer py({"--model", "echo", "--max-workers", "8"});
  ASSERT_GT(py.port(), 0);
  auto ch = GrpcChannel::create(fastFail(py.address()));
  ASSERT_TRUE(ch.ok());
  std::vector<std::thread> threads;
  std::vector<int> bad(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto r = GrpcModelRunner::create({TensorSpec::create<int64_t>("worker", {1})},
                                       {TensorSpec::create<int64_t>("y", {1})}, *ch);
      if (!r.ok()) {
        bad[t] = 1000;
        return;
      }
      for (int i = 0; i < 50; ++i) {
        *(*r)->getTensor<int64_t>(0) = t * 1000 + i;
        auto y = (*r)->evaluate<int64_t>();
        if (!y.ok() || *y != t * 1000 + i) ++bad[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

// ---- failure behaviour ------------------------------------------------------------
TEST(GrpcFaults, ServerNeverStarted) {
  auto t0 = Clock::now();
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})},
                                   fastFail("127.0.0.1:" + std::to_string(mlbtest::freePort())));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find("gave up after"), std::string::npos) << r.status().toString();
  EXPECT_LT(msSince(t0), 3000);
}

TEST(GrpcFaults, AttemptsAreBounded) {
  GrpcRunnerOptions o = fastFail("127.0.0.1:" + std::to_string(mlbtest::freePort()));
  o.retry.maxAttempts = 3;
  o.retry.totalBudgetMs = 60000;
  auto t0 = Clock::now();
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("after 3 attempts"), std::string::npos) << r.status().toString();
  EXPECT_LT(msSince(t0), 3000);
}

TEST(GrpcFaults, DefaultPolicyGivesUpWithin30s) {
  GrpcRetryPolicy p;
  // Worst case: every pause at its maximum, bounded by the total budget.
  EXPECT_LE(p.totalBudgetMs, 30000);
  EXPECT_GE(p.maxAttempts, 2);
  GrpcRunnerOptions o;
  EXPECT_GT(o.deadlineMs, 0);
}

TEST(GrpcFaults, ServerKilledMidEpisode) {
  PyServer py({"--model", "const", "--value", "3"});
  ASSERT_GT(py.port(), 0);
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, fastFail(py.address()));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_TRUE((*r)->evaluate<int64_t>().ok());
  py.kill(SIGKILL);
  auto t0 = Clock::now();
  StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kUnavailable) << y.status().toString();
  EXPECT_LT(msSince(t0), 3000);
  // Broken: later calls fail at once with the first error.
  StatusOr<int64_t> again = (*r)->evaluate<int64_t>();
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("UNAVAILABLE"), std::string::npos);
}

// Forwards TCP connections to `port` and holds the server's first bytes (its
// HTTP/2 SETTINGS) for `delayMs`: a model slow to answer a new connection.
class SlowHandshakeProxy {
 public:
  SlowHandshakeProxy(int port, int delayMs) : target_(port), delayMs_(delayMs) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listener_, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(listener_, 16) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~SlowHandshakeProxy() {
    ::shutdown(listener_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();  // no more pumps after this
    {
      std::lock_guard<std::mutex> l(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : threads_) t.join();
    for (int fd : fds_) close(fd);
    close(listener_);
  }
  int port() const { return port_; }

 private:
  void acceptLoop() {
    for (;;) {
      int c = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(target_));
      if (connect(u, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(c);
        close(u);
        continue;
      }
      std::lock_guard<std::mutex> l(mu_);
      fds_.push_back(c);
      fds_.push_back(u);
      threads_.emplace_back([c, u] { pump(c, u, 0); });
      threads_.emplace_back([this, c, u] { pump(u, c, delayMs_); });
    }
  }
  static void pump(int from, int to, int delayMs) {
    char buf[65536];
    for (;;) {
      ssize_t n = recv(from, buf, sizeof buf, 0);
      if (n <= 0) break;
      if (delayMs) {  // the slow model (not a synchronization)
        std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
        delayMs = 0;
      }
      if (send(to, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
    }
    ::shutdown(from, SHUT_RDWR);
    ::shutdown(to, SHUT_RDWR);
  }
  int target_, delayMs_;
  int listener_ = -1;
  int port_ = 0;
  std::mutex mu_;
  std::vector<int> fds_;
  std::thread acceptor_;
  std::vector<std::thread> threads_;  // the pumps, added by acceptor_
};

// gRPC's GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is its minimum connect timeout, not
// a backoff: set to our 20 ms initial backoff it gave each connection attempt
// about 100 ms, and a model whose HTTP/2 handshake took longer (a loaded
// machine) was abandoned on every attempt. The attempt now has the call's deadline.
TEST(GrpcFaults, ModelSlowToAnswerTheHandshakeIsStillReached) {
  PyServer py({"--model", "const", "--value", "7"});
  ASSERT_GT(py.port(), 0);
  SlowHandshakeProxy proxy(py.port(), 500);
  ASSERT_GT(proxy.port(), 0);
  GrpcRunnerOptions o = fastFail("127.0.0.1:" + std::to_string(proxy.port()));
  o.retry.totalBudgetMs = 5000;
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("decision", {1})}, o);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
  ASSERT_TRUE(y.ok()) << y.status().toString();
  EXPECT_EQ(*y, 7);
}

TEST(GrpcFaults, HandlerRaises) {
  PyServer py({"--model", "raise"});
  ASSERT_GT(py.port(), 0);
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, fastFail(py.address()));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  for (int i = 0; i < 2; ++i) {  // a model error leaves the session usable
    StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
    ASSERT_FALSE(y.ok());
    EXPECT_EQ(y.status().code(), StatusCode::kAborted);
    EXPECT_NE(y.status().message().find("ValueError: model failure on observation " + std::to_string(i)),
              std::string::npos)
        << y.status().toString();
  }
}

TEST(GrpcFaults, HandlerSleepsPastDeadline) {
  PyServer py({"--model", "sleep", "--sleep", "3"});
  ASSERT_GT(py.port(), 0);
  GrpcRunnerOptions o = fastFail(py.address());
  o.deadlineMs = 300;
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  auto t0 = Clock::now();
  StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kDeadlineExceeded) << y.status().toString();
  EXPECT_LT(msSince(t0), 2000);
}

TEST(GrpcFaults, PolicyAnswerOfWrongTypeIsAnError) {
  PyServer py({"--model", "wrong"});
  ASSERT_GT(py.port(), 0);
  auto r = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, fastFail(py.address()));
  ASSERT_TRUE(r.ok());
  StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kAborted);
  EXPECT_NE(y.status().message().find("SpecMismatch"), std::string::npos) << y.status().toString();
}

// A fake model server that answers with whatever reply the test sets.
class FakeModel final : public mlbridge::v1::ModelService::Service {
 public:
  mlbridge::v1::Reply reply;
  uint32_t version = 1;
  grpc::Status OpenSession(grpc::ServerContext*, const mlbridge::v1::OpenSessionRequest*,
                           mlbridge::v1::OpenSessionReply* rep) override {
    rep->set_session(42);
    rep->set_version(version);
    return grpc::Status::OK;
  }
  grpc::Status Evaluate(grpc::ServerContext*, const mlbridge::v1::EvaluateRequest* req,
                        mlbridge::v1::EvaluateReply* rep) override {
    *rep->mutable_reply() = reply;
    rep->mutable_reply()->set_id(req->observation().id());
    return grpc::Status::OK;
  }
};

struct FakeServer {
  FakeModel model;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  FakeServer() {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&model);
    server = b.BuildAndStart();
  }
  ~FakeServer() { server->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

TEST(GrpcFaults, WrongDtypeOrShapeInReply) {
  FakeServer fake;
  auto r = GrpcModelRunner::create({TensorSpec::create<float>("x", {1})}, {TensorSpec::create<int64_t>("d", {2})},
                                   fastFail(fake.address()));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  auto* t = fake.model.reply.add_tensors();
  t->set_name("d");
  t->set_dtype(mlbridge::v1::FLOAT32);  // wrong dtype
  t->add_shape(2);
  t->set_data(std::string(8, '\0'));
  StatusOr<std::vector<int64_t>> y = [&]() -> StatusOr<std::vector<int64_t>> {
    Status s = (*r)->evaluate();
    if (!s.ok()) return s;
    return (*r)->outputVector<int64_t>(0);
  }();
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("has type float, expected int64_t"), std::string::npos)
      << y.status().toString();
  t->set_dtype(mlbridge::v1::INT64);
  t->clear_shape();
  t->add_shape(3);  // wrong shape
  t->set_data(std::string(24, '\0'));
  Status s = (*r)->evaluate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has shape [3], expected [2]"), std::string::npos) << s.toString();
  t->clear_shape();
  t->add_shape(2);
  t->set_data(std::string(12, '\0'));  // wrong byte count
  s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.toString();
  fake.model.reply.clear_tensors();  // no tensors at all: never a default value
  s = (*r)->evaluate();
  EXPECT_FALSE(s.ok());
}

// A server that restarted: calls fail UNAVAILABLE for a while, then the new
// server does not know the session (NOT_FOUND) and cannot open one yet.
class RestartingModel final : public mlbridge::v1::ModelService::Service {
 public:
  std::atomic<int> opens{0}, evaluates{0};
  grpc::Status OpenSession(grpc::ServerContext*, const mlbridge::v1::OpenSessionRequest*,
                           mlbridge::v1::OpenSessionReply* rep) override {
    if (opens++ > 0) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
    rep->set_session(42);
    rep->set_version(1);
    return grpc::Status::OK;
  }
  grpc::Status Evaluate(grpc::ServerContext*, const mlbridge::v1::EvaluateRequest*,
                        mlbridge::v1::EvaluateReply*) override {
    if (evaluates++ < 2) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown session");
  }
};

// Found by the soak test (bench/soak.cc): reopening a session the server lost
// had a retry budget of its own, so one evaluate could take several times
// totalBudgetMs. The evaluate's phases now share one budget.
TEST(GrpcFaults, ReopenedSessionSharesTheCallsRetryBudget) {
  RestartingModel model;
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&model);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  GrpcRunnerOptions o = fastFail("127.0.0.1:" + std::to_string(port));
  o.streaming = false;
  o.retry.maxAttempts = 4;
  o.retry.initialBackoffMs = 1;
  o.retry.maxBackoffMs = 2;
  o.retry.totalBudgetMs = 60000;  // the attempts run out first
  auto r = GrpcModelRunner::create({TensorSpec::create<float>("x", {1})}, {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.toString();
  // Two UNAVAILABLE, one NOT_FOUND, then one OpenSession: four attempts in all.
  EXPECT_EQ(model.evaluates.load(), 3);
  EXPECT_EQ(model.opens.load() - 1, 1);
  server->Shutdown();
}

TEST(GrpcFaults, SchemaVersionMismatch) {
  FakeServer fake;
  fake.model.version = 2;
  auto r = GrpcModelRunner::create({TensorSpec::create<float>("x", {1})}, {TensorSpec::create<int64_t>("d", {1})},
                                   fastFail(fake.address()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("schema version mismatch"), std::string::npos);
}

TEST(GrpcFaults, ShutdownByRpc) {
  PyServer py({"--model", "const"});
  ASSERT_GT(py.port(), 0);
  auto ch = GrpcChannel::create(fastFail(py.address()));
  ASSERT_TRUE(ch.ok());
  ASSERT_TRUE((*ch)->shutdownServer("test").ok());
  EXPECT_TRUE(py.waitExit(10000));
}

// ---- security ---------------------------------------------------------------------
TEST(GrpcSecurity, TokenRequired) {
  PyServer py({"--model", "const", "--value", "5", "--token", "s3cret"});
  ASSERT_GT(py.port(), 0);
  GrpcRunnerOptions o = fastFail(py.address());
  auto none = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kPermissionDenied) << none.status().toString();
  o.token = "wrong";
  auto wrong = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kPermissionDenied);
  o.token = "s3cret";
  auto right = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_TRUE(right.ok()) << right.status().toString();
  StatusOr<int64_t> y = (*right)->evaluate<int64_t>();
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(*y, 5);
}

TEST(GrpcSecurity, TlsServerRefusesPlaintextAndAcceptsTls) {
  mlbtest::TempDir dir;
  if (!mlbtest::makeCerts(dir.path)) GTEST_SKIP() << "openssl could not make test certificates";
  PyServer py({"--model", "const", "--value", "9", "--tls-cert", dir.path + "/server.pem", "--tls-key",
               dir.path + "/server.key"});
  ASSERT_GT(py.port(), 0);
  GrpcRunnerOptions o = fastFail(py.address());
  auto plain = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), StatusCode::kUnavailable) << plain.status().toString();
  o.tls.enabled = true;
  o.tls.rootCaPath = dir.path + "/ca.pem";
  auto tls = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_TRUE(tls.ok()) << tls.status().toString();
  StatusOr<int64_t> y = (*tls)->evaluate<int64_t>();
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(*y, 9);
}

TEST(GrpcSecurity, MutualTls) {
  mlbtest::TempDir dir;
  if (!mlbtest::makeCerts(dir.path)) GTEST_SKIP() << "openssl could not make test certificates";
  PyServer py({"--model", "const", "--value", "4", "--tls-cert", dir.path + "/server.pem", "--tls-key",
               dir.path + "/server.key", "--tls-client-ca", dir.path + "/ca.pem"});
  ASSERT_GT(py.port(), 0);
  GrpcRunnerOptions o = fastFail(py.address());
  o.tls.enabled = true;
  o.tls.rootCaPath = dir.path + "/ca.pem";
  auto noCert = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  EXPECT_FALSE(noCert.ok());
  o.tls.certChainPath = dir.path + "/client.pem";
  o.tls.privateKeyPath = dir.path + "/client.key";
  auto withCert = GrpcModelRunner::create(features38(), {TensorSpec::create<int64_t>("d", {1})}, o);
  ASSERT_TRUE(withCert.ok()) << withCert.status().toString();
  EXPECT_TRUE((*withCert)->evaluate<int64_t>().ok());
}

TEST(GrpcSecurity, LoopbackByDefault) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  EXPECT_EQ(server.target().rfind("127.0.0.1:", 0), 0u) << server.target();
  // Not reachable through any non-loopback address of this machine.
  ifaddrs* ifs = nullptr;
  ASSERT_EQ(getifaddrs(&ifs), 0);
  int tried = 0;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    sockaddr_in a = *reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if ((ntohl(a.sin_addr.s_addr) >> 24) == 127) continue;
    a.sin_port = htons(static_cast<uint16_t>(server.port()));
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_NE(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << "reachable via " << i->ifa_name;
    close(s);
    ++tried;
  }
  freeifaddrs(ifs);
  if (!tried) GTEST_SKIP() << "no non-loopback IPv4 address to check";
}

TEST(GrpcSecurity, RemoteNeedsTlsOrToken) {
  GrpcServerOptions o;
  o.address = "0.0.0.0:0";
  GrpcTrainingServer server(o);
  Status s = server.start();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.toString();
}

TEST(GrpcSecurity, BusyPortFailsLoudly) {
  GrpcTrainingServer first;
  ASSERT_TRUE(first.start().ok());
  GrpcServerOptions o;
  o.address = "127.0.0.1:" + std::to_string(first.port());
  GrpcTrainingServer second(o);
  Status s = second.start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot listen"), std::string::npos) << s.toString();
  // The Python server refuses the busy port too.
  PyServer py({"--model", "const", "--address", o.address});
  EXPECT_EQ(py.port(), 0);
}
