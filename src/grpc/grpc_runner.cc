#include "mlbridge/grpc_runner.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "grpc/common.h"
#include "mlbridge/v1/service.grpc.pb.h"

namespace mlbridge {

namespace pb = ::mlbridge::v1;
using grpcimpl::fromGrpc;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

struct GrpcChannel::Impl {
  GrpcRunnerOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::ModelService::Stub> stub;
  std::string bearer;
  std::string where;  // " (model server at ADDRESS)"

  int jittered(int backoffMs) {
    thread_local std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> d(backoffMs / 2, std::max(backoffMs, 1));
    return d(rng);
  }

  // What one call of the user (an evaluate, a create) may still spend on
  // attempts: shared by its phases (the stream, reopening a session the
  // server lost, the retried exchange), so the policy bounds the call, not
  // each phase.
  struct Budget {
    Clock::time_point end;
    int attemptsLeft;
    explicit Budget(const GrpcRetryPolicy& rp)
        : end(Clock::now() + Ms(rp.totalBudgetMs)), attemptsLeft(std::max(1, rp.maxAttempts)) {}
  };

  // Retries `attempt()` (one try, returning a grpc::Status) on UNAVAILABLE
  // with bounded exponential backoff and jitter. No attempt starts after the
  // budget ends, so a call ends within totalBudgetMs + deadlineMs.
  template <class F>
  Status retrying(const char* op, bool retry, F&& attempt, Budget* shared = nullptr) {
    const GrpcRetryPolicy& rp = options.retry;
    Budget local(rp);
    Budget& budget = shared ? *shared : local;
    Clock::time_point start = Clock::now();
    if (budget.attemptsLeft <= 0 || start >= budget.end)
      return unavailable(std::string(op) + where + ": the call's retry budget (" + std::to_string(rp.maxAttempts) +
                         " attempts, " + std::to_string(rp.totalBudgetMs) +
                         " ms) was spent before this step; is the model server restarting?");
    int backoff = std::max(1, rp.initialBackoffMs);
    int attempts = 0;
    for (;;) {
      grpc::Status s = attempt();
      ++attempts;
      --budget.attemptsLeft;
      if (s.ok()) return Status::OK();
      if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
        int pause = jittered(backoff);
        Clock::time_point now = Clock::now();
        if (retry && budget.attemptsLeft > 0 && now + Ms(pause) < budget.end) {
          std::this_thread::sleep_for(Ms(pause));
          backoff = std::min(backoff * 2, std::max(1, rp.maxBackoffMs));
          continue;
        }
        long long spent = std::chrono::duration_cast<Ms>(now - start).count();
        return unavailable(std::string(op) + where + ": " + s.error_message() + " (gave up after " +
                           std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") + " in " +
                           std::to_string(spent) + " ms; is the model server running?)");
      }
      if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
        return deadlineExceeded(std::string(op) + where + ": no answer within " +
                                std::to_string(options.deadlineMs) + " ms (deadline per call)");
      return fromGrpc(s, std::string(op) + where);
    }
  }

  // One unary RPC with the deadline, the token and the retry policy.
  template <class F>
  Status call(const char* op, bool retry, F&& f, Budget* shared = nullptr) {
    return retrying(
        op, retry,
        [&] {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + Ms(options.deadlineMs));
          if (!bearer.empty()) ctx.AddMetadata(grpcimpl::kAuthKey, bearer);
          return f(ctx);
        },
        shared);
  }
};

GrpcChannel::GrpcChannel() : impl_(new Impl) {}
GrpcChannel::~GrpcChannel() = default;
const GrpcRunnerOptions& GrpcChannel::options() const { return impl_->options; }

