// Training direction: the compiler serves (GrpcTrainingServer), a trainer
// drives it. Here the trainer is a C++ stub; tests/python/rpc/test_grpc_training.py
// drives the same service from Python.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstring>
#include <map>
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
  grpc::Status outcome(uint64_t session, uint32_t waitMs, pb::GetOutcomeReply* rep) {
    grpc::ClientContext ctx;
    prep(ctx);
    pb::GetOutcomeRequest req;
    req.set_session(session);
    req.set_wait_ms(waitMs);
    return stub->GetOutcome(&ctx, req, rep);
  }
};

// The value of a one-element outcome tensor of type T (by name; fails the test if absent).
template <class T>
T outcomeValue(const pb::GetOutcomeReply& rep, const std::string& name) {
  for (const pb::Tensor& t : rep.outcome())
    if (t.name() == name) {
      EXPECT_EQ(t.data().size(), sizeof(T)) << name;
      T v{};
      if (t.data().size() == sizeof(T)) std::memcpy(&v, t.data().data(), sizeof(T));
      return v;
    }
  ADD_FAILURE() << "no outcome tensor " << name;
  return T{};
}

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
  pb::GetOutcomeReply orep;
  EXPECT_EQ(none.outcome(1, 0, &orep).error_code(), grpc::StatusCode::UNAUTHENTICATED);
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

// ---- episode outcomes (GetOutcome) --------------------------------------------

TEST(GrpcTrainingOutcome, ReportedAfterTheLastDecisionReadByTheTrainer) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  auto runner = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})},
                                  TrainingRunnerOptions{"unit", 10000});
  ASSERT_TRUE(runner.ok());
  const uint64_t sid = server.sessionId(**runner);
  ASSERT_NE(sid, 0u);
  Status reported;
  std::thread compiler([&] {
    ModelRunner& r = **runner;
    int64_t sum = 0;
    for (int i = 0; i < 3; ++i) {
      *r.getTensor<int64_t>(0) = i;
      StatusOr<int64_t> a = r.evaluate<int64_t>();
      if (a.ok()) sum += *a;
    }
    (void)r.finish();
    const TensorSpec rewardSpec = TensorSpec::create<double>("reward", {1});
    const TensorSpec sumSpec = TensorSpec::create<int64_t>("action_sum", {1});
    double reward = 0.25;
    reported = server.setOutcome(r, {TensorRef{&rewardSpec, &reward}, TensorRef{&sumSpec, &sum}});
  });
  Trainer t(server.target());
  bool checkedPending = false;
  for (;;) {
    pb::GetObservationReply rep;
    ASSERT_TRUE(t.next(sid, &rep).ok());
    if (rep.timeout()) continue;
    if (rep.session_ended()) break;
    if (!checkedPending) {
      // The compiler waits for this action: no outcome can be there yet.
      pb::GetOutcomeReply o;
      ASSERT_TRUE(t.outcome(sid, 0, &o).ok());
      EXPECT_FALSE(o.ready());
      EXPECT_FALSE(o.session_ended());
      EXPECT_EQ(o.outcome_size(), 0);
      // A bounded wait answers "not ready" when it passes, not an error.
      auto start = std::chrono::steady_clock::now();
      ASSERT_TRUE(t.outcome(sid, 200, &o).ok());
      EXPECT_FALSE(o.ready());
      EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
      checkedPending = true;
    }
    ASSERT_TRUE(t.act(sid, rep.observation().id(), firstFeature(rep) + 10).ok());
  }
  // The end is seen before or after the report: a wait covers both.
  pb::GetOutcomeReply o;
  ASSERT_TRUE(t.outcome(sid, 5000, &o).ok());
  compiler.join();
  ASSERT_TRUE(reported.ok()) << reported.toString();
  ASSERT_TRUE(o.ready());
  EXPECT_TRUE(o.session_ended());
  EXPECT_EQ(o.session(), sid);
  ASSERT_EQ(o.outcome_size(), 2);
  EXPECT_EQ(o.outcome(0).name(), "reward");
  EXPECT_EQ(o.outcome(0).dtype(), pb::FLOAT64);
  EXPECT_EQ(outcomeValue<double>(o, "reward"), 0.25);
  EXPECT_EQ(outcomeValue<int64_t>(o, "action_sum"), 10 + 11 + 12);
  // Read again: the outcome stays (until dropped by newer ones).
  pb::GetOutcomeReply again;
  ASSERT_TRUE(t.outcome(sid, 0, &again).ok());
  EXPECT_TRUE(again.ready());
  EXPECT_EQ(outcomeValue<int64_t>(again, "action_sum"), 33);
}

