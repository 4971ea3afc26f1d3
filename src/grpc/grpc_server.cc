#include "mlbridge/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>

#include "grpc/common.h"
#include "mlbridge/v1/service.grpc.pb.h"

namespace mlbridge {

namespace pb = ::mlbridge::v1;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

namespace {

struct Sess {
  uint64_t id = 0;
  std::string name;
  pb::SessionHeader header;
  std::string context;
  bool ended = false;        // the compiler finished the runner
  bool cancelled = false;    // the trainer ended the episode
  std::string cancelReason;
  bool pending = false;      // an observation waits for its action
  bool handedOut = false;    // ... and the trainer has it
  pb::Observation obs;
  bool haveAction = false;
  pb::Reply action;
  std::unique_ptr<pb::GetOutcomeReply> outcome;  // reported by setOutcome()
  bool outcomeDropped = false;                   // ... and dropped (only the last N are kept)
};

struct Event {
  uint64_t session;
  bool end;
};

}  // namespace

struct GrpcTrainingServer::Hub {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, std::shared_ptr<Sess>> sessions;
  std::deque<Event> events;
  std::unordered_map<const ModelRunner*, uint64_t> runners;  // live runners -> their session
  std::deque<uint64_t> outcomeOrder;                           // sessions holding an outcome, oldest first
  size_t maxOutcomes = 1024;
  std::deque<uint64_t> endedOrder;                             // ended sessions whose end was delivered
  size_t maxEndedSessions = 4096;
  bool stopped = false;
  bool shutdown = false;
  std::string shutdownReason;
  std::mt19937_64 rng{std::random_device{}()};

  uint64_t newId() {
    uint64_t id;
    do id = rng() >> 1;
    while (id == 0 || sessions.count(id));
    return id;
  }
  // The trainer took session `sid`'s end: remember it among the last
  // maxEndedSessions and forget the oldest beyond (a live runner keeps its own
  // reference; a forgotten id is then unknown to every call).
  void endDelivered(uint64_t sid) {
    endedOrder.push_back(sid);
    while (endedOrder.size() > maxEndedSessions) {
      sessions.erase(endedOrder.front());
      endedOrder.pop_front();
    }
  }
  void dropEvent(uint64_t sid) {
    for (auto it = events.begin(); it != events.end(); ++it)
      if (it->session == sid && !it->end) {
        events.erase(it);
        return;
      }
  }
};

namespace {

using Hub = GrpcTrainingServer::Hub;

// ---- the compiler side: a ModelRunner that asks the trainer -----------------
class TrainingRunner final : public ModelRunner {
 public:
  TrainingRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice, std::shared_ptr<Hub> hub,
                 TrainingRunnerOptions options)
      : ModelRunner(std::move(features), std::move(advice)), hub_(std::move(hub)), options_(std::move(options)) {}
  ~TrainingRunner() override {
    (void)finish();
    if (!sess_) return;
    std::lock_guard<std::mutex> lock(hub_->mu);
    hub_->runners.erase(static_cast<const ModelRunner*>(this));
  }

  Status init() {
    MLBRIDGE_RETURN_IF_ERROR(initBuffers());
    if (options_.timeoutMs <= 0) return invalidArgument("TrainingRunnerOptions.timeoutMs must be positive");
    auto s = std::make_shared<Sess>();
    grpcimpl::fillHeader(&s->header, inputSpecs(), outputSpecs());
    s->name = options_.name;
    for (const TensorSpec& spec : inputSpecs()) grpcimpl::prepareTensor(s->obs.add_tensors(), spec);
    std::lock_guard<std::mutex> lock(hub_->mu);
    s->id = hub_->newId();
    hub_->sessions[s->id] = s;
    hub_->runners[static_cast<const ModelRunner*>(this)] = s->id;
    sess_ = s;
    return Status::OK();
  }