StatusOr<std::shared_ptr<GrpcChannel>> GrpcChannel::create(const GrpcRunnerOptions& options) {
  if (options.address.empty()) return invalidArgument("GrpcRunnerOptions.address is empty: name the model server");
  if (options.deadlineMs <= 0) return invalidArgument("GrpcRunnerOptions.deadlineMs must be positive");
  const GrpcRetryPolicy& rp = options.retry;
  if (rp.maxAttempts < 1 || rp.initialBackoffMs < 0 || rp.maxBackoffMs < 0 || rp.totalBudgetMs < 0)
    return invalidArgument("GrpcRetryPolicy: maxAttempts >= 1 and non-negative times required");
  std::shared_ptr<GrpcChannel> ch(new GrpcChannel());
  Impl& m = *ch->impl_;
  m.options = options;
  m.where = " (model server at " + options.address + ")";
  if (!options.token.empty()) m.bearer = "Bearer " + options.token;
  std::shared_ptr<grpc::ChannelCredentials> creds;
  grpc::ChannelArguments args;
  if (options.tls.enabled) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls.rootCaPath.empty()) {
      StatusOr<std::string> ca = grpcimpl::readFile(options.tls.rootCaPath, "TLS root CA");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
    }
    if (!options.tls.certChainPath.empty() || !options.tls.privateKeyPath.empty()) {
      StatusOr<std::string> cert = grpcimpl::readFile(options.tls.certChainPath, "TLS client certificate");
      if (!cert.ok()) return cert.status();
      StatusOr<std::string> key = grpcimpl::readFile(options.tls.privateKeyPath, "TLS client key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    creds = grpc::SslCredentials(ssl);
    if (!options.tls.serverNameOverride.empty()) args.SetSslTargetNameOverride(options.tls.serverNameOverride);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  int maxMsg = static_cast<int>(std::min<size_t>(options.maxMessageBytes, size_t(INT32_MAX)));
  args.SetMaxReceiveMessageSize(maxMsg);
  args.SetMaxSendMessageSize(maxMsg);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // our policy, not gRPC's
  // gRPC's own reconnect backoff (1 s .. 120 s by default) must not outlast ours.
  int initial = std::max(1, rp.initialBackoffMs);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, initial);
  // Despite its name this is gRPC's minimum connect timeout (MIN_CONNECT_TIMEOUT
  // in gRPC's connection-backoff.md; 20 s by default), not a backoff. At our
  // 50 ms initial backoff it gave each attempt about 100 ms: a model slow to
  // answer the HTTP/2 handshake (loaded machine) was abandoned again and
  // again. An attempt may take as long as a call may wait, up to 1 s: longer
  // attempts to models that die under them made gRPC 1.51 start more pool
  // threads (the soak's heap: +7.9 % in a minute with 2 s, +1.7-2.8 % with 1 s).
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, std::max(100, std::min(options.deadlineMs, 1000)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, std::max(initial, rp.maxBackoffMs));
  // Each runner has its own subchannel unless it shares this GrpcChannel.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  m.channel = grpc::CreateCustomChannel(options.address, creds, args);
  if (!m.channel) return unavailable("cannot create a gRPC channel to " + options.address);
  m.stub = pb::ModelService::NewStub(m.channel);
  return ch;
}

Status GrpcChannel::shutdownServer(const std::string& reason) {
  pb::ShutdownRequest req;
  req.set_reason(reason);
  pb::ShutdownReply rep;
  return impl_->call("Shutdown", true,
                     [&](grpc::ClientContext& ctx) { return impl_->stub->Shutdown(&ctx, req, &rep); });
}

// ---- one EvaluateStream call ------------------------------------------------------
// Its own completion queue, so every wait is bounded by the per-call deadline.
class EvalStream {
 public:
  EvalStream() = default;
  EvalStream(const EvalStream&) = delete;
  EvalStream& operator=(const EvalStream&) = delete;
  ~EvalStream() {
    if (rw_ && !finished_) {
      ctx_.TryCancel();
      drain();
      rw_->Finish(&status_, tag(kFinish));
      ++outstanding_;
    }
    cq_.Shutdown();
    void* t;
    bool ok;
    while (cq_.Next(&t, &ok)) {
    }
  }

  bool dead() const { return finished_; }

  // Clean end: half-close and wait for the server's status (bounded); the
  // server then knows the compiler did not die.
  void close(int deadlineMs) {
    if (!rw_ || finished_) return;
    rw_->WritesDone(tag(kWrite));
    ++outstanding_;
    bool ok = false;
    if (!waitAll(deadlineMs, &ok)) {
      (void)timedOut();
      return;
    }
    rw_->Finish(&status_, tag(kFinish));
    ++outstanding_;
    if (!waitAll(deadlineMs, &ok)) {
      ctx_.TryCancel();
      drain();
    }
    finished_ = true;
  }

  grpc::Status start(pb::ModelService::Stub* stub, const std::string& bearer, int deadlineMs) {
    if (!bearer.empty()) ctx_.AddMetadata(grpcimpl::kAuthKey, bearer);
    rw_ = stub->PrepareAsyncEvaluateStream(&ctx_, &cq_);
    rw_->StartCall(tag(kStart));
    ++outstanding_;
    bool ok = false;
    if (!waitAll(deadlineMs, &ok)) return timedOut();
    if (!ok) return finish();
    return grpc::Status::OK;
  }

