#include "engine/onnx_proto.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "wire/protobuf_wire.h"

namespace mlbridge {
namespace engine {
namespace onnx {

namespace pb = ::mlbridge::wire::pb;

DType dtypeFromOnnx(int32_t t) {
  switch (t) {
    case kOnnxFloat: return DType::kFloat32;
    case kOnnxUInt8: return DType::kUInt8;
    case kOnnxInt8: return DType::kInt8;
    case kOnnxUInt16: return DType::kUInt16;
    case kOnnxInt16: return DType::kInt16;
    case kOnnxInt32: return DType::kInt32;
    case kOnnxInt64: return DType::kInt64;
    case kOnnxBool: return DType::kBool;
    case kOnnxDouble: return DType::kFloat64;
    case kOnnxUInt32: return DType::kUInt32;
    case kOnnxUInt64: return DType::kUInt64;
    default: return DType::kInvalid;
  }
}

std::string onnxTypeName(int32_t t) {
  static const char* const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
                                      "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
                                      "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
                                      "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
                                      "FLOAT8E8M0", "UINT2", "INT2"};
  if (t >= 0 && static_cast<size_t>(t) < sizeof(names) / sizeof(names[0])) return names[t];
  return "type " + std::to_string(t);
}

const char* attrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kUndefined: return "UNDEFINED";
    case AttrType::kFloat: return "FLOAT";
    case AttrType::kInt: return "INT";
    case AttrType::kString: return "STRING";
    case AttrType::kTensor: return "TENSOR";
    case AttrType::kGraph: return "GRAPH";
    case AttrType::kFloats: return "FLOATS";
    case AttrType::kInts: return "INTS";
    case AttrType::kStrings: return "STRINGS";
    case AttrType::kTensors: return "TENSORS";
    case AttrType::kGraphs: return "GRAPHS";
    case AttrType::kSparseTensor: return "SPARSE_TENSOR";
    case AttrType::kSparseTensors: return "SPARSE_TENSORS";
    case AttrType::kTypeProto: return "TYPE_PROTO";
    case AttrType::kTypeProtos: return "TYPE_PROTOS";
  }
  return "UNKNOWN";
}

namespace {

using pb::WireType;

// Everything a sub-parser needs: the start of the whole model (offsets in
// error messages are from there) and the options.
struct Ctx {
  const uint8_t* base;
  const ReadOptions* options;
};

Status wireError(const pb::Reader& r, const char* message, uint32_t field, const char* what) {
  return dataLoss("malformed ONNX model at byte " + std::to_string(r.offset()) + ": field " +
                  std::to_string(field) + " of " + what + " " + message);
}

Status expectType(const pb::Reader& r, WireType actual, WireType expected, uint32_t field, const char* what) {
  if (actual == expected) return Status::OK();
  return wireError(r, "has the wrong wire type", field, what);
}

Status readBytes(pb::Reader& r, WireType t, uint32_t f, const char* what, const uint8_t** p, size_t* n) {
  MLBRIDGE_RETURN_IF_ERROR(expectType(r, t, pb::kLengthDelimited, f, what));
  return r.readLengthDelimited(p, n);
}

Status readString(pb::Reader& r, WireType t, uint32_t f, const char* what, std::string* out) {
  const uint8_t* p;
  size_t n;
  MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &p, &n));
  out->assign(reinterpret_cast<const char*>(p), n);
  return Status::OK();
}

Status readVarint(pb::Reader& r, WireType t, uint32_t f, const char* what, uint64_t* out) {
  MLBRIDGE_RETURN_IF_ERROR(expectType(r, t, pb::kVarint, f, what));
  return r.readVarint(out);
}

Status readInt64(pb::Reader& r, WireType t, uint32_t f, const char* what, int64_t* out) {
  uint64_t v;
  MLBRIDGE_RETURN_IF_ERROR(readVarint(r, t, f, what, &v));
  *out = static_cast<int64_t>(v);
  return Status::OK();
}

Status readInt32(pb::Reader& r, WireType t, uint32_t f, const char* what, int32_t* out) {
  uint64_t v;
  MLBRIDGE_RETURN_IF_ERROR(readVarint(r, t, f, what, &v));
  *out = static_cast<int32_t>(static_cast<int64_t>(v));  // negative int32 are sign-extended varints
  return Status::OK();
}