 private:
  Status evaluateImpl() override {
    Sess& s = *sess_;
    std::unique_lock<std::mutex> lock(hub_->mu);
    if (hub_->stopped || hub_->shutdown) return unavailable("the training server stopped");
    if (s.cancelled) return Status(StatusCode::kCancelled, "the trainer ended the episode: " + s.cancelReason);
    int64_t id = nextId_++;
    s.obs.set_id(id);
    Span<const TensorRef> in = inputRefs();
    for (size_t i = 0; i < in.size(); ++i) grpcimpl::setTensorData(s.obs.mutable_tensors(static_cast<int>(i)), in[i]);
    s.pending = true;
    s.handedOut = false;
    s.haveAction = false;
    hub_->events.push_back(Event{s.id, false});
    hub_->cv.notify_all();
    Clock::time_point deadline = Clock::now() + Ms(options_.timeoutMs);
    bool done = hub_->cv.wait_until(lock, deadline, [&] {
      return s.haveAction || s.cancelled || hub_->stopped || hub_->shutdown;
    });
    s.pending = false;
    if (!s.handedOut) hub_->dropEvent(s.id);
    if (!s.haveAction) {
      if (s.cancelled) return Status(StatusCode::kCancelled, "the trainer ended the episode: " + s.cancelReason);
      if (hub_->stopped || hub_->shutdown) return unavailable("the training server stopped");
      (void)done;
      return deadlineExceeded("no action from the trainer within " + std::to_string(options_.timeoutMs) +
                              " ms (observation " + std::to_string(id) + ")");
    }
    s.haveAction = false;
    return grpcimpl::readReply(s.action, id, outputRefs(), "the trainer");
  }

  Status setContextImpl(std::string_view name) override {
    std::lock_guard<std::mutex> lock(hub_->mu);
    sess_->context.assign(name.data(), name.size());
    nextId_ = 0;
    return Status::OK();
  }

  Status finishImpl() override {
    if (!sess_) return Status::OK();
    std::lock_guard<std::mutex> lock(hub_->mu);
    if (!sess_->ended) {
      sess_->ended = true;
      hub_->events.push_back(Event{sess_->id, true});
      hub_->cv.notify_all();
    }
    return Status::OK();
  }

  std::shared_ptr<Hub> hub_;
  std::shared_ptr<Sess> sess_;
  TrainingRunnerOptions options_;
  int64_t nextId_ = 0;
};

// ---- the service the trainer calls -------------------------------------------
class EnvService final : public pb::EnvironmentService::Service {
 public:
  EnvService(std::shared_ptr<Hub> hub, std::string bearer, int maxWaitMs)
      : hub_(std::move(hub)), bearer_(std::move(bearer)), maxWaitMs_(maxWaitMs) {}

  grpc::Status Hello(grpc::ServerContext* ctx, const pb::HelloRequest* req, pb::HelloReply* rep) override {
    if (!authorized(ctx)) return unauth();
    rep->set_version(grpcimpl::kSchemaVersion);
    if (req->version() != grpcimpl::kSchemaVersion)
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "schema version mismatch: the trainer speaks mlbridge protocol " +
                              std::to_string(req->version()) + ", this compiler " +
                              std::to_string(grpcimpl::kSchemaVersion));
    return grpc::Status::OK;
  }

  grpc::Status GetSession(grpc::ServerContext* ctx, const pb::GetSessionRequest* req,
                          pb::GetSessionReply* rep) override {
    if (!authorized(ctx)) return unauth();
    std::lock_guard<std::mutex> lock(hub_->mu);
    auto it = hub_->sessions.find(req->session());
    if (it == hub_->sessions.end()) return unknown(req->session());
    rep->set_session(it->first);
    *rep->mutable_header() = it->second->header;
    rep->set_name(it->second->name);
    rep->set_ended(it->second->ended);
    return grpc::Status::OK;
  }