  // One request, one reply.
  grpc::Status exchange(const pb::EvaluateRequest& req, pb::EvaluateReply* rep, int deadlineMs) {
    rw_->Write(req, tag(kWrite));
    rw_->Read(rep, tag(kRead));
    outstanding_ += 2;
    bool ok = false;
    if (!waitAll(deadlineMs, &ok)) return timedOut();
    if (!ok) return finish();
    return grpc::Status::OK;
  }

 private:
  enum Tag : intptr_t { kStart = 1, kWrite, kRead, kFinish };
  static void* tag(Tag t) { return reinterpret_cast<void*>(static_cast<intptr_t>(t)); }

  // Waits for every outstanding operation; false on the deadline. `allOk`:
  // every one succeeded.
  bool waitAll(int deadlineMs, bool* allOk) {
    *allOk = true;
    auto deadline = std::chrono::system_clock::now() + Ms(deadlineMs);
    while (outstanding_ > 0) {
      void* t;
      bool ok = false;
      grpc::CompletionQueue::NextStatus st = cq_.AsyncNext(&t, &ok, deadline);
      if (st == grpc::CompletionQueue::TIMEOUT) return false;
      if (st == grpc::CompletionQueue::SHUTDOWN) {
        *allOk = false;
        outstanding_ = 0;
        return true;
      }
      --outstanding_;
      if (!ok) *allOk = false;
    }
    return true;
  }
  void drain() {
    while (outstanding_ > 0) {
      void* t;
      bool ok;
      if (!cq_.Next(&t, &ok)) break;
      --outstanding_;
    }
  }
  // After a failed operation: the call's status (why the stream broke).
  grpc::Status finish() {
    drain();
    rw_->Finish(&status_, tag(kFinish));
    ++outstanding_;
    drain();
    finished_ = true;
    if (status_.ok()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the model server ended the stream");
    return status_;
  }
  grpc::Status timedOut() {
    ctx_.TryCancel();
    (void)finish();
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded");
  }

  grpc::ClientContext ctx_;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<pb::EvaluateRequest, pb::EvaluateReply>> rw_;
  grpc::Status status_;
  int outstanding_ = 0;
  bool finished_ = false;
};

// ---- the runner -----------------------------------------------------------------
struct GrpcModelRunner::Impl {
  std::unique_ptr<EvalStream> stream;
  bool noStream = false;
  pb::EvaluateRequest req;   // reused: names, dtypes and shapes are set once
  pb::EvaluateReply reply;
  std::string context;
  bool contextPending = false;
  int64_t nextId = 0;
  Status broken;             // first transport error; later calls report it
  bool open = false;
  GrpcChannel::Impl::Budget* budget = nullptr;  // the evaluate in progress: open() spends from its budget
};

GrpcModelRunner::GrpcModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice,
                                 std::shared_ptr<GrpcChannel> channel)
    : ModelRunner(std::move(features), std::move(advice)), impl_(new Impl), channel_(std::move(channel)) {}

GrpcModelRunner::~GrpcModelRunner() { (void)finish(); }

StatusOr<std::unique_ptr<GrpcModelRunner>> GrpcModelRunner::create(std::vector<TensorSpec> features,
                                                                   std::vector<TensorSpec> advice,
                                                                   const GrpcRunnerOptions& options) {
  StatusOr<std::shared_ptr<GrpcChannel>> ch = GrpcChannel::create(options);
  if (!ch.ok()) return ch.status();
  return create(std::move(features), std::move(advice), *ch);
}

