// The framed protobuf format: mlbridge.v1.Message written and read by hand,
// byte for byte what protobuf's own serializer produces (fields in number
// order, proto3 defaults omitted, packed shapes), so the core needs no
// libprotobuf. Field numbers: proto/mlbridge/v1/mlbridge.proto.
#include <cstring>
#include <string>

#include "json/utf8.h"
#include "wire/codec.h"
#include "wire/framing.h"
#include "wire/protobuf_wire.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor bytes are sent as they are in memory: mlbridge needs a little-endian host"
#endif

namespace mlbridge {
namespace wire {
namespace {

using pb::Reader;
using pb::WireType;

constexpr char kFormatByte = 'P';
// Tensors up to this size are copied next to their header: cheaper than one
// more iovec (LLVM's inliner sends dozens of 8-byte scalars). Larger ones are
// referenced in place, zero copy.
constexpr size_t kInlineDataBytes = 64;
// More dimensions than this is not a tensor anyone sends: refused.
constexpr size_t kMaxDims = 64;

// Field numbers.
namespace f {
constexpr uint32_t kMsgHeader = 1, kMsgContext = 2, kMsgObservation = 3, kMsgReply = 4, kMsgEnd = 5;
constexpr uint32_t kHdrVersion = 1, kHdrFeatures = 2, kHdrAdvice = 3;
constexpr uint32_t kSpecName = 1, kSpecDType = 2, kSpecShape = 3, kSpecPort = 4;
constexpr uint32_t kTenName = 1, kTenDType = 2, kTenShape = 3, kTenData = 4, kTenStrings = 5;
constexpr uint32_t kCtxName = 1;
constexpr uint32_t kObsId = 1, kObsTensors = 2;
constexpr uint32_t kRepId = 1, kRepTensors = 2, kRepError = 3;
}  // namespace f

const char* kindName(uint32_t field) {
  switch (field) {
    case f::kMsgHeader: return "header";
    case f::kMsgContext: return "context";
    case f::kMsgObservation: return "observation";
    case f::kMsgReply: return "reply";
    case f::kMsgEnd: return "end";
  }
  return "unknown";
}

constexpr FrameFormat kFrame{kFormatByte, "protobuf"};

// ---- encoding -------------------------------------------------------------

size_t packedShapeSize(const std::vector<int64_t>& shape) {
  size_t n = 0;
  for (int64_t d : shape) n += pb::varintSize(static_cast<uint64_t>(d));
  return n;
}

size_t shapeFieldSize(const std::vector<int64_t>& shape) {
  return shape.empty() ? 0 : pb::lengthDelimitedSize(packedShapeSize(shape));
}

void appendShapeField(std::string& s, uint32_t field, const std::vector<int64_t>& shape) {
  if (shape.empty()) return;
  pb::appendLengthPrefix(s, field, packedShapeSize(shape));
  for (int64_t d : shape) pb::appendVarint(s, static_cast<uint64_t>(d));
}

// int32/int64/enum: negative values are sign-extended to 10-byte varints.
uint64_t asVarint(int64_t v) { return static_cast<uint64_t>(v); }

size_t specSize(const TensorSpec& t) {
  return pb::bytesFieldSize(t.name().size()) + pb::varintFieldSize(asVarint(static_cast<int>(t.type()))) +
         shapeFieldSize(t.shape()) + pb::varintFieldSize(asVarint(t.port()));
}

void appendSpec(std::string& s, uint32_t field, const TensorSpec& t) {
  pb::appendLengthPrefix(s, field, specSize(t));
  pb::appendBytesField(s, f::kSpecName, t.name().data(), t.name().size());
  pb::appendVarintField(s, f::kSpecDType, asVarint(static_cast<int>(t.type())));
  appendShapeField(s, f::kSpecShape, t.shape());
  pb::appendVarintField(s, f::kSpecPort, asVarint(t.port()));
}

Status checkRef(const TensorRef& t, const char* what) {
  if (!t.spec) return invalidArgument(std::string(what) + " tensor without a spec");
  if (t.spec->type() == DType::kInvalid)
    return invalidArgument(std::string(what) + " '" + t.spec->name() + "' has an invalid dtype");
  if (!t.data && (t.spec->type() == DType::kString ? t.spec->elementCount() : t.spec->byteSize()) != 0)
    return invalidArgument(std::string(what) + " '" + t.spec->name() + "' has no data");
  return Status::OK();
}

size_t tensorSize(const TensorRef& t) {
  const TensorSpec& spec = *t.spec;
  size_t n = pb::bytesFieldSize(spec.name().size()) + pb::varintFieldSize(asVarint(static_cast<int>(spec.type()))) +
             shapeFieldSize(spec.shape());
  if (spec.type() == DType::kString) {
    const std::string* strings = static_cast<const std::string*>(t.data);
    for (size_t k = 0, e = spec.elementCount(); k < e; ++k) n += pb::lengthDelimitedSize(strings[k].size());
  } else {
    n += pb::bytesFieldSize(spec.byteSize());
  }
  return n;
}

// Appends to the OutputList's scratch buffer, committing it before each
// zero-copy reference so the segments stay in order.
class Writer {
 public:
  explicit Writer(OutputList& out) : out_(out), s_(out.scratch()), mark_(s_.size()) {}
  ~Writer() { flush(); }
  std::string& s() { return s_; }
  void ref(const void* p, size_t n) {
    if (n <= kInlineDataBytes) {
      s_.append(static_cast<const char*>(p), n);
      return;
    }
    flush();
    out_.appendRef(p, n);
  }
  void flush() {
    out_.commitScratch(s_.size() - mark_);
    mark_ = s_.size();
  }

