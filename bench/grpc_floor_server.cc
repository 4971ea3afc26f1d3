// gRPC's own floor for mlbridge-bench --runner grpc: a C++ ModelService that
// answers every observation with zeros of the advice spec, prebuilt once per
// stream, and decodes nothing. It prints the same {"event": "ready", "port": N}
// line as `python -m mlbridge.testing.grpc_models`. Measured beside the Python
// servers, it splits a round trip into what gRPC costs between two C++
// processes and what grpcio's Python layer and mlbridge's handler add.
//
//   mlbridge-bench grpc-floor-server     (started by the benchmark itself)
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "grpc/common.h"
#include "mlbridge/v1/service.grpc.pb.h"

namespace {

namespace v1 = mlbridge::v1;
using mlbridge::StatusOr;
using mlbridge::TensorSpec;
namespace grpcimpl = mlbridge::grpcimpl;

constexpr size_t kMaxMessage = size_t{256} << 20;  // the Python servers' default limit

class FloorService final : public v1::ModelService::Service {
 public:
  grpc::Status OpenSession(grpc::ServerContext*, const v1::OpenSessionRequest* req,
                           v1::OpenSessionReply* reply) override {
    v1::Reply zeros;
    for (const v1::TensorSpec& s : req->header().advice()) {
      // The library's own reading of a spec (dtype known, shape valid and
      // within size_t): a zero reply of its byte size.
      StatusOr<TensorSpec> spec = grpcimpl::specFromProto(s, "advice");
      if (!spec.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, spec.status().toString());
      if (spec->byteSize() > kMaxMessage) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "advice too large");
      v1::Tensor* t = zeros.add_tensors();
      t->set_name(s.name());
      t->set_dtype(s.dtype());
      *t->mutable_shape() = s.shape();
      t->set_data(std::string(spec->byteSize(), '\0'));
    }
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t id = ++next_;
    sessions_[id] = zeros;
    reply->set_session(id);
    reply->set_version(req->header().version());
    return grpc::Status::OK;
  }

  grpc::Status EvaluateStream(grpc::ServerContext*,
                              grpc::ServerReaderWriter<v1::EvaluateReply, v1::EvaluateRequest>* stream) override {
    v1::EvaluateRequest req;
    v1::EvaluateReply answer, empty;
    empty.mutable_reply()->set_id(-1);  // the answer to a request without an observation
    uint64_t session = 0;
    while (stream->Read(&req)) {
      if (req.session() != session) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = sessions_.find(req.session());
        if (it == sessions_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown session");
        *answer.mutable_reply() = it->second;
        session = req.session();
      }
      v1::EvaluateReply& out = req.has_observation() ? answer : empty;
      if (req.has_observation()) answer.mutable_reply()->set_id(req.observation().id());
      if (!stream->Write(out)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status CloseSession(grpc::ServerContext*, const v1::CloseSessionRequest* req,
                            v1::CloseSessionReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(req->session());
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  uint64_t next_ = 0;
  std::map<uint64_t, v1::Reply> sessions_;
};

}  // namespace

int mlbridgeGrpcFloorServer() {
  FloorService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessage));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port <= 0) {
    std::fprintf(stderr, "mlbridge-bench grpc-floor-server: cannot listen on 127.0.0.1\n");
    return 1;
  }
  std::printf("{\"event\": \"ready\", \"port\": %d}\n", port);
  std::fflush(stdout);
  server->Wait();  // until the benchmark kills it
  return 0;
}
