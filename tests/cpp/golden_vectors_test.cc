// The golden vectors (tests/vectors/, written by generate.py from the Python
// implementation): for every case and format, encoding the manifest's
// messages gives the .bin file byte for byte, and decoding the file gives the
// manifest's values back. The same files are checked by the Python tests, so
// passing both proves the two implementations agree on the wire.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "codec_testing.h"
#include "json/json.h"
#include "wire/codec.h"

#ifndef MLBRIDGE_VECTORS_DIR
#error "MLBRIDGE_VECTORS_DIR must name tests/vectors"
#endif

namespace mlbridge {
namespace testing {
namespace {

using wire::DecodedMessage;
using wire::OutputList;
using wire::SessionSpecs;

struct ExpectedMessage {
  DecodedMessage::Kind kind = DecodedMessage::Kind::kEnd;
  std::string name;  // context
  int64_t id = 0;
  bool hasError = false;
  std::string error;
  std::vector<OwnedTensor> tensors;
};

struct GoldenCase {
  std::string name;
  WireFormat format = WireFormat::kBitstream;
  bool toModel = true;
  std::string file;
  SessionSpecs specs;
  std::vector<ExpectedMessage> messages;
  std::string bytes;  // the .bin file
};

struct Manifest {
  Status status;
  std::vector<GoldenCase> cases;
};

bool readFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// One manifest value into element k of t (the tensor's own dtype: floats are
// parsed from the decimal text straight into float32 or float64).
bool storeElement(const json::Value& v, OwnedTensor& t, size_t k) {
  switch (t.spec.type()) {
    case DType::kFloat32: {
      float f;
      if (v.isString()) {
        double d;
        if (!v.toDouble(&d)) return false;
        f = static_cast<float>(d);
      } else {
        if (!v.isNumber()) return false;
        const std::string& s = v.text();
        std::from_chars_result r = std::from_chars(s.data(), s.data() + s.size(), f);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
      }
      t.set(k, f);
      return true;
    }
    case DType::kFloat64: {
      double d;
      if (!v.toDouble(&d)) return false;
      t.set(k, d);
      return true;
    }
    case DType::kBool:
      if (!v.isBool()) return false;
      t.set<uint8_t>(k, v.boolean() ? 1 : 0);
      return true;
    case DType::kString:
      if (!v.isString()) return false;
      t.strings[k] = v.text();
      return true;
    default:
      break;
  }
  if (isSigned(t.spec.type())) {
    int64_t x;
    if (!v.toInt64(&x)) return false;
    switch (t.spec.type()) {
      case DType::kInt8: t.set(k, static_cast<int8_t>(x)); return x >= INT8_MIN && x <= INT8_MAX;
      case DType::kInt16: t.set(k, static_cast<int16_t>(x)); return x >= INT16_MIN && x <= INT16_MAX;
      case DType::kInt32: t.set(k, static_cast<int32_t>(x)); return x >= INT32_MIN && x <= INT32_MAX;
      default: t.set(k, x); return true;
    }
  }
  uint64_t x;
  if (!v.toUInt64(&x)) return false;
  switch (t.spec.type()) {
    case DType::kUInt8: t.set(k, static_cast<uint8_t>(x)); return x <= UINT8_MAX;
    case DType::kUInt16: t.set(k, static_cast<uint16_t>(x)); return x <= UINT16_MAX;
    case DType::kUInt32: t.set(k, static_cast<uint32_t>(x)); return x <= UINT32_MAX;
    default: t.set(k, x); return true;
  }
}

Status parseTensor(const json::Value& v, OwnedTensor* out) {
  const json::Value* name = v.find("name");
  const json::Value* type = v.find("type");
  const json::Value* shape = v.find("shape");
  const json::Value* data = v.find("data");
  if (!name || !type || !shape || !data || !data->isArray() || !shape->isArray())
    return invalidArgument("tensor needs name, type, shape and data");
  std::vector<int64_t> dims;
  for (const json::Value& d : shape->items()) {
    int64_t x;
    if (!d.toInt64(&x)) return invalidArgument("bad dimension");
    dims.push_back(x);
  }
  DType dt = parseDType(type->text());
  if (dt == DType::kInvalid) return invalidArgument("unknown type " + type->text());
  *out = emptyTensor(TensorSpec(name->text(), dt, dims));
  if (data->items().size() != out->spec.elementCount())
    return invalidArgument("tensor '" + name->text() + "': data length does not match the shape");
  for (size_t k = 0; k < data->items().size(); ++k)
    if (!storeElement(data->items()[k], *out, k))
      return invalidArgument("tensor '" + name->text() + "': bad value " + std::to_string(k));
  return Status::OK();
}

Status parseSpecs(const json::Value* list, std::vector<TensorSpec>& out) {
  if (!list) return Status::OK();
  for (const json::Value& v : list->items()) {
    StatusOr<TensorSpec> s = TensorSpec::fromJSONValue(v);
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  return Status::OK();
}

Status parseCase(const json::Value& c, GoldenCase* out) {
  const json::Value* name = c.find("name");
  const json::Value* format = c.find("format");
  const json::Value* direction = c.find("direction");
  const json::Value* file = c.find("file");
  const json::Value* messages = c.find("messages");
  if (!name || !format || !direction || !file || !messages || !messages->isArray())
    return invalidArgument("a case needs name, format, direction, file and messages");
  out->name = name->text();
  if (!parseWireFormat(format->text(), &out->format)) return invalidArgument("unknown format " + format->text());
  if (direction->text() != "to_model" && direction->text() != "to_compiler")
    return invalidArgument("unknown direction " + direction->text());
  out->toModel = direction->text() == "to_model";
  out->file = file->text();
  MLBRIDGE_RETURN_IF_ERROR(parseSpecs(c.find("features"), out->specs.features));
  MLBRIDGE_RETURN_IF_ERROR(parseSpecs(c.find("advice"), out->specs.advice));
  for (const json::Value& m : messages->items()) {
    ExpectedMessage e;
    const json::Value* kind = m.find("kind");
    if (!kind) return invalidArgument("message without a kind");
    const std::string& k = kind->text();
    if (k == "header") {
      e.kind = DecodedMessage::Kind::kHeader;
    } else if (k == "context") {
      e.kind = DecodedMessage::Kind::kContext;
      if (const json::Value* n = m.find("name")) e.name = n->text();
    } else if (k == "end") {
      e.kind = DecodedMessage::Kind::kEnd;
    } else if (k == "observation" || k == "reply") {
      e.kind = k == "reply" ? DecodedMessage::Kind::kReply : DecodedMessage::Kind::kObservation;
      const json::Value* id = m.find("id");
      if (!id || !id->toInt64(&e.id)) return invalidArgument("message without an id");
      if (const json::Value* err = m.find("error")) {
        e.hasError = true;
        e.error = err->text();
      }
      if (const json::Value* ts = m.find("tensors")) {
        for (const json::Value& t : ts->items()) {
          e.tensors.emplace_back();
          MLBRIDGE_RETURN_IF_ERROR(parseTensor(t, &e.tensors.back()));
        }
      }
    } else {
      return invalidArgument("unknown message kind " + k);
    }
    out->messages.push_back(std::move(e));
  }
  std::string path = std::string(MLBRIDGE_VECTORS_DIR) + "/" + out->file;
  if (!readFile(path, &out->bytes)) return Status(StatusCode::kNotFound, "cannot read " + path);
  return Status::OK();
}

const Manifest& manifest() {
  static const Manifest* m = [] {
    auto* r = new Manifest;
    std::string path = std::string(MLBRIDGE_VECTORS_DIR) + "/manifest.json";
    std::string text;
    if (!readFile(path, &text)) {
      r->status = Status(StatusCode::kNotFound,
                         "cannot read " + path + ": generate it with python3 tests/vectors/generate.py");
      return r;
    }
    StatusOr<json::Value> v = json::parse(text);
    if (!v.ok()) {
      r->status = Status(v.status().code(), path + ": " + v.status().message());
      return r;
    }
    int64_t version = 0;
    const json::Value* ver = v->find("version");
    const json::Value* cases = v->find("cases");
    if (!ver || !ver->toInt64(&version) || version != 1 || !cases || !cases->isArray()) {
      r->status = invalidArgument(path + ": expected {\"version\":1,\"cases\":[...]}");
      return r;
    }
    for (const json::Value& c : cases->items()) {
      GoldenCase gc;
      Status s = parseCase(c, &gc);
      if (!s.ok()) {
        const json::Value* n = c.find("name");
        r->status = Status(s.code(), path + ": case " + (n ? n->text() : "?") + ": " + s.message());
        return r;
      }
      r->cases.push_back(std::move(gc));
    }
    return r;
  }();
  return *m;
}

#define REQUIRE_MANIFEST()                                                        \
  do {                                                                            \
    if (!manifest().status.ok()) {                                                \
      GTEST_FAIL() << manifest().status.toString();                               \
    }                                                                             \
  } while (0)

std::vector<TensorRef> refsOf(const ExpectedMessage& m) { return refs(m.tensors); }

// Where two byte strings first differ, with some hex around it.
std::string firstDifference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  auto around = [i](const std::string& s) {
    static const char* d = "0123456789abcdef";
    std::string out;
    size_t from = i >= 16 ? i - 16 : 0;
    for (size_t k = from; k < s.size() && k < i + 16; ++k) {
      if (k == i) out += "| ";
      out += d[static_cast<unsigned char>(s[k]) >> 4];
      out += d[static_cast<unsigned char>(s[k]) & 15];
      out += ' ';
    }
    return out;
  };
  return "sizes " + std::to_string(want.size()) + " (file) vs " + std::to_string(got.size()) +
         " (encoded); first difference at byte " + std::to_string(i) + "\n  file:    " + around(want) +
         "\n  encoded: " + around(got);
}

TEST(GoldenVectors, ManifestCoversEveryFormatAndDirection) {
  REQUIRE_MANIFEST();
  int seen[3][2] = {};
  for (const GoldenCase& c : manifest().cases) ++seen[static_cast<int>(c.format)][c.toModel ? 0 : 1];
  for (WireFormat f : {WireFormat::kBitstream, WireFormat::kJson, WireFormat::kProtobuf}) {
    EXPECT_GT(seen[static_cast<int>(f)][0], 0) << wireFormatName(f) << " to_model";
    EXPECT_GT(seen[static_cast<int>(f)][1], 0) << wireFormatName(f) << " to_compiler";
  }
}

TEST(GoldenVectors, EncodingGivesTheFileByteForByte) {
  REQUIRE_MANIFEST();
  for (const GoldenCase& c : manifest().cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<wire::Codec> codec = wire::makeCodec(c.format);
    OutputList out;
    Status s;
    for (const ExpectedMessage& m : c.messages) {
      std::vector<TensorRef> r = refsOf(m);
      Span<const TensorRef> ts(r.data(), r.size());
      switch (m.kind) {
        case DecodedMessage::Kind::kHeader: s = codec->encodeHeader(c.specs, out); break;
        case DecodedMessage::Kind::kContext: s = codec->encodeContext(m.name, out); break;
        case DecodedMessage::Kind::kObservation: s = codec->encodeObservation(m.id, ts, out); break;
        case DecodedMessage::Kind::kEnd: s = codec->encodeEnd(out); break;
        case DecodedMessage::Kind::kReply:
          s = m.hasError ? codec->encodeReplyError(m.id, m.error, out) : codec->encodeReply(m.id, ts, out);
          break;
        case DecodedMessage::Kind::kOutcome:  // training logs only: training_log_golden_test.cc
          s = unimplemented("outcome records are not in the manifest");
          break;
      }
      ASSERT_TRUE(s.ok()) << s.toString();
    }
    std::string got = out.flatten();
    EXPECT_TRUE(got == c.bytes) << c.file << ": " << firstDifference(c.bytes, got);
  }
}

void expectSameTensor(const OwnedTensor& want, const wire::DecodedTensor& got) {
  SCOPED_TRACE("tensor '" + want.spec.name() + "'");
  EXPECT_EQ(got.spec.name(), want.spec.name());
  EXPECT_EQ(got.spec.type(), want.spec.type());
  EXPECT_EQ(got.spec.shape(), want.spec.shape());
  if (got.spec.type() != want.spec.type() || got.spec.elementCount() != want.spec.elementCount()) return;
  if (want.spec.type() == DType::kString) {
    EXPECT_EQ(got.strings, want.strings);
  } else {
    ASSERT_EQ(got.bytes.size(), want.bytes.size());
    EXPECT_TRUE(sameValues(want.spec, want.ref().data, got.ref().data));
  }
}

TEST(GoldenVectors, DecodingGivesTheManifestValues) {
  REQUIRE_MANIFEST();
  for (const GoldenCase& c : manifest().cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<wire::Codec> codec = wire::makeCodec(c.format);
    std::vector<DecodedMessage> got;
    Status s = c.toModel ? codec->decodeToModelStream(bytesOf(c.bytes), got)
                         : codec->decodeToCompilerStream(bytesOf(c.bytes), c.specs, got);
    ASSERT_TRUE(s.ok()) << s.toString();
    // The bitstream's end of session is the end of the file: no message.
    std::vector<const ExpectedMessage*> want;
    for (const ExpectedMessage& m : c.messages)
      if (!(c.format == WireFormat::kBitstream && m.kind == DecodedMessage::Kind::kEnd)) want.push_back(&m);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE("message " + std::to_string(i));
      const ExpectedMessage& w = *want[i];
      const DecodedMessage& g = got[i];
      ASSERT_EQ(g.kind, w.kind);
      switch (w.kind) {
        case DecodedMessage::Kind::kHeader:
          EXPECT_EQ(g.specs.features, c.specs.features);
          EXPECT_EQ(g.specs.advice, c.specs.advice);
          break;
        case DecodedMessage::Kind::kContext: EXPECT_EQ(g.name, w.name); break;
        case DecodedMessage::Kind::kEnd: break;
        case DecodedMessage::Kind::kObservation:
        case DecodedMessage::Kind::kOutcome:
        case DecodedMessage::Kind::kReply:
          // Bitstream replies carry no id: the decoder numbers them.
          if (!(c.format == WireFormat::kBitstream && w.kind == DecodedMessage::Kind::kReply)) {
            EXPECT_EQ(g.id, w.id);
          }
          EXPECT_EQ(g.hasError, w.hasError);
          EXPECT_EQ(g.error, w.error);
          ASSERT_EQ(g.tensors.size(), w.tensors.size());
          for (size_t k = 0; k < w.tensors.size(); ++k) expectSameTensor(w.tensors[k], g.tensors[k]);
          break;
      }
    }
  }
}

// The runner's hot path: each reply of a to_compiler file, decoded straight
// into output buffers shaped by the case's advice specs.
TEST(GoldenVectors, RepliesDecodeThroughTheHotPath) {
  REQUIRE_MANIFEST();
  int checked = 0;
  for (const GoldenCase& c : manifest().cases) {
    if (c.toModel) continue;
    SCOPED_TRACE(c.name);
    std::unique_ptr<wire::Codec> codec = wire::makeCodec(c.format);
    std::vector<std::string> payloads;
    if (codec->framed()) {
      payloads = framePayloads(c.bytes, false);
    } else {
      size_t size = 0;
      for (const TensorSpec& s : c.specs.advice) size += s.byteSize();
      ASSERT_GT(size, 0u);
      for (size_t pos = 0; pos + size <= c.bytes.size(); pos += size) payloads.push_back(c.bytes.substr(pos, size));
    }
    ASSERT_EQ(payloads.size(), c.messages.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
      const ExpectedMessage& w = c.messages[i];
      SCOPED_TRACE("reply " + std::to_string(w.id));
      std::vector<OwnedTensor> outputs;
      if (!w.hasError && !w.tensors.empty())
        for (const TensorSpec& s : c.specs.advice) outputs.push_back(emptyTensor(s));
      std::vector<MutableTensorRef> r = mutableRefs(outputs);
      Status s = codec->decodeReply(bytesOf(payloads[i]), w.id, Span<const MutableTensorRef>(r.data(), r.size()));
      if (w.hasError) {
        EXPECT_EQ(s.code(), StatusCode::kAborted);
        EXPECT_EQ(s.message(), "model error: " + w.error);
        continue;
      }
      ASSERT_TRUE(s.ok()) << s.toString();
      ASSERT_EQ(outputs.size(), w.tensors.size());
      for (size_t k = 0; k < outputs.size(); ++k)
        EXPECT_TRUE(sameValues(w.tensors[k].spec, w.tensors[k].ref().data, outputs[k].ref().data))
            << w.tensors[k].spec.name();
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace testing
}  // namespace mlbridge
