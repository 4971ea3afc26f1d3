// Training direction: the compiler serves (GrpcTrainingServer), a trainer
// drives it. Here the trainer is a C++ stub; tests/python/test_grpc_training.py
// drives the same service from Python.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <thread>

#include "mlbridge/grpc_server.h"
#include "mlbridge/v1/service.grpc.pb.h"

using namespace mlbridge;
namespace pb = mlbridge::v1;

namespace {

struct Trainer {
  std::unique_ptr<pb::EnvironmentService::Stub> stub;
  std::string token;
  explicit Trainer(const std::string& target, std::string tok = "") : token(std::move(tok)) {
    stub = pb::EnvironmentService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  }
  void prep(grpc::ClientContext& ctx) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  }
  grpc::Status next(uint64_t session, pb::GetObservationReply* rep) {
    grpc::ClientContext ctx;
    prep(ctx);
    pb::GetObservationRequest req;
    req.set_session(session);
    return stub->GetObservation(&ctx, req, rep);
  }
  grpc::Status act(uint64_t session, int64_t id, int64_t value) {
    grpc::ClientContext ctx;
    prep(ctx);
    pb::SendActionRequest req;
    req.set_session(session);
    req.mutable_action()->set_id(id);
    auto* t = req.mutable_action()->add_tensors();
    t->set_name("action");
    t->set_dtype(pb::INT64);
    t->add_shape(1);
    t->set_data(std::string(reinterpret_cast<const char*>(&value), 8));
    pb::SendActionReply rep;
    return stub->SendAction(&ctx, req, &rep);
  }
};

int64_t firstFeature(const pb::GetObservationReply& r) {
  int64_t v = 0;
  std::memcpy(&v, r.observation().tensors(0).data().data(), 8);
  return v;
}

}  // namespace

TEST(GrpcTraining, ConstructorNeverBlocksAndStartStop) {
  GrpcTrainingServer server;  // nothing happens until start()
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.port(), 0);
  ASSERT_TRUE(server.start().ok());
  EXPECT_GT(server.port(), 0);
  server.stop();
  server.stop();  // idempotent
  EXPECT_FALSE(server.running());
}

TEST(GrpcTraining, ObservationActionEpisode) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  auto runner = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})},
                                  TrainingRunnerOptions{"unit", 10000});
  ASSERT_TRUE(runner.ok());
  std::atomic<int> wrong{0};
  std::thread compiler([&] {
    ModelRunner& r = **runner;
    (void)r.setContext("main");
    for (int i = 0; i < 10; ++i) {
      *r.getTensor<int64_t>(0) = i;
      StatusOr<int64_t> a = r.evaluate<int64_t>();
      if (!a.ok() || *a != i * 2) ++wrong;
    }
    (void)r.finish();
  });
  Trainer t(server.target());
  int seen = 0;
  for (;;) {
    pb::GetObservationReply rep;
    grpc::Status s = t.next(0, &rep);
    ASSERT_TRUE(s.ok()) << s.error_message();
    if (rep.timeout()) continue;
    if (rep.session_ended()) break;
    EXPECT_EQ(rep.context(), "main");
    EXPECT_EQ(rep.observation().id(), seen);
    ASSERT_TRUE(t.act(rep.session(), rep.observation().id(), firstFeature(rep) * 2).ok());
    ++seen;
  }
  compiler.join();
  EXPECT_EQ(seen, 10);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(GrpcTraining, EndEpisodeCancelsTheCompiler) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  auto runner = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})});
  ASSERT_TRUE(runner.ok());
  Status result;
  std::thread compiler([&] { result = (*runner)->evaluate(); });
  Trainer t(server.target());
  pb::GetObservationReply rep;
  ASSERT_TRUE(t.next(0, &rep).ok());
  ASSERT_FALSE(rep.timeout());
  grpc::ClientContext ctx;
  t.prep(ctx);
  pb::EndEpisodeRequest req;
  req.set_session(rep.session());
  req.set_reason("enough");
  pb::EndEpisodeReply er;
  ASSERT_TRUE(t.stub->EndEpisode(&ctx, req, &er).ok());
  compiler.join();
  EXPECT_EQ(result.code(), StatusCode::kCancelled);
  EXPECT_NE(result.message().find("enough"), std::string::npos);
}

TEST(GrpcTraining, ShutdownRpcAndStopWakeTheCompiler) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  auto runner = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})});
  ASSERT_TRUE(runner.ok());
  Status result;
  std::thread compiler([&] { result = (*runner)->evaluate(); });
  Trainer t(server.target());
  grpc::ClientContext ctx;
  t.prep(ctx);
  pb::ShutdownReply sr;
  ASSERT_TRUE(t.stub->Shutdown(&ctx, pb::ShutdownRequest(), &sr).ok());
  EXPECT_TRUE(server.waitForShutdown(5000));
  EXPECT_TRUE(server.shutdownRequested());
  compiler.join();
  EXPECT_EQ(result.code(), StatusCode::kUnavailable);
  server.stop();
}

TEST(GrpcTraining, NoTrainerIsADeadline) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  auto runner = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})},
                                  TrainingRunnerOptions{"", 200});
  ASSERT_TRUE(runner.ok());
  EXPECT_EQ((*runner)->evaluate().code(), StatusCode::kDeadlineExceeded);
}

TEST(GrpcTraining, WrongActionIsAnError) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  auto runner = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<float>("action", {1})});
  ASSERT_TRUE(runner.ok());
  Status result;
  std::thread compiler([&] { result = (*runner)->evaluate(); });
  Trainer t(server.target());
  pb::GetObservationReply rep;
  ASSERT_TRUE(t.next(0, &rep).ok());
  EXPECT_FALSE(t.act(rep.session(), 99, 1).ok());  // no such observation
  ASSERT_TRUE(t.act(rep.session(), rep.observation().id(), 1).ok());  // int64 for a float action
  compiler.join();
  EXPECT_EQ(result.code(), StatusCode::kInvalidArgument) << result.toString();
}

TEST(GrpcTraining, TokenChecked) {
  GrpcServerOptions o;
  o.token = "tok";
  GrpcTrainingServer server(o);
  ASSERT_TRUE(server.start().ok());
  pb::GetObservationReply rep;
  Trainer bad(server.target(), "nope");
  EXPECT_EQ(bad.next(0, &rep).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  Trainer none(server.target());
  EXPECT_EQ(none.next(0, &rep).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST(GrpcTraining, ManyCompilerThreadsOneServer) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  constexpr int kThreads = 8, kSteps = 20;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto r = server.makeRunner({TensorSpec::create<int64_t>("x", {1})},
                                 {TensorSpec::create<int64_t>("action", {1})});
      if (!r.ok()) {
        wrong += 1000;
        return;
      }
      for (int i = 0; i < kSteps; ++i) {
        *(*r)->getTensor<int64_t>(0) = t * 1000 + i;
        auto a = (*r)->evaluate<int64_t>();
        if (!a.ok() || *a != -(t * 1000 + i)) ++wrong;
      }
      (void)(*r)->finish();
    });
  Trainer tr(server.target());
  int ended = 0, steps = 0;
  while (ended < kThreads) {
    pb::GetObservationReply rep;
    ASSERT_TRUE(tr.next(0, &rep).ok());
    if (rep.timeout()) continue;
    if (rep.session_ended()) {
      ++ended;
      continue;
    }
    ASSERT_TRUE(tr.act(rep.session(), rep.observation().id(), -firstFeature(rep)).ok());
    ++steps;
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(steps, kThreads * kSteps);
  EXPECT_EQ(wrong.load(), 0);
}