 private:
  OutputList& out_;
  std::string& s_;
  size_t mark_;
};

void appendTensor(Writer& w, uint32_t field, const TensorRef& t, size_t size) {
  const TensorSpec& spec = *t.spec;
  std::string& s = w.s();
  pb::appendLengthPrefix(s, field, size);
  pb::appendBytesField(s, f::kTenName, spec.name().data(), spec.name().size());
  pb::appendVarintField(s, f::kTenDType, asVarint(static_cast<int>(spec.type())));
  appendShapeField(s, f::kTenShape, spec.shape());
  if (spec.type() == DType::kString) {
    const std::string* strings = static_cast<const std::string*>(t.data);
    for (size_t k = 0, e = spec.elementCount(); k < e; ++k) {
      pb::appendLengthPrefix(s, f::kTenStrings, strings[k].size());
      s.append(strings[k]);
    }
  } else if (size_t n = spec.byteSize()) {
    pb::appendLengthPrefix(s, f::kTenData, n);
    w.ref(t.data, n);
  }
}

// Observation and Reply share their layout: id = 1, tensors = 2 (+ error = 3).
static_assert(f::kObsId == f::kRepId && f::kObsTensors == f::kRepTensors, "shared layout");
Status encodeTensorMessage(uint32_t kindField, int64_t id, Span<const TensorRef> tensors, const char* what,
                           OutputList& out) {
  size_t body = pb::varintFieldSize(asVarint(id));
  for (const TensorRef& t : tensors) {
    MLBRIDGE_RETURN_IF_ERROR(checkRef(t, what));
    body += pb::lengthDelimitedSize(tensorSize(t));
  }
  size_t total = pb::lengthDelimitedSize(body);
  MLBRIDGE_RETURN_IF_ERROR(checkFrameSize(total, what));
  Writer w(out);
  std::string& s = w.s();
  s.reserve(s.size() + kFrameHeaderSize + 64 + tensors.size() * 32);
  appendFrameLength(s, total);
  pb::appendLengthPrefix(s, kindField, body);
  pb::appendVarintField(s, f::kObsId, asVarint(id));
  for (const TensorRef& t : tensors) appendTensor(w, f::kObsTensors, t, tensorSize(t));
  return Status::OK();
}

// ---- hot-path reply decoding ---------------------------------------------

struct ReplyState {
  int64_t id = 0;
  size_t tensors = 0;  // tensors seen (merged across repeated reply fields)
  bool hasError = false;
  const uint8_t* error = nullptr;
  size_t errorLen = 0;
};

Status decodeReplyTensor(const uint8_t* base, const uint8_t* p, size_t n, const MutableTensorRef& out) {
  const TensorSpec& spec = *out.spec;
  Reader r(base, p, p + n);
  std::string_view name;
  uint64_t dtype = 0;
  int64_t dims[kMaxDims];
  size_t ndims = 0;
  const uint8_t* data = nullptr;
  size_t dataLen = 0;
  size_t strings = 0;
  const bool isString = spec.type() == DType::kString;
  const size_t count = spec.elementCount();
  while (!r.done()) {
    uint32_t field;
    WireType type;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&field, &type));
    if (field == f::kTenName && type == pb::kLengthDelimited) {
      const uint8_t* q;
      size_t len;
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
      name = std::string_view(reinterpret_cast<const char*>(q), len);
    } else if (field == f::kTenDType && type == pb::kVarint) {
      MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&dtype));
    } else if (field == f::kTenShape && (type == pb::kLengthDelimited || type == pb::kVarint)) {
      // Parsers accept packed and unpacked encodings alike.
      Reader packed = r;
      if (type == pb::kLengthDelimited) {
        const uint8_t* q;
        size_t len;
        MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
        packed = Reader(base, q, q + len);
      }
      Reader& from = type == pb::kVarint ? r : packed;
      bool one = type == pb::kVarint;
      while (one || !from.done()) {
        uint64_t d;
        MLBRIDGE_RETURN_IF_ERROR(from.readVarint(&d));
        if (ndims == kMaxDims)
          return dataLoss("reply tensor '" + spec.name() + "' has more than " + std::to_string(kMaxDims) +
                          " dimensions");
        dims[ndims++] = static_cast<int64_t>(d);
        if (one) break;
      }
    } else if (field == f::kTenData && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&data, &dataLen));
    } else if (field == f::kTenStrings && type == pb::kLengthDelimited) {
      const uint8_t* q;
      size_t len;
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
      if (!isString) return dataLoss("reply tensor '" + spec.name() + "' has string_data but is not a string tensor");
      if (strings < count) static_cast<std::string*>(out.data)[strings].assign(reinterpret_cast<const char*>(q), len);
      ++strings;
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(field, type));
    }
  }
  if (dtype == 0 || dtype > static_cast<uint64_t>(DType::kString))
    return dataLoss("reply tensor '" + std::string(name) + "' has unknown dtype " + std::to_string(dtype));
  MLBRIDGE_RETURN_IF_ERROR(checkTensorAgainstSpec(spec, name, static_cast<DType>(dtype),
                                                  Span<const int64_t>(dims, ndims), "reply tensor"));
  if (isString) {
    if (strings != count)
      return dataLoss("reply tensor '" + spec.name() + "' has " + std::to_string(strings) + " strings, expected " +
                      std::to_string(count));
    if (dataLen) return dataLoss("reply tensor '" + spec.name() + "' is a string tensor but has data bytes");
    return Status::OK();
  }
  if (dataLen != spec.byteSize())
    return dataLoss("reply tensor '" + spec.name() + "' has " + std::to_string(dataLen) + " data bytes, expected " +
                    std::to_string(spec.byteSize()));
  if (spec.type() == DType::kBool) {
    for (size_t k = 0; k < dataLen; ++k)
      if (data[k] > 1)
        return dataLoss("reply tensor '" + spec.name() + "' element " + std::to_string(k) + " is " +
                        std::to_string(data[k]) + ", not a bool (0 or 1)");
  }
  if (dataLen) std::memcpy(out.data, data, dataLen);
  return Status::OK();
}