StatusOr<std::unique_ptr<GrpcModelRunner>> GrpcModelRunner::create(std::vector<TensorSpec> features,
                                                                   std::vector<TensorSpec> advice,
                                                                   std::shared_ptr<GrpcChannel> channel) {
  if (!channel) return invalidArgument("GrpcModelRunner::create: no channel");
  std::unique_ptr<GrpcModelRunner> r(new GrpcModelRunner(std::move(features), std::move(advice), std::move(channel)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  pb::Observation* obs = r->impl_->req.mutable_observation();
  for (const TensorSpec& s : r->inputSpecs()) grpcimpl::prepareTensor(obs->add_tensors(), s);
  MLBRIDGE_RETURN_IF_ERROR(r->open());
  return r;
}

Status GrpcModelRunner::open() {
  GrpcChannel::Impl& ch = channel_->impl();
  pb::OpenSessionRequest req;
  grpcimpl::fillHeader(req.mutable_header(), inputSpecs(), outputSpecs());
  req.set_client(ch.options.clientName);
  pb::OpenSessionReply rep;
  Status s = ch.call(
      "OpenSession", true, [&](grpc::ClientContext& ctx) { return ch.stub->OpenSession(&ctx, req, &rep); },
      impl_->budget);
  if (!s.ok()) return s;
  if (rep.version() != grpcimpl::kSchemaVersion)
    return failedPrecondition("schema version mismatch: the model server speaks mlbridge protocol " +
                              std::to_string(rep.version()) + ", this compiler " +
                              std::to_string(grpcimpl::kSchemaVersion));
  session_ = rep.session();
  impl_->req.set_session(session_);
  impl_->open = true;
  return Status::OK();
}

Status GrpcModelRunner::evaluateImpl() {
  Impl& m = *impl_;
  if (!m.broken.ok()) return failedPrecondition("the session is broken by an earlier error: " + m.broken.toString());
  GrpcChannel::Impl& ch = channel_->impl();
  int64_t id = m.nextId++;
  pb::Observation* obs = m.req.mutable_observation();
  obs->set_id(id);
  Span<const TensorRef> in = inputRefs();
  for (size_t i = 0; i < in.size(); ++i) grpcimpl::setTensorData(obs->mutable_tensors(static_cast<int>(i)), in[i]);
  Status s;
  // One retry budget for the whole evaluate, a reopened session included.
  GrpcChannel::Impl::Budget budget(ch.options.retry);
  for (int round = 0; round < 2; ++round) {
    if (m.contextPending) m.req.mutable_context()->set_name(m.context);
    else m.req.clear_context();
    if (ch.options.streaming && !m.noStream) {
      s = ch.retrying("Evaluate", true, [&] {
        if (!m.stream || m.stream->dead()) {
          m.stream.reset(new EvalStream);
          grpc::Status st = m.stream->start(ch.stub.get(), ch.bearer, ch.options.deadlineMs);
          if (!st.ok()) {
            m.stream.reset();
            return st;
          }
        }
        grpc::Status st = m.stream->exchange(m.req, &m.reply, ch.options.deadlineMs);
        if (!st.ok()) m.stream.reset();
        return st;
      }, &budget);
      // A server without EvaluateStream (a hand-written ModelService): unary calls.
      if (s.code() == StatusCode::kUnimplemented) {
        m.noStream = true;
        --round;
        continue;
      }
    } else {
      s = ch.call(
          "Evaluate", true, [&](grpc::ClientContext& ctx) { return ch.stub->Evaluate(&ctx, m.req, &m.reply); },
          &budget);
    }
    // The server lost the session (it restarted): open a new one, once.
    if (s.code() != StatusCode::kNotFound || round == 1) break;
    m.budget = &budget;
    Status reopened = open();
    m.budget = nullptr;
    if (!reopened.ok()) {
      s = reopened;
      break;
    }
    m.contextPending = !m.context.empty();
  }
  if (!s.ok()) {
    if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded ||
        s.code() == StatusCode::kPermissionDenied || s.code() == StatusCode::kNotFound)
      m.broken = s;
    return s;
  }
  m.contextPending = false;
  return grpcimpl::readReply(m.reply.reply(), id, outputRefs(), "the model");
}

Status GrpcModelRunner::setContextImpl(std::string_view name) {
  Impl& m = *impl_;
  if (!m.broken.ok()) return failedPrecondition("the session is broken by an earlier error: " + m.broken.toString());
  // Sent with the next observation: no extra round trip.
  m.context.assign(name.data(), name.size());
  m.contextPending = true;
  m.nextId = 0;
  return Status::OK();
}

Status GrpcModelRunner::finishImpl() {
  Impl& m = *impl_;
  GrpcChannel::Impl& ch = channel_->impl();
  if (m.stream) m.stream->close(std::min(ch.options.deadlineMs, 1000));
  m.stream.reset();
  if (!m.open || !m.broken.ok()) return Status::OK();
  m.open = false;
  pb::CloseSessionRequest req;
  req.set_session(session_);
  pb::CloseSessionReply rep;
  Status s = ch.call("CloseSession", false,
                     [&](grpc::ClientContext& ctx) { return ch.stub->CloseSession(&ctx, req, &rep); });
  return s;
}

}  // namespace mlbridge