// Reads one fixed-size value already announced by its tag. pb::Reader has no
// fixed-width readers: skip() bounds-checks and advances, then the bytes are
// read from where the value started.
template <class T>
Status readFixed(const Ctx& c, pb::Reader& r, uint32_t f, WireType t, T* out) {
  size_t at = r.offset();
  MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
  std::memcpy(out, c.base + at, sizeof(T));
  return Status::OK();
}

// Repeated fixed-width scalars (float/double): packed or not.
template <class T>
Status appendFixed(const Ctx& c, pb::Reader& r, WireType t, uint32_t f, const char* what, std::vector<T>* out) {
  const WireType single = sizeof(T) == 4 ? pb::kFixed32 : pb::kFixed64;
  if (t == single) {
    T v;
    MLBRIDGE_RETURN_IF_ERROR(readFixed(c, r, f, t, &v));
    out->push_back(v);
    return Status::OK();
  }
  MLBRIDGE_RETURN_IF_ERROR(expectType(r, t, pb::kLengthDelimited, f, what));
  const uint8_t* p;
  size_t n;
  MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&p, &n));
  if (n % sizeof(T) != 0) return wireError(r, "is a packed run whose length is not a multiple of the element size", f, what);
  size_t old = out->size();
  out->resize(old + n / sizeof(T));
  if (n) std::memcpy(out->data() + old, p, n);
  return Status::OK();
}

// Repeated varints, packed or not; the packed run is decoded in place.
template <class T>
Status appendVarintsAt(const Ctx& c, pb::Reader& r, WireType t, uint32_t f, const char* what, std::vector<T>* out) {
  if (t == pb::kVarint) {
    uint64_t v;
    MLBRIDGE_RETURN_IF_ERROR(r.readVarint(&v));
    out->push_back(static_cast<T>(static_cast<int64_t>(v)));
    return Status::OK();
  }
  MLBRIDGE_RETURN_IF_ERROR(expectType(r, t, pb::kLengthDelimited, f, what));
  const uint8_t* p;
  size_t n;
  MLBRIDGE_RETURN_IF_ERROR(r.readLengthDelimited(&p, &n));
  pb::Reader sub(c.base, p, p + n);
  while (!sub.done()) {
    uint64_t v;
    MLBRIDGE_RETURN_IF_ERROR(sub.readVarint(&v));
    out->push_back(static_cast<T>(static_cast<int64_t>(v)));
  }
  return Status::OK();
}

// ---- TensorProto -----------------------------------------------------------

struct TensorFields {
  std::string name;
  std::vector<int64_t> dims;
  int32_t dataType = 0;
  bool hasRaw = false;
  const uint8_t* raw = nullptr;
  size_t rawSize = 0;
  std::vector<float> floats;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;
  std::vector<double> doubles;
  std::vector<uint64_t> uint64s;
  bool hasStrings = false;
  bool hasSegment = false;
  int32_t dataLocation = 0;
  std::vector<std::pair<std::string, std::string>> external;
};

Status parseStringEntry(const Ctx& c, const uint8_t* p, size_t n, std::pair<std::string, std::string>* out) {
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    if (f == 1) MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, "StringStringEntryProto", &out->first));
    else if (f == 2) MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, "StringStringEntryProto", &out->second));
    else MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
  }
  return Status::OK();
}

Status parseTensorFields(const Ctx& c, const uint8_t* p, size_t n, TensorFields* out) {
  static const char* what = "TensorProto";
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    switch (f) {
      case 1: MLBRIDGE_RETURN_IF_ERROR(appendVarintsAt(c, r, t, f, what, &out->dims)); break;
      case 2: MLBRIDGE_RETURN_IF_ERROR(readInt32(r, t, f, what, &out->dataType)); break;
      case 3:
        out->hasSegment = true;
        MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
        break;
      case 4: MLBRIDGE_RETURN_IF_ERROR(appendFixed(c, r, t, f, what, &out->floats)); break;
      case 5: MLBRIDGE_RETURN_IF_ERROR(appendVarintsAt(c, r, t, f, what, &out->int32s)); break;
      case 6:
        out->hasStrings = true;
        MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
        break;
      case 7: MLBRIDGE_RETURN_IF_ERROR(appendVarintsAt(c, r, t, f, what, &out->int64s)); break;
      case 8: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &out->name)); break;
      case 9:
        out->hasRaw = true;
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &out->raw, &out->rawSize));
        break;
      case 10: MLBRIDGE_RETURN_IF_ERROR(appendFixed(c, r, t, f, what, &out->doubles)); break;
      case 11: MLBRIDGE_RETURN_IF_ERROR(appendVarintsAt(c, r, t, f, what, &out->uint64s)); break;
      case 13: {
        const uint8_t* q;
        size_t m;
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
        out->external.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(parseStringEntry(c, q, m, &out->external.back()));
        break;
      }
      case 14: MLBRIDGE_RETURN_IF_ERROR(readInt32(r, t, f, what, &out->dataLocation)); break;
      default: MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
    }
  }
  return Status::OK();
}