Status decodeReplyBody(const uint8_t* base, const uint8_t* p, size_t n, Span<const MutableTensorRef> outputs,
                       ReplyState& st) {
  Reader r(base, p, p + n);
  while (!r.done()) {
    uint32_t field;
    WireType type;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&field, &type));
    if (field == f::kRepId && type == pb::kVarint) {
      uint64_t v;
      MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&v));
      st.id = static_cast<int64_t>(v);
    } else if (field == f::kRepTensors && type == pb::kLengthDelimited) {
      const uint8_t* q;
      size_t len;
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
      if (st.tensors >= outputs.size())
        return dataLoss("reply has more than the " + std::to_string(outputs.size()) + " tensors expected");
      MLBRIDGE_RETURN_IF_ERROR(decodeReplyTensor(base, q, len, outputs[st.tensors]));
      ++st.tensors;
    } else if (field == f::kRepError && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&st.error, &st.errorLen));
      st.hasError = st.errorLen != 0;  // proto3: an empty string is "no error"
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(field, type));
    }
  }
  return Status::OK();
}

// ---- cold-path full decoding ----------------------------------------------

Status readString(Reader& r, std::string* out) {
  const uint8_t* q;
  size_t len;
  MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
  out->assign(reinterpret_cast<const char*>(q), len);
  return Status::OK();
}