  grpc::Status GetObservation(grpc::ServerContext* ctx, const pb::GetObservationRequest* req,
                              pb::GetObservationReply* rep) override {
    if (!authorized(ctx)) return unauth();
    const uint64_t want = req->session();
    Clock::time_point limit = Clock::now() + Ms(maxWaitMs_);
    std::unique_lock<std::mutex> lock(hub_->mu);
    std::shared_ptr<Sess> wanted;
    if (want) {
      auto it = hub_->sessions.find(want);
      if (it == hub_->sessions.end()) return unknown(want);
      wanted = it->second;
    }
    for (;;) {
      if (hub_->stopped || hub_->shutdown)
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the training server is stopping");
      for (auto it = hub_->events.begin(); it != hub_->events.end();) {
        if (want && it->session != want) {
          ++it;
          continue;
        }
        Event ev = *it;
        it = hub_->events.erase(it);
        hub_->cv.notify_all();  // waitUntilDelivered()
        auto found = hub_->sessions.find(ev.session);
        if (found == hub_->sessions.end()) continue;  // a forgotten session's stray event
        std::shared_ptr<Sess> s = found->second;
        rep->set_session(ev.session);
        rep->set_context(s->context);
        if (ev.end) {
          rep->set_session_ended(true);
          hub_->endDelivered(ev.session);
        } else {
          s->handedOut = true;
          *rep->mutable_observation() = s->obs;
        }
        return grpc::Status::OK;
      }
      if (wanted && wanted->ended) {  // its end event was already taken
        rep->set_session(want);
        rep->set_session_ended(true);
        return grpc::Status::OK;
      }
      Clock::time_point now = Clock::now();
      if (now >= limit || ctx->IsCancelled()) {
        rep->set_timeout(true);
        return grpc::Status::OK;
      }
      // Wake at least every 100 ms to notice a cancelled call.
      hub_->cv.wait_until(lock, std::min(limit, now + Ms(100)));
    }
  }

  grpc::Status SendAction(grpc::ServerContext* ctx, const pb::SendActionRequest* req, pb::SendActionReply*) override {
    if (!authorized(ctx)) return unauth();
    std::lock_guard<std::mutex> lock(hub_->mu);
    auto it = hub_->sessions.find(req->session());
    if (it == hub_->sessions.end()) return unknown(req->session());
    Sess& s = *it->second;
    if (!s.pending || !s.handedOut || s.obs.id() != req->action().id())
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "session " + std::to_string(s.id) + " has no observation " +
                              std::to_string(req->action().id()) + " waiting for an action");
    s.action = req->action();
    s.haveAction = true;
    hub_->cv.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status EndEpisode(grpc::ServerContext* ctx, const pb::EndEpisodeRequest* req, pb::EndEpisodeReply*) override {
    if (!authorized(ctx)) return unauth();
    std::lock_guard<std::mutex> lock(hub_->mu);
    auto it = hub_->sessions.find(req->session());
    if (it == hub_->sessions.end()) return unknown(req->session());
    it->second->cancelled = true;
    it->second->cancelReason = req->reason().empty() ? "no reason given" : req->reason();
    hub_->cv.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status GetOutcome(grpc::ServerContext* ctx, const pb::GetOutcomeRequest* req,
                          pb::GetOutcomeReply* rep) override {
    if (!authorized(ctx)) return unauth();
    // Wait at most wait_ms, the server's bound, and (less a margin for the
    // reply) the call's own deadline, so the answer is "not ready", never a
    // deadline error.
    int64_t waitMs = std::min<int64_t>(req->wait_ms(), maxWaitMs_);
    auto left = std::chrono::duration_cast<Ms>(ctx->deadline() - std::chrono::system_clock::now());
    waitMs = std::max<int64_t>(0, std::min<int64_t>(waitMs, left.count() - 50));
    Clock::time_point limit = Clock::now() + Ms(waitMs);
    std::unique_lock<std::mutex> lock(hub_->mu);
    auto it = hub_->sessions.find(req->session());
    if (it == hub_->sessions.end()) return unknown(req->session());
    std::shared_ptr<Sess> s = it->second;
    rep->set_session(s->id);
    for (;;) {
      if (s->outcome) {
        rep->set_ready(true);
        rep->set_session_ended(s->ended);
        *rep->mutable_outcome() = s->outcome->outcome();
        return grpc::Status::OK;
      }
      if (s->outcomeDropped)
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            "the outcome of session " + std::to_string(s->id) +
                                " was dropped (the server keeps its last " + std::to_string(hub_->maxOutcomes) +
                                " outcomes)");
      Clock::time_point now = Clock::now();
      if (now >= limit || hub_->stopped || hub_->shutdown || ctx->IsCancelled()) {
        rep->set_ready(false);
        rep->set_session_ended(s->ended);
        return grpc::Status::OK;
      }
      // Wake at least every 100 ms to notice a cancelled call.
      hub_->cv.wait_until(lock, std::min(limit, now + Ms(100)));
    }
  }

  grpc::Status Shutdown(grpc::ServerContext* ctx, const pb::ShutdownRequest* req, pb::ShutdownReply*) override {
    if (!authorized(ctx)) return unauth();
    std::lock_guard<std::mutex> lock(hub_->mu);
    hub_->shutdown = true;
    hub_->shutdownReason = req->reason();
    hub_->cv.notify_all();
    return grpc::Status::OK;
  }

