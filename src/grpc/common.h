// Internal helpers shared by the gRPC runner and the training server.
#ifndef MLBRIDGE_SRC_GRPC_COMMON_H
#define MLBRIDGE_SRC_GRPC_COMMON_H

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "mlbridge/span.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_ref.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/v1/mlbridge.pb.h"

namespace mlbridge {
namespace grpcimpl {

namespace pb = ::mlbridge::v1;

// Protocol (schema) version of the session handshake (docs/protocol.md).
constexpr uint32_t kSchemaVersion = 1;
constexpr const char* kAuthKey = "authorization";

Status fromGrpc(const grpc::Status& s, const std::string& what);
bool isLoopback(const std::string& address);
StatusOr<std::string> readFile(const std::string& path, const char* what);

void fillSpec(pb::TensorSpec* out, const TensorSpec& spec);
StatusOr<TensorSpec> specFromProto(const pb::TensorSpec& in, const char* what);
void fillHeader(pb::SessionHeader* out, const std::vector<TensorSpec>& features,
                const std::vector<TensorSpec>& advice);
// Name, dtype and shape of a reused tensor message (data set per call).
void prepareTensor(pb::Tensor* out, const TensorSpec& spec);
void setTensorData(pb::Tensor* out, const TensorRef& ref);
// Checks one received tensor against its spec and copies it into `out`.
Status readTensorInto(const pb::Tensor& in, const MutableTensorRef& out, const char* what);
// Tensors of a Reply into the outputs; error replies are kAborted.
Status readReply(const pb::Reply& reply, int64_t expectedId, Span<const MutableTensorRef> outputs,
                 const char* who);

// "Bearer TOKEN" check, constant time.
bool tokenMatches(const grpc::ServerContext& ctx, const std::string& expected);

}  // namespace grpcimpl
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_GRPC_COMMON_H