Status readShape(Reader& r, WireType type, const uint8_t* base, std::vector<int64_t>& shape) {
  if (type == pb::kVarint) {
    if (shape.size() == kMaxDims) return r.error("too many dimensions");
    uint64_t d;
    MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&d));
    shape.push_back(static_cast<int64_t>(d));
    return Status::OK();
  }
  const uint8_t* q;
  size_t len;
  MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
  Reader packed(base, q, q + len);
  while (!packed.done()) {
    if (shape.size() == kMaxDims) return r.error("too many dimensions");
    uint64_t d;
    MLBRIDGE_RETURN_IF_ERROR(packed.readVarint(&d));
    shape.push_back(static_cast<int64_t>(d));
  }
  return Status::OK();
}

DType dtypeFromWire(uint64_t v) {
  return v >= 1 && v <= static_cast<uint64_t>(DType::kString) ? static_cast<DType>(v) : DType::kInvalid;
}

Status decodeSpec(const uint8_t* base, const uint8_t* p, size_t n, TensorSpec* out) {
  Reader r(base, p, p + n);
  std::string name;
  uint64_t dtype = 0, port = 0;
  std::vector<int64_t> shape;
  while (!r.done()) {
    uint32_t field;
    WireType type;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&field, &type));
    if (field == f::kSpecName && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(readString(r, &name));
    } else if (field == f::kSpecDType && type == pb::kVarint) {
      MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&dtype));
    } else if (field == f::kSpecShape && (type == pb::kVarint || type == pb::kLengthDelimited)) {
      MLBRIDGE_RETURN_IF_ERROR(readShape(r, type, base, shape));
    } else if (field == f::kSpecPort && type == pb::kVarint) {
      MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&port));
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(field, type));
    }
  }
  if (dtypeFromWire(dtype) == DType::kInvalid)
    return dataLoss("tensor spec '" + name + "' has unknown dtype " + std::to_string(dtype));
  int32_t port32 = static_cast<int32_t>(static_cast<uint32_t>(port));  // int32 on the wire
  if (port32 < 0) return dataLoss("tensor spec '" + name + "' has a negative port");
  *out = TensorSpec(std::move(name), dtypeFromWire(dtype), std::move(shape), port32);
  return out->validate();
}

Status decodeTensor(const uint8_t* base, const uint8_t* p, size_t n, DecodedTensor* out) {
  Reader r(base, p, p + n);
  std::string name;
  uint64_t dtype = 0;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t dataLen = 0;
  std::vector<std::string> strings;
  while (!r.done()) {
    uint32_t field;
    WireType type;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&field, &type));
    if (field == f::kTenName && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(readString(r, &name));
    } else if (field == f::kTenDType && type == pb::kVarint) {
      MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&dtype));
    } else if (field == f::kTenShape && (type == pb::kVarint || type == pb::kLengthDelimited)) {
      MLBRIDGE_RETURN_IF_ERROR(readShape(r, type, base, shape));
    } else if (field == f::kTenData && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&data, &dataLen));
    } else if (field == f::kTenStrings && type == pb::kLengthDelimited) {
      strings.emplace_back();
      MLBRIDGE_RETURN_IF_ERROR(readString(r, &strings.back()));
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(field, type));
    }
  }
  DType dt = dtypeFromWire(dtype);
  if (dt == DType::kInvalid) return dataLoss("tensor '" + name + "' has unknown dtype " + std::to_string(dtype));
  out->spec = TensorSpec(std::move(name), dt, std::move(shape));
  MLBRIDGE_RETURN_IF_ERROR(out->spec.validate());
  const std::string& nm = out->spec.name();
  if (dt == DType::kString) {
    if (strings.size() != out->spec.elementCount())
      return dataLoss("tensor '" + nm + "' has " + std::to_string(strings.size()) + " strings, expected " +
                      std::to_string(out->spec.elementCount()));
    if (dataLen) return dataLoss("tensor '" + nm + "' is a string tensor but has data bytes");
    out->strings = std::move(strings);
    return Status::OK();
  }
  if (!strings.empty()) return dataLoss("tensor '" + nm + "' has string_data but is not a string tensor");
  if (dataLen != out->spec.byteSize())
    return dataLoss("tensor '" + nm + "' has " + std::to_string(dataLen) + " data bytes, expected " +
                    std::to_string(out->spec.byteSize()));
  if (dt == DType::kBool)
    for (size_t k = 0; k < dataLen; ++k)
      if (data[k] > 1) return dataLoss("tensor '" + nm + "' element " + std::to_string(k) + " is not a bool (0 or 1)");
  out->bytes.assign(data, data + dataLen);
  return Status::OK();
}