bool safeRelativePath(const std::string& path) {
  if (path.empty() || path[0] == '/' || path.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (path.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

Status readExternal(const TensorFields& tf, const ReadOptions& options, size_t bytes, unsigned char* dst) {
  std::string location;
  uint64_t offset = 0;
  bool hasLength = false;
  uint64_t length = 0;
  for (const auto& kv : tf.external) {
    auto parseU64 = [](const std::string& s, uint64_t* v) {
      if (s.empty() || s.size() > 19) return false;
      uint64_t x = 0;
      for (char ch : s) {
        if (ch < '0' || ch > '9') return false;
        x = x * 10 + static_cast<uint64_t>(ch - '0');
      }
      *v = x;
      return true;
    };
    if (kv.first == "location") location = kv.second;
    else if (kv.first == "offset") {
      if (!parseU64(kv.second, &offset)) return invalidArgument("external data offset '" + kv.second + "' is not a number");
    } else if (kv.first == "length") {
      if (!parseU64(kv.second, &length)) return invalidArgument("external data length '" + kv.second + "' is not a number");
      hasLength = true;
    }
  }
  if (options.externalDataDir.empty())
    return unimplemented("its data is stored in an external file ('" + location +
                         "'); load the model with OnnxModel::load(path) so the file can be found next to it");
  if (!safeRelativePath(location))
    return invalidArgument("external data location '" + location +
                           "' must be a relative path inside the model's folder");
  if (hasLength && length != bytes)
    return invalidArgument("external data length " + std::to_string(length) + " does not match the " +
                           std::to_string(bytes) + " bytes its shape needs");
  std::string path = options.externalDataDir + "/" + location;
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return Status(StatusCode::kNotFound, "cannot open external data file '" + path + "': " + std::strerror(errno));
  bool ok = offset <= static_cast<uint64_t>(INT64_MAX) && std::fseek(file, static_cast<long>(offset), SEEK_SET) == 0 &&
            (bytes == 0 || std::fread(dst, 1, bytes, file) == bytes);
  std::fclose(file);
  if (!ok)
    return dataLoss("external data file '" + path + "' is too short for " + std::to_string(bytes) +
                    " bytes at offset " + std::to_string(offset));
  return Status::OK();
}

template <class Dst, class Src>
void convertInto(unsigned char* dst, const std::vector<Src>& src) {
  for (size_t k = 0; k < src.size(); ++k) {
    Dst v = static_cast<Dst>(src[k]);
    std::memcpy(dst + k * sizeof(Dst), &v, sizeof(Dst));
  }
}

// Decodes the payload; the message says what is wrong without naming the
// tensor (the caller prefixes it).
StatusOr<Tensor> decodeTensor(const TensorFields& tf, const ReadOptions& options) {
  if (tf.hasSegment) return unimplemented("segmented tensors are not supported");
  DType dtype = dtypeFromOnnx(tf.dataType);
  if (dtype == DType::kInvalid)
    return unimplemented("element type " + onnxTypeName(tf.dataType) + " is not supported");
  Tensor out;
  out.dtype = dtype;
  out.shape = tf.dims;
  size_t count;
  size_t es = dtypeSize(dtype);
  for (int64_t d : out.shape)
    if (d < 0) return invalidArgument("shape " + shapeString(out.shape) + " has a negative dimension");
  if (!shapeElementCount(out.shape, es, options.maxTensorBytes, &count))
    return resourceExhausted("shape " + shapeString(out.shape) + " is larger than the " +
                             std::to_string(options.maxTensorBytes) + "-byte tensor limit (maxTensorBytes)");
  size_t bytes = count * es;
  // The inline payload must hold exactly the shape's elements: checked before
  // allocating, so that a few bytes cannot ask for a gigabyte.
  if (tf.dataLocation != 1) {
    size_t have = count;
    const char* field = "raw_data";
    if (tf.hasRaw) {
      if (tf.rawSize != bytes)
        return invalidArgument("has " + std::to_string(tf.rawSize) + " bytes of raw_data but its shape " +
                               shapeString(out.shape) + " needs " + std::to_string(bytes));
    } else if (dtype == DType::kFloat32) {
      have = tf.floats.size(), field = "float_data";
    } else if (dtype == DType::kFloat64) {
      have = tf.doubles.size(), field = "double_data";
    } else if (dtype == DType::kInt64) {
      have = tf.int64s.size(), field = "int64_data";
    } else if (dtype == DType::kUInt32 || dtype == DType::kUInt64) {
      have = tf.uint64s.size(), field = "uint64_data";
    } else {
      have = tf.int32s.size(), field = "int32_data";
    }
    if (have != count)
      return invalidArgument("has " + std::to_string(have) + " values in " + field + " but its shape " +
                             shapeString(out.shape) + " needs " + std::to_string(count));
  }
  std::shared_ptr<Buffer> buf = Buffer::allocate(bytes);
  if (!buf) return resourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes");
  unsigned char* dst = buf->as<unsigned char>();
  if (tf.dataLocation == 1) {
    MLBRIDGE_RETURN_IF_ERROR(readExternal(tf, options, bytes, dst));
  } else if (tf.hasRaw) {
    if (bytes) std::memcpy(dst, tf.raw, bytes);
    if (dtype == DType::kBool)
      for (size_t k = 0; k < count; ++k) dst[k] = dst[k] != 0;
  } else {
    switch (dtype) {
      case DType::kFloat32:
        if (bytes) std::memcpy(dst, tf.floats.data(), bytes);
        break;
      case DType::kFloat64:
        if (bytes) std::memcpy(dst, tf.doubles.data(), bytes);
        break;
      case DType::kInt64:
        if (bytes) std::memcpy(dst, tf.int64s.data(), bytes);
        break;
      case DType::kUInt32:
      case DType::kUInt64:
        if (dtype == DType::kUInt32) convertInto<uint32_t>(dst, tf.uint64s);
        else convertInto<uint64_t>(dst, tf.uint64s);
        break;
      case DType::kInt32:
      case DType::kInt16:
      case DType::kInt8:
      case DType::kUInt16:
      case DType::kUInt8:
      case DType::kBool:
        if (dtype == DType::kInt32) convertInto<int32_t>(dst, tf.int32s);
        else if (dtype == DType::kInt16) convertInto<int16_t>(dst, tf.int32s);
        else if (dtype == DType::kInt8) convertInto<int8_t>(dst, tf.int32s);
        else if (dtype == DType::kUInt16) convertInto<uint16_t>(dst, tf.int32s);
        else if (dtype == DType::kUInt8) convertInto<uint8_t>(dst, tf.int32s);
        else
          for (size_t k = 0; k < count; ++k) dst[k] = tf.int32s[k] != 0;
        break;
      default: return unimplemented("element type is not supported");
    }
  }
  out.data = std::move(buf);
  return out;
}

Status parseTensor(const Ctx& c, const uint8_t* p, size_t n, std::string* name, Tensor* out, Status* decodeStatus) {
  TensorFields tf;
  MLBRIDGE_RETURN_IF_ERROR(parseTensorFields(c, p, n, &tf));
  *name = tf.name;
  StatusOr<Tensor> t = decodeTensor(tf, *c.options);
  if (t.ok()) {
    *out = std::move(*t);
    *decodeStatus = Status::OK();
  } else {
    *decodeStatus = t.status();
  }
  return Status::OK();
}

// ---- AttributeProto / NodeProto ------------------------------------------

Status parseAttribute(const Ctx& c, const uint8_t* p, size_t n, AttributeDesc* a) {
  static const char* what = "AttributeProto";
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    switch (f) {
      case 1: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &a->name)); break;
      case 20: {
        int32_t v;
        MLBRIDGE_RETURN_IF_ERROR(readInt32(r, t, f, what, &v));
        a->type = static_cast<AttrType>(v);
        break;
      }
      case 2:
        MLBRIDGE_RETURN_IF_ERROR(expectType(r, t, pb::kFixed32, f, what));
        MLBRIDGE_RETURN_IF_ERROR(readFixed(c, r, f, t, &a->f));
        break;
      case 3: MLBRIDGE_RETURN_IF_ERROR(readInt64(r, t, f, what, &a->i)); break;
      case 4: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &a->s)); break;
      case 5: {
        const uint8_t* q;
        size_t m;
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
        std::string ignored;
        a->hasTensor = true;
        MLBRIDGE_RETURN_IF_ERROR(parseTensor(c, q, m, &ignored, &a->t, &a->tensorStatus));
        break;
      }
      case 7: MLBRIDGE_RETURN_IF_ERROR(appendFixed(c, r, t, f, what, &a->floats)); break;
      case 8: MLBRIDGE_RETURN_IF_ERROR(appendVarintsAt(c, r, t, f, what, &a->ints)); break;
      case 9: {
        a->strings.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &a->strings.back()));
        break;
      }
      case 21: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &a->refAttrName)); break;
      default: MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));  // graphs, sparse tensors, type protos, docs
    }
  }
  return Status::OK();
}