TEST(GrpcTrainingOutcome, UnknownSessionIsNotFound) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  Trainer t(server.target());
  pb::GetOutcomeReply o;
  grpc::Status s = t.outcome(12345, 0, &o);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_EQ(t.outcome(0, 100, &o).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(GrpcTrainingOutcome, SetOutcomeErrors) {
  GrpcTrainingServer server, other;
  auto runner = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})});
  auto foreign = other.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})});
  ASSERT_TRUE(runner.ok() && foreign.ok());
  const uint64_t sid = server.sessionId(**runner);
  ASSERT_NE(sid, 0u);
  EXPECT_EQ(server.sessionId(**foreign), 0u);
  const TensorSpec a = TensorSpec::create<double>("a", {1});
  const TensorSpec bad("", DType::kFloat64, {1});
  double v = 1.0;
  EXPECT_EQ(server.setOutcome(**foreign, {TensorRef{&a, &v}}).code(), StatusCode::kNotFound);
  EXPECT_EQ(server.setOutcome(sid + 1, {TensorRef{&a, &v}}).code(), StatusCode::kNotFound);
  EXPECT_EQ(server.setOutcome(sid, {TensorRef{&a, &v}, TensorRef{&a, &v}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server.setOutcome(sid, {TensorRef{nullptr, &v}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server.setOutcome(sid, {TensorRef{&a, nullptr}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server.setOutcome(sid, {TensorRef{&bad, &v}}).code(), StatusCode::kInvalidArgument);
  // None of the refused reports counted: the first valid one does, once.
  EXPECT_TRUE(server.setOutcome(sid, {TensorRef{&a, &v}}).ok());
  EXPECT_EQ(server.setOutcome(**runner, {TensorRef{&a, &v}}).code(), StatusCode::kFailedPrecondition);
  // An empty outcome is a valid report.
  auto second = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})});
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(server.setOutcome(**second, {}).ok());
}

TEST(GrpcTrainingOutcome, OnlyTheLastNAreKeptAndIdsOutliveRunners) {
  GrpcServerOptions so;
  so.maxOutcomes = 2;
  GrpcTrainingServer server(so);
  ASSERT_TRUE(server.start().ok());
  const TensorSpec spec = TensorSpec::create<int64_t>("k", {1});
  std::vector<uint64_t> ids;
  for (int64_t k = 0; k < 3; ++k) {
    uint64_t sid;
    {
      auto r = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})});
      ASSERT_TRUE(r.ok());
      sid = server.sessionId(**r);
      ASSERT_NE(sid, 0u);
    }  // the runner is gone; its session id still takes the outcome
    ASSERT_TRUE(server.setOutcome(sid, {TensorRef{&spec, &k}}).ok());
    ids.push_back(sid);
  }
  Trainer t(server.target());
  pb::GetOutcomeReply o;
  grpc::Status s = t.outcome(ids[0], 1000, &o);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("dropped"), std::string::npos) << s.error_message();
  for (int64_t k = 1; k < 3; ++k) {
    pb::GetOutcomeReply r;
    ASSERT_TRUE(t.outcome(ids[static_cast<size_t>(k)], 0, &r).ok());
    ASSERT_TRUE(r.ready());
    EXPECT_TRUE(r.session_ended());  // the runner's destructor finished it
    EXPECT_EQ(outcomeValue<int64_t>(r, "k"), k);
  }
  // A dropped session cannot report again.
  EXPECT_EQ(server.setOutcome(ids[0], {TensorRef{&spec, &ids[0]}}).code(), StatusCode::kFailedPrecondition);
}