// Body of a header, context, observation or reply message into `m`.
Status decodeBody(uint32_t kind, const uint8_t* base, const uint8_t* p, size_t n, DecodedMessage& m) {
  Reader r(base, p, p + n);
  uint64_t version = 0;
  while (!r.done()) {
    uint32_t field;
    WireType type;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&field, &type));
    const uint8_t* q;
    size_t len;
    if (kind == f::kMsgHeader && field == f::kHdrVersion && type == pb::kVarint) {
      MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&version));
    } else if (kind == f::kMsgHeader && (field == f::kHdrFeatures || field == f::kHdrAdvice) &&
               type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
      std::vector<TensorSpec>& list = field == f::kHdrFeatures ? m.specs.features : m.specs.advice;
      list.emplace_back();
      MLBRIDGE_RETURN_IF_ERROR(decodeSpec(base, q, len, &list.back()));
    } else if (kind == f::kMsgContext && field == f::kCtxName && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(readString(r, &m.name));
    } else if ((kind == f::kMsgObservation || kind == f::kMsgReply) && field == f::kObsId && type == pb::kVarint) {
      uint64_t v;
      MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&v));
      m.id = static_cast<int64_t>(v);
    } else if ((kind == f::kMsgObservation || kind == f::kMsgReply) && field == f::kObsTensors && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
      m.tensors.emplace_back();
      MLBRIDGE_RETURN_IF_ERROR(decodeTensor(base, q, len, &m.tensors.back()));
    } else if (kind == f::kMsgReply && field == f::kRepError && type == pb::kLengthDelimited) {
      MLBRIDGE_RETURN_IF_ERROR(readString(r, &m.error));
      m.hasError = !m.error.empty();
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(field, type));
    }
  }
  if (kind == f::kMsgHeader) {
    if (version != static_cast<uint64_t>(kProtocolVersion))
      return unimplemented("header announces protocol version " + std::to_string(version) +
                           ", this reader supports version " + std::to_string(kProtocolVersion));
    MLBRIDGE_RETURN_IF_ERROR(validateSpecs(m.specs.features, "feature"));
    MLBRIDGE_RETURN_IF_ERROR(validateSpecs(m.specs.advice, "advice"));
  }
  return Status::OK();
}

// One Message payload; `toModel` selects which kinds are allowed.
Status decodeMessage(Span<const uint8_t> payload, bool toModel, DecodedMessage& m) {
  const uint8_t* base = payload.data();
  Reader r(base, base, base + payload.size());
  uint32_t kind = 0;
  const uint8_t* body = nullptr;
  size_t bodyLen = 0;
  while (!r.done()) {
    uint32_t field;
    WireType type;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&field, &type));
    if (field >= f::kMsgHeader && field <= f::kMsgEnd && type == pb::kLengthDelimited) {
      // oneof: the last kind wins. (Protobuf would merge repeated occurrences
      // of the same kind; no writer produces them.)
      MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&body, &bodyLen));
      kind = field;
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(field, type));
    }
  }
  if (kind == 0) return dataLoss("message has no kind (header, context, observation, reply or end)");
  bool allowed = toModel ? kind != f::kMsgReply : kind == f::kMsgReply;
  if (!allowed)
    return dataLoss(std::string("unexpected ") + kindName(kind) + " message in a " +
                    (toModel ? "compiler -> model" : "model -> compiler") + " stream");
  switch (kind) {
    case f::kMsgHeader: m.kind = DecodedMessage::Kind::kHeader; break;
    case f::kMsgContext: m.kind = DecodedMessage::Kind::kContext; break;
    case f::kMsgObservation: m.kind = DecodedMessage::Kind::kObservation; break;
    case f::kMsgReply: m.kind = DecodedMessage::Kind::kReply; break;
    default: m.kind = DecodedMessage::Kind::kEnd; break;
  }
  return decodeBody(kind, base, body, bodyLen, m);
}

class ProtobufCodec final : public FramedCodec {
 public:
  ProtobufCodec() : FramedCodec(kFrame, decodeMessage) {}

  WireFormat format() const override { return WireFormat::kProtobuf; }