 private:
  bool authorized(grpc::ServerContext* ctx) const {
    return bearer_.empty() || grpcimpl::tokenMatches(*ctx, bearer_);
  }
  static grpc::Status unauth() {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong bearer token");
  }
  grpc::Status unknown(uint64_t sid) const {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown session " + std::to_string(sid) + " (never opened, or forgotten: the server "
                        "remembers its last " + std::to_string(hub_->maxEndedSessions) + " ended sessions)");
  }

  std::shared_ptr<Hub> hub_;
  std::string bearer_;
  int maxWaitMs_;
};

}  // namespace

struct GrpcTrainingServer::Impl {
  GrpcServerOptions options;
  std::shared_ptr<Hub> hub = std::make_shared<Hub>();
  std::unique_ptr<EnvService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

GrpcTrainingServer::GrpcTrainingServer(GrpcServerOptions options) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->hub->maxOutcomes = std::max<size_t>(1, impl_->options.maxOutcomes);
  impl_->hub->maxEndedSessions = std::max<size_t>(1, impl_->options.maxEndedSessions);
}

GrpcTrainingServer::~GrpcTrainingServer() { stop(); }

Status GrpcTrainingServer::start() {
  Impl& m = *impl_;
  const GrpcServerOptions& o = m.options;
  if (m.server) return failedPrecondition("GrpcTrainingServer::start: already started");
  {
    std::lock_guard<std::mutex> lock(m.hub->mu);
    if (m.hub->stopped) return failedPrecondition("GrpcTrainingServer::start: the server was stopped");
  }
  const bool tls = !o.tlsCertChainPath.empty() || !o.tlsPrivateKeyPath.empty();
  if (!grpcimpl::isLoopback(o.address) && !tls && o.token.empty() && !o.allowInsecureRemote)
    return Status(StatusCode::kPermissionDenied,
                  "refusing to listen on non-loopback address " + o.address +
                      " without TLS or a token (set tls*/token, or allowInsecureRemote)");
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (tls) {
    StatusOr<std::string> cert = grpcimpl::readFile(o.tlsCertChainPath, "TLS certificate");
    if (!cert.ok()) return cert.status();
    StatusOr<std::string> key = grpcimpl::readFile(o.tlsPrivateKeyPath, "TLS key");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    if (!o.tlsClientCaPath.empty()) {
      StatusOr<std::string> ca = grpcimpl::readFile(o.tlsClientCaPath, "TLS client CA");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  m.service.reset(new EnvService(m.hub, o.token.empty() ? "" : "Bearer " + o.token, std::max(1, o.maxWaitMs)));
  grpc::ServerBuilder builder;
  int selected = 0;
  builder.AddListeningPort(o.address, creds, &selected);
  builder.RegisterService(m.service.get());
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a busy port is an error, never shared
  int maxMsg = static_cast<int>(std::min<size_t>(o.maxMessageBytes, size_t(INT32_MAX)));
  builder.SetMaxReceiveMessageSize(maxMsg);
  builder.SetMaxSendMessageSize(maxMsg);
  m.server = builder.BuildAndStart();
  if (!m.server || selected == 0) {
    if (m.server) m.server->Shutdown();
    m.server.reset();
    m.service.reset();
    return unavailable("cannot listen on " + o.address + " (port already in use, or a bad address)");
  }
  m.port = selected;
  return Status::OK();
}

void GrpcTrainingServer::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.hub->mu);
    m.hub->stopped = true;
    m.hub->cv.notify_all();
  }
  if (m.server) {
    m.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    m.server->Wait();
    m.server.reset();
  }
  m.service.reset();
}

bool GrpcTrainingServer::running() const { return impl_->server != nullptr; }
int GrpcTrainingServer::port() const { return impl_->port; }

std::string GrpcTrainingServer::target() const {
  const std::string& a = impl_->options.address;
  size_t colon = a.rfind(':');
  std::string host = colon == std::string::npos ? a : a.substr(0, colon);
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "[::]") host = "[::1]";
  return host + ":" + std::to_string(impl_->port);
}

