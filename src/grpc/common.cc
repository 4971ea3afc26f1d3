#include "grpc/common.h"

#include <arpa/inet.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "wire/codec.h"

namespace mlbridge {
namespace grpcimpl {

Status fromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  int code = static_cast<int>(s.error_code());
  StatusCode mapped = code >= 0 && code <= 15 ? static_cast<StatusCode>(code) : StatusCode::kUnknown;
  if (code == grpc::StatusCode::UNAUTHENTICATED) mapped = StatusCode::kPermissionDenied;
  std::string msg = what + ": " + s.error_message();
  if (code == grpc::StatusCode::UNAUTHENTICATED) msg += " (UNAUTHENTICATED: check the token)";
  return Status(mapped, msg);
}

bool isLoopback(const std::string& address) {
  if (address.rfind("unix:", 0) == 0 || address.rfind("unix-abstract:", 0) == 0) return true;
  std::string host;
  if (!address.empty() && address[0] == '[') {
    size_t end = address.find(']');
    host = address.substr(1, end == std::string::npos ? std::string::npos : end - 1);
  } else {
    size_t colon = address.rfind(':');
    host = colon == std::string::npos ? address : address.substr(0, colon);
  }
  if (host == "localhost") return true;
  unsigned char buf[16];
  if (inet_pton(AF_INET, host.c_str(), buf) == 1) return buf[0] == 127;
  if (inet_pton(AF_INET6, host.c_str(), buf) == 1) {
    static const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return std::memcmp(buf, one, 16) == 0;
  }
  return false;
}

StatusOr<std::string> readFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, std::string("cannot read ") + what + " " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void fillSpec(pb::TensorSpec* out, const TensorSpec& spec) {
  out->set_name(spec.name());
  out->set_dtype(static_cast<pb::DType>(static_cast<int>(spec.type())));
  for (int64_t d : spec.shape()) out->add_shape(d);
  out->set_port(spec.port());
}

StatusOr<TensorSpec> specFromProto(const pb::TensorSpec& in, const char* what) {
  int dt = static_cast<int>(in.dtype());
  if (dt <= 0 || dt > static_cast<int>(DType::kString))
    return dataLoss(std::string(what) + " spec '" + in.name() + "' has unknown dtype " + std::to_string(dt));
  TensorSpec spec(in.name(), static_cast<DType>(dt), std::vector<int64_t>(in.shape().begin(), in.shape().end()),
                  in.port());
  MLBRIDGE_RETURN_IF_ERROR(spec.validate());
  return spec;
}

void fillHeader(pb::SessionHeader* out, const std::vector<TensorSpec>& features,
                const std::vector<TensorSpec>& advice) {
  out->set_version(kSchemaVersion);
  for (const TensorSpec& s : features) fillSpec(out->add_features(), s);
  for (const TensorSpec& s : advice) fillSpec(out->add_advice(), s);
}

void prepareTensor(pb::Tensor* out, const TensorSpec& spec) {
  out->set_name(spec.name());
  out->set_dtype(static_cast<pb::DType>(static_cast<int>(spec.type())));
  out->clear_shape();
  for (int64_t d : spec.shape()) out->add_shape(d);
}

void setTensorData(pb::Tensor* out, const TensorRef& ref) {
  const TensorSpec& spec = *ref.spec;
  if (spec.type() == DType::kString) {
    out->clear_string_data();
    const std::string* s = static_cast<const std::string*>(ref.data);
    for (size_t i = 0; i < spec.elementCount(); ++i) out->add_string_data(s[i]);
  } else {
    // assign() reuses the string's capacity: no allocation after the first call.
    out->mutable_data()->assign(static_cast<const char*>(ref.data), spec.byteSize());
  }
}

Status readTensorInto(const pb::Tensor& in, const MutableTensorRef& out, const char* what) {
  const TensorSpec& spec = *out.spec;
  int dt = static_cast<int>(in.dtype());
  if (dt <= 0 || dt > static_cast<int>(DType::kString))
    return invalidArgument(std::string(what) + " '" + in.name() + "' has unknown dtype " + std::to_string(dt));
  MLBRIDGE_RETURN_IF_ERROR(wire::checkTensorAgainstSpec(
      spec, in.name(), static_cast<DType>(dt), Span<const int64_t>(in.shape().data(), in.shape_size()), what));
  if (spec.type() == DType::kString) {
    if (static_cast<size_t>(in.string_data_size()) != spec.elementCount() || !in.data().empty())
      return dataLoss(std::string(what) + " '" + spec.name() + "' has " + std::to_string(in.string_data_size()) +
                      " strings, expected " + std::to_string(spec.elementCount()));
    std::string* dst = static_cast<std::string*>(out.data);
    for (size_t i = 0; i < spec.elementCount(); ++i) dst[i] = in.string_data(static_cast<int>(i));
    return Status::OK();
  }
  if (in.data().size() != spec.byteSize() || in.string_data_size() != 0)
    return dataLoss(std::string(what) + " '" + spec.name() + "' has " + std::to_string(in.data().size()) +
                    " data bytes, expected " + std::to_string(spec.byteSize()));
  if (spec.type() == DType::kBool) {
    for (char c : in.data())
      if (c != 0 && c != 1)
        return dataLoss(std::string(what) + " '" + spec.name() + "' holds a bool byte other than 0 or 1");
  }
  if (spec.byteSize()) std::memcpy(out.data, in.data().data(), spec.byteSize());
  return Status::OK();
}

Status readReply(const pb::Reply& reply, int64_t expectedId, Span<const MutableTensorRef> outputs,
                 const char* who) {
  if (!reply.error().empty())
    return Status(StatusCode::kAborted, std::string(who) + " reported an error for observation " +
                                            std::to_string(expectedId) + ": " + reply.error());
  if (reply.id() != expectedId)
    return dataLoss(std::string(who) + " answered observation " + std::to_string(reply.id()) + " to observation " +
                    std::to_string(expectedId));
  if (static_cast<size_t>(reply.tensors_size()) != outputs.size())
    return invalidArgument(std::string(who) + " sent " + std::to_string(reply.tensors_size()) +
                           " advice tensors, expected " + std::to_string(outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i)
    MLBRIDGE_RETURN_IF_ERROR(readTensorInto(reply.tensors(static_cast<int>(i)), outputs[i], "reply tensor"));
  return Status::OK();
}

bool tokenMatches(const grpc::ServerContext& ctx, const std::string& expected) {
  const auto& md = ctx.client_metadata();
  auto it = md.find(kAuthKey);
  if (it == md.end()) return false;
  const grpc::string_ref& got = it->second;
  if (got.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) diff |= static_cast<unsigned char>(got.data()[i] ^ expected[i]);
  return diff == 0;
}

}  // namespace grpcimpl
}  // namespace mlbridge