  Status encodeHeader(const SessionSpecs& specs, OutputList& out) override {
    MLBRIDGE_RETURN_IF_ERROR(checkSpecs(specs));
    size_t body = pb::varintFieldSize(kProtocolVersion);
    for (const TensorSpec& t : specs.features) body += pb::lengthDelimitedSize(specSize(t));
    for (const TensorSpec& t : specs.advice) body += pb::lengthDelimitedSize(specSize(t));
    size_t total = pb::lengthDelimitedSize(body);
    MLBRIDGE_RETURN_IF_ERROR(checkFrameSize(total, "header"));
    Writer w(out);
    std::string& s = w.s();
    appendPreamble(s, kFrame);
    appendFrameLength(s, total);
    pb::appendLengthPrefix(s, f::kMsgHeader, body);
    pb::appendVarintField(s, f::kHdrVersion, kProtocolVersion);
    for (const TensorSpec& t : specs.features) appendSpec(s, f::kHdrFeatures, t);
    for (const TensorSpec& t : specs.advice) appendSpec(s, f::kHdrAdvice, t);
    return Status::OK();
  }

  Status encodeContext(std::string_view name, OutputList& out) override {
    std::string fixed;
    name = utf8::repaired(name, fixed);
    size_t body = pb::bytesFieldSize(name.size());
    size_t total = pb::lengthDelimitedSize(body);
    MLBRIDGE_RETURN_IF_ERROR(checkFrameSize(total, "context"));
    Writer w(out);
    std::string& s = w.s();
    appendFrameLength(s, total);
    pb::appendLengthPrefix(s, f::kMsgContext, body);
    pb::appendBytesField(s, f::kCtxName, name.data(), name.size());
    return Status::OK();
  }

  Status encodeObservation(int64_t id, Span<const TensorRef> features, OutputList& out) override {
    return encodeTensorMessage(f::kMsgObservation, id, features, "observation", out);
  }

  Status encodeEnd(OutputList& out) override {
    Writer w(out);
    appendFrameLength(w.s(), 2);
    pb::appendLengthPrefix(w.s(), f::kMsgEnd, 0);
    return Status::OK();
  }

  Status encodeReply(int64_t id, Span<const TensorRef> advice, OutputList& out) override {
    return encodeTensorMessage(f::kMsgReply, id, advice, "reply", out);
  }

  Status encodeReplyError(int64_t id, std::string_view message, OutputList& out) override {
    // proto3 cannot tell an empty error from none: never send one.
    if (message.empty()) message = "unknown model error";
    std::string fixed;
    message = utf8::repaired(message, fixed);
    size_t body = pb::varintFieldSize(asVarint(id)) + pb::bytesFieldSize(message.size());
    size_t total = pb::lengthDelimitedSize(body);
    MLBRIDGE_RETURN_IF_ERROR(checkFrameSize(total, "error reply"));
    Writer w(out);
    std::string& s = w.s();
    appendFrameLength(s, total);
    pb::appendLengthPrefix(s, f::kMsgReply, body);
    pb::appendVarintField(s, f::kRepId, asVarint(id));
    pb::appendBytesField(s, f::kRepError, message.data(), message.size());
    return Status::OK();
  }

  Status decodeReply(Span<const uint8_t> payload, int64_t expectedId,
                     Span<const MutableTensorRef> outputs) const override {
    const uint8_t* base = payload.data();
    Reader r(base, base, base + payload.size());
    ReplyState st;
    bool sawReply = false;
    while (!r.done()) {
      uint32_t field;
      WireType type;
      MLBRIDGE_RETURN_IF_ERROR(r.readTag(&field, &type));
      if (field == f::kMsgReply && type == pb::kLengthDelimited) {
        const uint8_t* q;
        size_t len;
        MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&q, &len));
        MLBRIDGE_RETURN_IF_ERROR(decodeReplyBody(base, q, len, outputs, st));
        sawReply = true;
      } else if (field >= f::kMsgHeader && field <= f::kMsgEnd && type == pb::kLengthDelimited) {
        return dataLoss(std::string("expected a reply from the model, got a message of kind \"") + kindName(field) + "\"");
      } else {
        MLBRIDGE_RETURN_IF_ERROR(r.skip(field, type));
      }
    }
    ReplySummary summary;
    summary.sawReply = sawReply;
    summary.id = st.id;
    summary.tensors = st.tensors;
    summary.hasError = st.hasError;
    summary.error = std::string_view(reinterpret_cast<const char*>(st.error), st.errorLen);
    return checkReply(summary, expectedId, outputs.size());
  }
};

}  // namespace

std::unique_ptr<Codec> makeProtobufCodec() { return std::make_unique<ProtobufCodec>(); }

}  // namespace wire
}  // namespace mlbridge