Status parseNode(const Ctx& c, const uint8_t* p, size_t n, NodeDesc* node) {
  static const char* what = "NodeProto";
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    switch (f) {
      case 1:
        node->inputs.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &node->inputs.back()));
        break;
      case 2:
        node->outputs.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &node->outputs.back()));
        break;
      case 3: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &node->name)); break;
      case 4: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &node->opType)); break;
      case 7: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &node->domain)); break;
      case 5: {
        const uint8_t* q;
        size_t m;
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
        node->attributes.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(parseAttribute(c, q, m, &node->attributes.back()));
        break;
      }
      default: MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
    }
  }
  return Status::OK();
}

// ---- ValueInfoProto ---------------------------------------------------------

Status parseDim(const Ctx& c, const uint8_t* p, size_t n, DimDesc* d) {
  static const char* what = "TensorShapeProto.Dimension";
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    if (f == 1) {
      MLBRIDGE_RETURN_IF_ERROR(readInt64(r, t, f, what, &d->value));
      d->hasValue = true;
    } else if (f == 2) {
      MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &d->param));
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
    }
  }
  return Status::OK();
}

Status parseTensorType(const Ctx& c, const uint8_t* p, size_t n, ValueInfoDesc* v) {
  static const char* what = "TypeProto.Tensor";
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    if (f == 1) {
      MLBRIDGE_RETURN_IF_ERROR(readInt32(r, t, f, what, &v->elemType));
    } else if (f == 2) {
      const uint8_t* q;
      size_t m;
      MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
      v->hasShape = true;
      v->dims.clear();
      pb::Reader sr(c.base, q, q + m);
      while (!sr.done()) {
        uint32_t sf;
        WireType st;
        MLBRIDGE_RETURN_IF_ERROR(sr.readTag(&sf, &st));
        if (sf != 1) {
          MLBRIDGE_RETURN_IF_ERROR(sr.skip(sf, st));
          continue;
        }
        const uint8_t* dp;
        size_t dn;
        MLBRIDGE_RETURN_IF_ERROR(readBytes(sr, st, sf, "TensorShapeProto", &dp, &dn));
        v->dims.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(parseDim(c, dp, dn, &v->dims.back()));
      }
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
    }
  }
  return Status::OK();
}