TEST(GrpcTrainingOutcome, ManyCompilerThreadsReportWhileTheTrainerReads) {
  GrpcTrainingServer server;
  ASSERT_TRUE(server.start().ok());
  constexpr int kThreads = 8, kSteps = 10;
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
      int64_t sum = 0;
      for (int i = 0; i < kSteps; ++i) {
        *(*r)->getTensor<int64_t>(0) = t * 1000 + i;
        auto a = (*r)->evaluate<int64_t>();
        if (!a.ok()) ++wrong;
        else sum += *a;
      }
      (void)(*r)->finish();
      const TensorSpec spec = TensorSpec::create<int64_t>("action_sum", {1});
      if (!server.setOutcome(**r, {TensorRef{&spec, &sum}}).ok()) ++wrong;
    });
  Trainer tr(server.target());
  std::map<uint64_t, int64_t> threadOf;  // session -> compiler thread (x / 1000)
  int ended = 0, checked = 0;
  while (ended < kThreads) {
    pb::GetObservationReply rep;
    ASSERT_TRUE(tr.next(0, &rep).ok());
    if (rep.timeout()) continue;
    if (rep.session_ended()) {
      ++ended;
      ASSERT_EQ(threadOf.count(rep.session()), 1u);
      const int64_t t = threadOf[rep.session()];
      pb::GetOutcomeReply o;  // reported right after the end, by the compiler thread: the wait covers it
      grpc::Status s = tr.outcome(rep.session(), 5000, &o);
      ASSERT_TRUE(s.ok()) << s.error_message();
      ASSERT_TRUE(o.ready());
      // The actions were -x for x = t*1000 + i, i < kSteps.
      EXPECT_EQ(outcomeValue<int64_t>(o, "action_sum"), -(kSteps * t * 1000 + kSteps * (kSteps - 1) / 2));
      ++checked;
      continue;
    }
    threadOf[rep.session()] = firstFeature(rep) / 1000;
    ASSERT_TRUE(tr.act(rep.session(), rep.observation().id(), -firstFeature(rep)).ok());
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(checked, kThreads);
}

// A long training run holds bounded memory: once the trainer has taken an
// episode's end, only the last maxEndedSessions ended sessions are remembered.
TEST(GrpcTraining, OnlyTheLastEndedSessionsAreRemembered) {
  GrpcServerOptions so;
  so.maxEndedSessions = 2;
  GrpcTrainingServer server(so);
  ASSERT_TRUE(server.start().ok());
  Trainer t(server.target());
  std::vector<uint64_t> ids;
  for (int k = 0; k < 4; ++k) {
    auto r = server.makeRunner({TensorSpec::create<int64_t>("x", {1})}, {TensorSpec::create<int64_t>("action", {1})});
    ASSERT_TRUE(r.ok());
    ids.push_back(server.sessionId(**r));
    ASSERT_TRUE((*r)->finish().ok());
    pb::GetObservationReply end;
    ASSERT_TRUE(t.next(ids.back(), &end).ok());  // the trainer takes the end
    EXPECT_TRUE(end.session_ended());
  }
  pb::GetSessionRequest req;
  pb::GetSessionReply rep;
  for (size_t k = 0; k < ids.size(); ++k) {
    grpc::ClientContext c;
    t.prep(c);
    req.set_session(ids[k]);
    grpc::Status s = t.stub->GetSession(&c, req, &rep);
    if (k < 2) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << k;
      EXPECT_NE(s.error_message().find("forgotten"), std::string::npos) << s.error_message();
    } else {
      EXPECT_TRUE(s.ok()) << k << ": " << s.error_message();
      EXPECT_TRUE(rep.ended());
    }
  }
  const TensorSpec spec = TensorSpec::create<int64_t>("k", {1});
  int64_t v = 1;
  EXPECT_EQ(server.setOutcome(ids[0], {TensorRef{&spec, &v}}).code(), StatusCode::kNotFound);
  EXPECT_TRUE(server.setOutcome(ids[3], {TensorRef{&spec, &v}}).ok());
}
