// The bitstream format: LLVM's MLGO interactive / training-log layout.
#include <cstring>
#include <string>

#include "checked_math.h"
#include "json/json.h"
#include "wire/codec.h"

namespace mlbridge {
namespace wire {
namespace {

constexpr size_t kCopyBelowBytes = 256;

// Bytes of one record of these tensors; SIZE_MAX (more than any stream
// holds) if the sum of a hostile header's sizes overflows.
size_t totalBytes(const std::vector<TensorSpec>& specs) {
  size_t n = 0;
  for (const TensorSpec& s : specs)
    if (!checked::add(n, s.byteSize(), &n)) return SIZE_MAX;
  return n;
}

// Finds the end of the JSON line starting at `pos`; npos if there is none.
size_t lineEnd(Span<const uint8_t> bytes, size_t pos) {
  const void* nl = std::memchr(bytes.data() + pos, '\n', bytes.size() - pos);
  return nl ? static_cast<size_t>(static_cast<const uint8_t*>(nl) - bytes.data()) : std::string::npos;
}

Status parseSpecList(const json::Value* v, const char* key, std::vector<TensorSpec>& out) {
  if (!v) return Status::OK();
  std::vector<const json::Value*> items;
  if (v->isObject()) {
    items.push_back(v);  // LLVM writes a single advice spec as an object
  } else if (v->isArray()) {
    for (const json::Value& i : v->items()) items.push_back(&i);
  } else {
    return dataLoss(std::string("bitstream header: \"") + key + "\" is neither a spec nor a list of specs");
  }
  for (const json::Value* i : items) {
    StatusOr<TensorSpec> s = TensorSpec::fromJSONValue(*i);
    if (!s.ok()) return Status(s.status().code(), std::string("bitstream header: ") + s.status().message());
    out.push_back(std::move(*s));
  }
  return Status::OK();
}

class BitstreamCodec final : public Codec {
 public:
  WireFormat format() const override { return WireFormat::kBitstream; }

  Status checkSpecs(const SessionSpecs& specs) const override {
    MLBRIDGE_RETURN_IF_ERROR(validateSpecs(specs.features, "feature"));
    MLBRIDGE_RETURN_IF_ERROR(validateSpecs(specs.advice, "advice"));
    for (const auto* list : {&specs.features, &specs.advice})
      for (const TensorSpec& s : *list)
        if (s.type() == DType::kString)
          return unimplemented("the bitstream format cannot carry string tensor '" + s.name() +
                               "'; use json or protobuf");
    if (specs.advice.empty()) return invalidArgument("the bitstream format needs at least one advice tensor");
    return Status::OK();
  }

  Status encodeHeader(const SessionSpecs& specs, OutputList& out) override {
    MLBRIDGE_RETURN_IF_ERROR(checkSpecs(specs));
    std::string& s = out.scratch();
    size_t before = s.size();
    s += "{\"features\":[";
    for (size_t i = 0; i < specs.features.size(); ++i) {
      if (i) s += ',';
      specs.features[i].appendJSON(s);
    }
    s += "],\"advice\":";
    if (specs.advice.size() == 1) {
      specs.advice[0].appendJSON(s);
    } else {
      s += '[';
      for (size_t i = 0; i < specs.advice.size(); ++i) {
        if (i) s += ',';
        specs.advice[i].appendJSON(s);
      }
      s += ']';
    }
    s += "}\n";
    out.commitScratch(s.size() - before);
    return Status::OK();
  }

  Status encodeContext(std::string_view name, OutputList& out) override {
    std::string& s = out.scratch();
    size_t before = s.size();
    s += "{\"context\":";
    json::appendString(s, name);
    s += "}\n";
    out.commitScratch(s.size() - before);
    return Status::OK();
  }

  Status encodeObservation(int64_t id, Span<const TensorRef> features, OutputList& out) override {
    std::string& s = out.scratch();
    size_t before = s.size();
    s += "{\"observation\":";
    json::appendInt(s, id);
    s += "}\n";
    out.commitScratch(s.size() - before);
    for (const TensorRef& t : features) {
      if (t.spec->type() == DType::kString)
        return unimplemented("the bitstream format cannot carry string tensor '" + t.spec->name() + "'");
      // Small tensors (LLVM sends dozens of 8-byte scalars) are copied so the
      // message goes out as one buffer; large ones are referenced, not copied.
      if (t.spec->byteSize() <= kCopyBelowBytes)
        out.append(t.data, t.spec->byteSize());
      else
        out.appendRef(t.data, t.spec->byteSize());
    }
    out.appendByte('\n');
    return Status::OK();
  }

  // The end of a bitstream session is the end of the stream.
  Status encodeEnd(OutputList&) override { return Status::OK(); }

  Status encodeReply(int64_t, Span<const TensorRef> advice, OutputList& out) override {
    for (const TensorRef& t : advice) {
      if (t.spec->type() == DType::kString)
        return unimplemented("the bitstream format cannot carry string tensor '" + t.spec->name() + "'");
      out.appendRef(t.data, t.spec->byteSize());
    }
    return Status::OK();
  }

  Status encodeReplyError(int64_t, std::string_view, OutputList&) override {
    return unimplemented("the bitstream format cannot carry an error reply; close the channel instead");
  }