Status parseValueInfo(const Ctx& c, const uint8_t* p, size_t n, ValueInfoDesc* v) {
  static const char* what = "ValueInfoProto";
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    if (f == 1) {
      MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &v->name));
    } else if (f == 2) {
      const uint8_t* q;
      size_t m;
      MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
      pb::Reader tr(c.base, q, q + m);
      while (!tr.done()) {
        uint32_t tf;
        WireType tt;
        MLBRIDGE_RETURN_IF_ERROR(tr.readTag(&tf, &tt));
        if (tf == 1) {
          const uint8_t* s;
          size_t sn;
          MLBRIDGE_RETURN_IF_ERROR(readBytes(tr, tt, tf, "TypeProto", &s, &sn));
          v->isTensor = true;
          MLBRIDGE_RETURN_IF_ERROR(parseTensorType(c, s, sn, v));
        } else {
          MLBRIDGE_RETURN_IF_ERROR(tr.skip(tf, tt));
        }
      }
    } else {
      MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
    }
  }
  return Status::OK();
}

// ---- GraphProto / ModelProto --------------------------------------------------

Status parseGraph(const Ctx& c, const uint8_t* p, size_t n, GraphDesc* g) {
  static const char* what = "GraphProto";
  pb::Reader r(c.base, p, p + n);
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    const uint8_t* q = nullptr;
    size_t m = 0;
    switch (f) {
      case 1:
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
        g->nodes.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(parseNode(c, q, m, &g->nodes.back()));
        break;
      case 2: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &g->name)); break;
      case 5: {
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
        g->initializers.emplace_back();
        InitializerDesc& init = g->initializers.back();
        MLBRIDGE_RETURN_IF_ERROR(parseTensor(c, q, m, &init.name, &init.tensor, &init.status));
        break;
      }
      case 15:
        g->hasSparseInitializers = true;
        MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
        break;
      case 11:
      case 12: {
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &m));
        std::vector<ValueInfoDesc>& list = f == 11 ? g->inputs : g->outputs;
        list.emplace_back();
        MLBRIDGE_RETURN_IF_ERROR(parseValueInfo(c, q, m, &list.back()));
        break;
      }
      default: MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));  // value_info, doc_string, annotations
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<ModelDesc> readModel(const void* data, size_t size, const ReadOptions& options) {
  if (size == 0) return dataLoss("the ONNX model is empty (0 bytes)");
  if (data == nullptr) return invalidArgument("no model data");
  static const char* what = "ModelProto";
  Ctx c{static_cast<const uint8_t*>(data), &options};
  pb::Reader r(c.base, c.base, c.base + size);
  ModelDesc m;
  while (!r.done()) {
    uint32_t f;
    WireType t;
    MLBRIDGE_RETURN_IF_ERROR(r.readTag(&f, &t));
    const uint8_t* q = nullptr;
    size_t n = 0;
    switch (f) {
      case 1: MLBRIDGE_RETURN_IF_ERROR(readInt64(r, t, f, what, &m.irVersion)); break;
      case 2: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &m.producerName)); break;
      case 3: MLBRIDGE_RETURN_IF_ERROR(readString(r, t, f, what, &m.producerVersion)); break;
      case 7:
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &n));
        if (m.hasGraph) return dataLoss("malformed ONNX model: more than one graph");
        m.hasGraph = true;
        MLBRIDGE_RETURN_IF_ERROR(parseGraph(c, q, n, &m.graph));
        break;
      case 8: {
        MLBRIDGE_RETURN_IF_ERROR(readBytes(r, t, f, what, &q, &n));
        std::pair<std::string, int64_t> opset("", 0);
        pb::Reader sr(c.base, q, q + n);
        while (!sr.done()) {
          uint32_t sf;
          WireType st;
          MLBRIDGE_RETURN_IF_ERROR(sr.readTag(&sf, &st));
          if (sf == 1) MLBRIDGE_RETURN_IF_ERROR(readString(sr, st, sf, "OperatorSetIdProto", &opset.first));
          else if (sf == 2) MLBRIDGE_RETURN_IF_ERROR(readInt64(sr, st, sf, "OperatorSetIdProto", &opset.second));
          else MLBRIDGE_RETURN_IF_ERROR(sr.skip(sf, st));
        }
        m.opsetImports.push_back(opset);
        break;
      }
      case 25:
        m.hasFunctions = true;
        MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
        break;
      default: MLBRIDGE_RETURN_IF_ERROR(r.skip(f, t));
    }
  }
  if (!m.hasGraph) return dataLoss("not an ONNX model: no graph (is this a .onnx file?)");
  return m;
}

Status readFile(const std::string& path, size_t maxBytes, std::string* out) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return Status(StatusCode::kNotFound, "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fileno(file), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(file);
    return invalidArgument("'" + path + "' is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    std::fclose(file);
    return resourceExhausted("'" + path + "' is " + std::to_string(st.st_size) + " bytes, over the " +
                             std::to_string(maxBytes) + "-byte limit");
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = out->empty() ? 0 : std::fread(&(*out)[0], 1, out->size(), file);
  std::fclose(file);
  if (got != out->size()) return dataLoss("short read from '" + path + "'");
  return Status::OK();
}

}  // namespace onnx
}  // namespace engine
}  // namespace mlbridge