bool GrpcTrainingServer::waitForShutdown(int timeoutMs) {
  Hub& h = *impl_->hub;
  std::unique_lock<std::mutex> lock(h.mu);
  auto done = [&] { return h.shutdown || h.stopped; };
  if (timeoutMs < 0) {
    h.cv.wait(lock, done);
    return true;
  }
  return h.cv.wait_for(lock, Ms(timeoutMs), done);
}

bool GrpcTrainingServer::waitUntilDelivered(int timeoutMs) {
  Hub& h = *impl_->hub;
  std::unique_lock<std::mutex> lock(h.mu);
  auto done = [&] { return h.events.empty() || h.stopped || h.shutdown; };
  if (timeoutMs < 0) {
    h.cv.wait(lock, done);
    return h.events.empty();
  }
  return h.cv.wait_for(lock, Ms(timeoutMs), done) && h.events.empty();
}

bool GrpcTrainingServer::shutdownRequested() const {
  std::lock_guard<std::mutex> lock(impl_->hub->mu);
  return impl_->hub->shutdown;
}

StatusOr<std::unique_ptr<ModelRunner>> GrpcTrainingServer::makeRunner(std::vector<TensorSpec> features,
                                                                      std::vector<TensorSpec> advice,
                                                                      TrainingRunnerOptions options) {
  std::unique_ptr<TrainingRunner> r(
      new TrainingRunner(std::move(features), std::move(advice), impl_->hub, std::move(options)));
  MLBRIDGE_RETURN_IF_ERROR(r->init());
  return std::unique_ptr<ModelRunner>(std::move(r));
}

uint64_t GrpcTrainingServer::sessionId(const ModelRunner& runner) const {
  Hub& h = *impl_->hub;
  std::lock_guard<std::mutex> lock(h.mu);
  auto it = h.runners.find(&runner);
  return it == h.runners.end() ? 0 : it->second;
}

Status GrpcTrainingServer::setOutcome(const ModelRunner& runner, const std::vector<TensorRef>& outcome) {
  uint64_t id = sessionId(runner);
  if (id == 0)
    return Status(StatusCode::kNotFound, "setOutcome: the runner was not made by this server's makeRunner()");
  return setOutcome(id, outcome);
}

Status GrpcTrainingServer::setOutcome(uint64_t session, const std::vector<TensorRef>& outcome) {
  // Copy and check outside the lock.
  std::unique_ptr<pb::GetOutcomeReply> rec(new pb::GetOutcomeReply);
  std::set<std::string> names;
  for (const TensorRef& ref : outcome) {
    if (ref.spec == nullptr) return invalidArgument("setOutcome: a tensor without a spec");
    const TensorSpec& spec = *ref.spec;
    MLBRIDGE_RETURN_IF_ERROR(spec.validate());
    if (!names.insert(spec.name()).second)
      return invalidArgument("setOutcome: two outcome tensors are named '" + spec.name() + "'");
    if (ref.data == nullptr && spec.elementCount() != 0)
      return invalidArgument("setOutcome: outcome tensor '" + spec.name() + "' has no data");
    pb::Tensor* t = rec->add_outcome();
    grpcimpl::prepareTensor(t, spec);
    if (spec.elementCount() != 0) grpcimpl::setTensorData(t, ref);
  }
  if (rec->ByteSizeLong() > impl_->options.maxMessageBytes)
    return invalidArgument("setOutcome: the outcome (" + std::to_string(rec->ByteSizeLong()) +
                           " bytes) is larger than maxMessageBytes");
  Hub& h = *impl_->hub;
  std::lock_guard<std::mutex> lock(h.mu);
  auto it = h.sessions.find(session);
  if (it == h.sessions.end())
    return Status(StatusCode::kNotFound, "setOutcome: unknown session " + std::to_string(session));
  Sess& s = *it->second;
  if (s.outcome || s.outcomeDropped)
    return failedPrecondition("setOutcome: session " + std::to_string(session) + " already reported its outcome");
  s.outcome = std::move(rec);
  h.outcomeOrder.push_back(session);
  while (h.outcomeOrder.size() > h.maxOutcomes) {
    auto old = h.sessions.find(h.outcomeOrder.front());
    h.outcomeOrder.pop_front();
    if (old == h.sessions.end()) continue;
    old->second->outcome.reset();
    old->second->outcomeDropped = true;
  }
  h.cv.notify_all();
  return Status::OK();
}

}  // namespace mlbridge