  Status decodeReply(Span<const uint8_t> payload, int64_t, Span<const MutableTensorRef> outputs) const override {
    size_t need = 0;
    for (const MutableTensorRef& o : outputs) need += o.spec->byteSize();
    if (payload.size() != need)
      return dataLoss("bitstream reply has " + std::to_string(payload.size()) + " bytes, expected " +
                      std::to_string(need));
    size_t pos = 0;
    for (const MutableTensorRef& o : outputs) {
      std::memcpy(o.data, payload.data() + pos, o.spec->byteSize());
      pos += o.spec->byteSize();
    }
    return Status::OK();
  }

  Status decodeToModelStream(Span<const uint8_t> bytes, std::vector<DecodedMessage>& out) const override {
    size_t pos = 0;
    SessionSpecs specs;
    std::vector<TensorSpec> score;
    bool haveHeader = false;
    while (pos < bytes.size()) {
      size_t eol = lineEnd(bytes, pos);
      if (eol == std::string::npos) return dataLoss("bitstream: truncated line at byte " + std::to_string(pos));
      std::string_view line(reinterpret_cast<const char*>(bytes.data() + pos), eol - pos);
      if (line.empty()) {  // LLVM writes "\n" between an observation and its outcome line
        pos = eol + 1;
        continue;
      }
      StatusOr<json::Value> v = json::parse(line);
      if (!v.ok()) return dataLoss("bitstream: bad JSON line at byte " + std::to_string(pos) + ": " + v.status().message());
      size_t lineStart = pos;
      pos = eol + 1;
      if (const json::Value* f = v->find("features")) {
        specs = SessionSpecs();
        score.clear();
        MLBRIDGE_RETURN_IF_ERROR(parseSpecList(f, "features", specs.features));
        MLBRIDGE_RETURN_IF_ERROR(parseSpecList(v->find("advice"), "advice", specs.advice));
        MLBRIDGE_RETURN_IF_ERROR(parseSpecList(v->find("score"), "score", score));
        DecodedMessage m;
        m.kind = DecodedMessage::Kind::kHeader;
        m.specs = specs;
        m.score = score;
        out.push_back(std::move(m));
        haveHeader = true;
        continue;
      }
      if (!haveHeader) return dataLoss("bitstream: stream does not start with a header");
      if (const json::Value* c = v->find("context")) {
        if (!c->isString()) return dataLoss("bitstream: context name is not a string");
        DecodedMessage m;
        m.kind = DecodedMessage::Kind::kContext;
        m.name = c->text();
        out.push_back(std::move(m));
        continue;
      }
      const json::Value* obs = v->find("observation");
      const json::Value* outcome = v->find("outcome");
      int64_t id = 0;
      if (obs && obs->toInt64(&id)) {
        size_t need = totalBytes(specs.features);
        if (bytes.size() - pos <= need)
          return dataLoss("bitstream: observation " + std::to_string(id) + " is truncated");
        DecodedMessage m;
        m.kind = DecodedMessage::Kind::kObservation;
        m.id = id;
        for (const TensorSpec& s : specs.features) {
          DecodedTensor t;
          t.spec = s;
          t.bytes.assign(bytes.data() + pos, bytes.data() + pos + s.byteSize());
          pos += s.byteSize();
          m.tensors.push_back(std::move(t));
        }
        if (bytes[pos] != '\n') return dataLoss("bitstream: observation " + std::to_string(id) + " does not end with a newline");
        ++pos;
        out.push_back(std::move(m));
        continue;
      }
      if (outcome && outcome->toInt64(&id)) {  // training logs: the score record
        size_t need = totalBytes(score);
        if (bytes.size() - pos <= need || bytes[pos + need] != '\n')
          return dataLoss("bitstream: outcome " + std::to_string(id) + " is truncated");
        DecodedMessage m;
        m.kind = DecodedMessage::Kind::kOutcome;
        m.id = id;
        for (const TensorSpec& s : score) {
          DecodedTensor t;
          t.spec = s;
          t.bytes.assign(bytes.data() + pos, bytes.data() + pos + s.byteSize());
          pos += s.byteSize();
          m.tensors.push_back(std::move(t));
        }
        ++pos;
        out.push_back(std::move(m));
        continue;
      }
      return dataLoss("bitstream: unexpected line at byte " + std::to_string(lineStart));
    }
    return Status::OK();
  }

  Status decodeToCompilerStream(Span<const uint8_t> bytes, const SessionSpecs& specs,
                                std::vector<DecodedMessage>& out) const override {
    size_t need = totalBytes(specs.advice);
    if (need == 0) return invalidArgument("bitstream replies need advice specs with a non-zero size");
    if (bytes.size() % need != 0)
      return dataLoss("bitstream replies: " + std::to_string(bytes.size()) + " bytes is not a multiple of " +
                      std::to_string(need));
    size_t pos = 0;
    for (int64_t id = 0; pos < bytes.size(); ++id) {
      DecodedMessage m;
      m.kind = DecodedMessage::Kind::kReply;
      m.id = id;
      for (const TensorSpec& s : specs.advice) {
        DecodedTensor t;
        t.spec = s;
        t.bytes.assign(bytes.data() + pos, bytes.data() + pos + s.byteSize());
        pos += s.byteSize();
        m.tensors.push_back(std::move(t));
      }
      out.push_back(std::move(m));
    }
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<Codec> makeBitstreamCodec() { return std::make_unique<BitstreamCodec>(); }

}  // namespace wire
}  // namespace mlbridge
