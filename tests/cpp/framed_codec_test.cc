// Behaviour shared by the two framed codecs (json, protobuf), run once per
// format: "Json/FramedCodecTest.*" and "Protobuf/FramedCodecTest.*".
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "codec_testing.h"
#include "wire/codec.h"

// ---- heap allocation counter ----------------------------------------------
// Replaces the global allocation functions for the whole test binary: they
// only count, then forward to malloc/free.
namespace {
std::atomic<size_t> g_heapAllocations{0};
}  // namespace

// noinline: once inlined, GCC pairs the malloc in new with the free in delete
// and warns about a mismatch that is not one.
#define MLBRIDGE_TEST_NOINLINE __attribute__((noinline))
MLBRIDGE_TEST_NOINLINE void* operator new(size_t n) {
  g_heapAllocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
MLBRIDGE_TEST_NOINLINE void* operator new[](size_t n) { return ::operator new(n); }
MLBRIDGE_TEST_NOINLINE void operator delete(void* p) noexcept { std::free(p); }
MLBRIDGE_TEST_NOINLINE void operator delete[](void* p) noexcept { std::free(p); }
MLBRIDGE_TEST_NOINLINE void operator delete(void* p, size_t) noexcept { std::free(p); }
MLBRIDGE_TEST_NOINLINE void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace mlbridge {
namespace testing {

size_t heapAllocations() { return g_heapAllocations.load(std::memory_order_relaxed); }

namespace {

using wire::Codec;
using wire::DecodedMessage;
using wire::OutputList;
using wire::SessionSpecs;

const DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kUInt8,
                            DType::kInt16,   DType::kUInt16,  DType::kInt32,  DType::kUInt32,
                            DType::kInt64,   DType::kUInt64,  DType::kBool,   DType::kString};
const std::vector<int64_t> kShapes[] = {{}, {1}, {5}, {2, 3}, {2, 3, 4}, {0}, {2, 0}, {1, 1, 1, 1, 17}};

class FramedCodecTest : public ::testing::TestWithParam<WireFormat> {
 protected:
  void SetUp() override { codec_ = wire::makeCodec(GetParam()); }

  // One encoded reply's payload.
  std::string replyPayload(int64_t id, const std::vector<OwnedTensor>& ts) {
    OutputList out;
    std::vector<TensorRef> r = refs(ts);
    Status s = codec_->encodeReply(id, Span<const TensorRef>(r.data(), r.size()), out);
    EXPECT_TRUE(s.ok()) << s.toString();
    return onlyPayload(out.flatten());
  }
  std::string errorPayload(int64_t id, const std::string& text) {
    OutputList out;
    Status s = codec_->encodeReplyError(id, text, out);
    EXPECT_TRUE(s.ok()) << s.toString();
    return onlyPayload(out.flatten());
  }
  Status decode(const std::string& payload, int64_t id, std::vector<OwnedTensor>& outputs) {
    std::vector<MutableTensorRef> r = mutableRefs(outputs);
    return codec_->decodeReply(bytesOf(payload), id, Span<const MutableTensorRef>(r.data(), r.size()));
  }

  std::unique_ptr<Codec> codec_;
};

TEST_P(FramedCodecTest, ReplyRoundTripsEveryDTypeAndShape) {
  for (DType t : kAllDTypes) {
    for (const auto& shape : kShapes) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " " + shapeToString(shape));
      std::vector<OwnedTensor> in = {sampleTensor("advice", t, shape, 3)};
      std::string payload = replyPayload(42, in);
      std::vector<OwnedTensor> got = emptyLike(in);
      Status s = decode(payload, 42, got);
      ASSERT_TRUE(s.ok()) << s.toString();
      EXPECT_TRUE(sameValues(in[0].spec, in[0].ref().data, got[0].ref().data));
    }
  }
}

TEST_P(FramedCodecTest, ObservationRoundTripsEveryDTypeAndShape) {
  SessionSpecs specs;
  std::vector<OwnedTensor> features;
  uint32_t seed = 0;
  for (DType t : kAllDTypes) {
    for (const auto& shape : kShapes) {
      ++seed;
      features.push_back(sampleTensor(std::string("f_") + dtypeName(t) + "_" + std::to_string(seed), t, shape, seed));
    }
  }
  for (const OwnedTensor& f : features) specs.features.push_back(f.spec);
  specs.advice.push_back(TensorSpec("a", DType::kFloat32, {1}));

  OutputList out;
  ASSERT_TRUE(codec_->encodeHeader(specs, out).ok());
  ASSERT_TRUE(codec_->encodeContext("main", out).ok());
  std::vector<TensorRef> r = refs(features);
  ASSERT_TRUE(codec_->encodeObservation(0, Span<const TensorRef>(r.data(), r.size()), out).ok());
  ASSERT_TRUE(codec_->encodeObservation(1, Span<const TensorRef>(r.data(), r.size()), out).ok());
  ASSERT_TRUE(codec_->encodeEnd(out).ok());
  std::string stream = out.flatten();

  std::vector<DecodedMessage> msgs;
  Status s = codec_->decodeToModelStream(bytesOf(stream), msgs);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(msgs.size(), 5u);
  EXPECT_EQ(msgs[0].kind, DecodedMessage::Kind::kHeader);
  EXPECT_EQ(msgs[0].specs.features, specs.features);
  EXPECT_EQ(msgs[0].specs.advice, specs.advice);
  EXPECT_EQ(msgs[1].kind, DecodedMessage::Kind::kContext);
  EXPECT_EQ(msgs[1].name, "main");
  for (int i = 0; i < 2; ++i) {
    const DecodedMessage& m = msgs[2 + i];
    EXPECT_EQ(m.kind, DecodedMessage::Kind::kObservation);
    EXPECT_EQ(m.id, i);
    ASSERT_EQ(m.tensors.size(), features.size());
    for (size_t k = 0; k < features.size(); ++k) {
      EXPECT_EQ(m.tensors[k].spec, features[k].spec);
      EXPECT_TRUE(sameValues(features[k].spec, features[k].ref().data, m.tensors[k].ref().data))
          << features[k].spec.name();
    }
  }
  EXPECT_EQ(msgs[4].kind, DecodedMessage::Kind::kEnd);
}

TEST_P(FramedCodecTest, MultipleTensorsInOneReply) {
  std::vector<OwnedTensor> in = {sampleTensor("a", DType::kInt64, {3}), sampleTensor("b", DType::kFloat32, {2, 2}),
                                 sampleTensor("c", DType::kString, {2}), sampleTensor("d", DType::kBool, {}),
                                 sampleTensor("e", DType::kUInt8, {0})};
  std::vector<OwnedTensor> got = emptyLike(in);
  Status s = decode(replyPayload(0, in), 0, got);
  ASSERT_TRUE(s.ok()) << s.toString();
  for (size_t i = 0; i < in.size(); ++i) EXPECT_TRUE(sameValues(in[i].spec, in[i].ref().data, got[i].ref().data));
}

TEST_P(FramedCodecTest, OneMebibyteTensors) {
  std::vector<OwnedTensor> in = {sampleTensor("f32", DType::kFloat32, {262144}, 5),
                                 sampleTensor("u8", DType::kUInt8, {1 << 20}, 6),
                                 sampleTensor("f64", DType::kFloat64, {512, 256}, 7)};
  std::vector<OwnedTensor> got = emptyLike(in);
  Status s = decode(replyPayload(9, in), 9, got);
  ASSERT_TRUE(s.ok()) << s.toString();
  for (size_t i = 0; i < in.size(); ++i) EXPECT_TRUE(sameValues(in[i].spec, in[i].ref().data, got[i].ref().data));

  // And through the recorded-stream decoder.
  OutputList out;
  SessionSpecs specs;
  for (const OwnedTensor& t : in) specs.features.push_back(t.spec);
  ASSERT_TRUE(codec_->encodeHeader(specs, out).ok());
  std::vector<TensorRef> r = refs(in);
  ASSERT_TRUE(codec_->encodeObservation(0, Span<const TensorRef>(r.data(), r.size()), out).ok());
  std::vector<DecodedMessage> msgs;
  ASSERT_TRUE(codec_->decodeToModelStream(bytesOf(out.flatten()), msgs).ok());
  ASSERT_EQ(msgs.size(), 2u);
  ASSERT_EQ(msgs[1].tensors.size(), 3u);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_TRUE(sameValues(in[i].spec, in[i].ref().data, msgs[1].tensors[i].ref().data));
}

TEST_P(FramedCodecTest, CompilerStreamRoundTrip) {
  std::vector<OwnedTensor> advice = {sampleTensor("a", DType::kInt64, {2}), sampleTensor("s", DType::kString, {1})};
  OutputList out;
  ASSERT_TRUE(codec_->encodeReply(-1, Span<const TensorRef>(), out).ok());  // header ack
  std::vector<TensorRef> r = refs(advice);
  ASSERT_TRUE(codec_->encodeReply(0, Span<const TensorRef>(r.data(), r.size()), out).ok());
  ASSERT_TRUE(codec_->encodeReplyError(1, "ValueError: bad \"input\"\n", out).ok());
  std::vector<DecodedMessage> msgs;
  Status s = codec_->decodeToCompilerStream(bytesOf(out.flatten()), SessionSpecs(), msgs);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0].kind, DecodedMessage::Kind::kReply);
  EXPECT_EQ(msgs[0].id, -1);
  EXPECT_TRUE(msgs[0].tensors.empty());
  EXPECT_FALSE(msgs[0].hasError);
  EXPECT_EQ(msgs[1].id, 0);
  ASSERT_EQ(msgs[1].tensors.size(), 2u);
  EXPECT_TRUE(sameValues(advice[0].spec, advice[0].ref().data, msgs[1].tensors[0].ref().data));
  EXPECT_EQ(msgs[1].tensors[1].strings, advice[1].strings);
  EXPECT_EQ(msgs[2].id, 1);
  EXPECT_TRUE(msgs[2].hasError);
  EXPECT_EQ(msgs[2].error, "ValueError: bad \"input\"\n");
}

TEST_P(FramedCodecTest, StreamsRefuseTheWrongDirection) {
  OutputList out;
  ASSERT_TRUE(codec_->encodeReply(0, Span<const TensorRef>(), out).ok());
  std::vector<DecodedMessage> msgs;
  std::string replies = out.flatten();
  // A model -> compiler stream has no preamble; put one in front.
  OutputList hdr;
  ASSERT_TRUE(codec_->encodeHeader(SessionSpecs(), hdr).ok());
  std::string toModel = hdr.flatten() + replies;
  Status s = codec_->decodeToModelStream(bytesOf(toModel), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("reply"), std::string::npos) << s.message();
  msgs.clear();
  OutputList ctx;
  ASSERT_TRUE(codec_->encodeContext("f", ctx).ok());
  s = codec_->decodeToCompilerStream(bytesOf(ctx.flatten()), SessionSpecs(), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("context"), std::string::npos) << s.message();
}

TEST_P(FramedCodecTest, HeaderAcknowledgment) {
  std::string ack = replyPayload(-1, {});
  std::vector<OwnedTensor> none;
  EXPECT_TRUE(decode(ack, -1, none).ok());
  Status s = decode(ack, 0, none);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("reply id -1"), std::string::npos) << s.message();
  // A refusal names the reason.
  s = decode(errorPayload(-1, "the model needs feature 'callee_users'"), -1, none);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "model error: the model needs feature 'callee_users'");
}

TEST_P(FramedCodecTest, ErrorReplies) {
  std::vector<OwnedTensor> outputs = {emptyTensor(TensorSpec("a", DType::kFloat32, {2}))};
  Status s = decode(errorPayload(3, "boom \xc3\xa9 \"quoted\"\n"), 3, outputs);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "model error: boom \xc3\xa9 \"quoted\"\n");
  // An error for another observation is a protocol error that still shows the text.
  s = decode(errorPayload(2, "boom"), 3, outputs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("reply id 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("observation 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("boom"), std::string::npos) << s.message();
  // An empty error text still reads as an error.
  s = decode(errorPayload(3, ""), 3, outputs);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  // An error with id -1 mid-session: the model ended the whole session.
  s = decode(errorPayload(-1, "bye"), 3, outputs);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.message();
  EXPECT_EQ(s.message(), "the model ended the session: bye");
}

// The checks both framed codecs end their reply decoding with (wire::checkReply),
// on what a decoder read, including what only json can lack.
TEST(ReplyCheck, EveryOutcome) {
  wire::ReplySummary r;
  r.sawReply = true;
  r.id = 7;
  r.tensors = 2;
  EXPECT_TRUE(wire::checkReply(r, 7, 2).ok());
  EXPECT_EQ(wire::checkReply(r, 7, 3).message(), "reply has 2 tensors, expected 3");
  EXPECT_EQ(wire::checkReply(r, 6, 2).message(), "reply id 7 does not answer observation 6");
  EXPECT_EQ(wire::checkReply(r, -1, 2).message(), "reply id 7 does not answer the header (id -1)");

  wire::ReplySummary noId = r;
  noId.hasId = false;
  EXPECT_EQ(wire::checkReply(noId, 7, 2).code(), StatusCode::kDataLoss);
  EXPECT_EQ(wire::checkReply(noId, 7, 2).message(), "reply has no \"id\"");

  wire::ReplySummary noTensors = r;
  noTensors.hasTensors = false;
  noTensors.tensors = 0;
  EXPECT_EQ(wire::checkReply(noTensors, 7, 2).message(), "reply has no \"tensors\"");
  EXPECT_TRUE(wire::checkReply(noTensors, 7, 0).ok());  // a header acknowledgment needs none

  wire::ReplySummary notReply = r;
  notReply.sawReply = false;
  EXPECT_EQ(wire::checkReply(notReply, 7, 2).message(), "the model's message is not a reply");

  wire::ReplySummary error = r;
  error.hasError = true;
  error.error = "no";
  EXPECT_EQ(wire::checkReply(error, 7, 2).code(), StatusCode::kAborted);
  EXPECT_EQ(wire::checkReply(error, 7, 2).message(), "model error: no");
  EXPECT_EQ(wire::checkReply(error, 6, 2).message(), "reply id 7 does not answer observation 6 (model error: no)");
  error.id = -1;
  EXPECT_EQ(wire::checkReply(error, 6, 2).code(), StatusCode::kUnavailable);
  EXPECT_EQ(wire::checkReply(error, -1, 2).code(), StatusCode::kAborted);  // the header itself refused
}

TEST_P(FramedCodecTest, WrongIdNameTypeShapeCount) {
  std::vector<OwnedTensor> in = {sampleTensor("prob", DType::kFloat32, {2, 3})};
  std::string payload = replyPayload(4, in);
  std::vector<OwnedTensor> ok = emptyLike(in);
  ASSERT_TRUE(decode(payload, 4, ok).ok());

  Status s = decode(payload, 3, ok);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("reply id 4"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("observation 3"), std::string::npos) << s.message();

  std::vector<OwnedTensor> wrongName = {emptyTensor(TensorSpec("decision", DType::kFloat32, {2, 3}))};
  s = decode(payload, 4, wrongName);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'prob'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'decision'"), std::string::npos) << s.message();

  std::vector<OwnedTensor> wrongType = {emptyTensor(TensorSpec("prob", DType::kInt32, {2, 3}))};
  s = decode(payload, 4, wrongType);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("prob"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("float"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("int32_t"), std::string::npos) << s.message();

  std::vector<OwnedTensor> wrongShape = {emptyTensor(TensorSpec("prob", DType::kFloat32, {3, 2}))};
  s = decode(payload, 4, wrongShape);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("[2,3]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[3,2]"), std::string::npos) << s.message();

  std::vector<OwnedTensor> two = {emptyTensor(in[0].spec), emptyTensor(TensorSpec("x", DType::kInt64, {1}))};
  s = decode(payload, 4, two);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("1 tensors, expected 2"), std::string::npos) << s.message();

  std::vector<OwnedTensor> none;
  s = decode(payload, 4, none);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("more than the 0 tensors"), std::string::npos) << s.message();
}

TEST_P(FramedCodecTest, EveryTruncatedReplyIsAnError) {
  std::vector<OwnedTensor> in = {sampleTensor("a", DType::kInt64, {3}), sampleTensor("s", DType::kString, {2}),
                                 sampleTensor("f", DType::kFloat64, {2})};
  std::string payload = replyPayload(5, in);
  std::vector<OwnedTensor> got = emptyLike(in);
  ASSERT_TRUE(decode(payload, 5, got).ok());
  for (size_t n = 0; n < payload.size(); ++n) {
    std::string cut = payload.substr(0, n);  // own buffer: ASan sees overreads
    EXPECT_FALSE(decode(cut, 5, got).ok()) << "prefix of " << n << " bytes accepted";
  }
}

TEST_P(FramedCodecTest, MutatedRepliesNeverCrash) {
  std::vector<OwnedTensor> in = {sampleTensor("a", DType::kInt64, {3}), sampleTensor("s", DType::kString, {2}),
                                 sampleTensor("f", DType::kFloat32, {2, 2}), sampleTensor("b", DType::kBool, {3}),
                                 sampleTensor("u", DType::kUInt8, {})};
  const std::string payload = replyPayload(5, in);
  std::vector<OwnedTensor> got = emptyLike(in);
  std::mt19937_64 rng(0x5eed);
  int errors = 0;
  for (int iter = 0; iter < 10000; ++iter) {
    std::string m = payload;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !m.empty(); ++e) {
      size_t pos = rng() % m.size();
      switch (rng() % 5) {
        case 0: m[pos] = static_cast<char>(rng()); break;                     // random byte
        case 1: m[pos] = static_cast<char>(m[pos] ^ (1 << (rng() % 8))); break;  // bit flip
        case 2: m.erase(pos, 1 + rng() % 8); break;
        case 3: m.insert(pos, std::string(1 + rng() % 4, static_cast<char>(rng()))); break;
        default: m.resize(pos); break;                                        // truncation
      }
    }
    if (iter % 100 == 0) {  // pure garbage
      m.assign(rng() % 64, '\0');
      for (char& c : m) c = static_cast<char>(rng());
    }
    Status s = decode(m, 5, got);
    if (!s.ok()) {
      ++errors;
      EXPECT_FALSE(s.message().empty());
    }
    // The cold path too, as a one-frame stream.
    std::string framed(4, '\0');
    for (int i = 0; i < 4; ++i) framed[i] = static_cast<char>(m.size() >> (8 * i));
    framed += m;
    std::vector<DecodedMessage> msgs;
    (void)codec_->decodeToCompilerStream(bytesOf(framed), SessionSpecs(), msgs);
  }
  EXPECT_GT(errors, 5000);
}

TEST_P(FramedCodecTest, MutatedStreamsNeverCrash) {
  SessionSpecs specs;
  specs.features = {TensorSpec("x", DType::kFloat32, {2}), TensorSpec("s", DType::kString, {1})};
  specs.advice = {TensorSpec("y", DType::kInt64, {1}, 0)};
  std::vector<OwnedTensor> f = {sampleTensor("x", DType::kFloat32, {2}), sampleTensor("s", DType::kString, {1})};
  OutputList out;
  ASSERT_TRUE(codec_->encodeHeader(specs, out).ok());
  ASSERT_TRUE(codec_->encodeContext("fn", out).ok());
  std::vector<TensorRef> r = refs(f);
  ASSERT_TRUE(codec_->encodeObservation(0, Span<const TensorRef>(r.data(), r.size()), out).ok());
  ASSERT_TRUE(codec_->encodeEnd(out).ok());
  const std::string stream = out.flatten();
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 5000; ++iter) {
    std::string m = stream;
    size_t pos = rng() % m.size();
    if (rng() % 4 == 0) m.resize(pos);
    else m[pos] = static_cast<char>(rng());
    std::vector<DecodedMessage> msgs;
    (void)codec_->decodeToModelStream(bytesOf(m), msgs);
  }
}

TEST_P(FramedCodecTest, StreamFramingErrors) {
  OutputList out;
  ASSERT_TRUE(codec_->encodeHeader(SessionSpecs(), out).ok());
  ASSERT_TRUE(codec_->encodeContext("fn", out).ok());
  const std::string stream = out.flatten();
  std::vector<DecodedMessage> msgs;
  ASSERT_TRUE(codec_->decodeToModelStream(bytesOf(stream), msgs).ok());

  // Truncated frames, including inside the length prefix.
  for (size_t cut = 1; cut < 8; ++cut) {
    msgs.clear();
    Status s = codec_->decodeToModelStream(bytesOf(stream.substr(0, stream.size() - cut)), msgs);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << cut;
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  }
  // Truncated preamble, missing preamble.
  Status s = codec_->decodeToModelStream(bytesOf(stream.substr(0, 5)), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  s = codec_->decodeToModelStream(bytesOf(stream.substr(8)), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("MLBR"), std::string::npos) << s.message();
  // Unknown protocol version: the error names both.
  std::string v2 = stream;
  v2[4] = 2;
  s = codec_->decodeToModelStream(bytesOf(v2), msgs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("version 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("version 1"), std::string::npos) << s.message();
  // Another format's stream.
  std::string other = stream;
  other[5] = GetParam() == WireFormat::kJson ? 'P' : 'J';
  s = codec_->decodeToModelStream(bytesOf(other), msgs);
  EXPECT_FALSE(s.ok());
  // A frame length over the limit is refused before anything else.
  std::string huge = stream.substr(0, 8) + std::string("\xff\xff\xff\x7f", 4) + "x";
  s = codec_->decodeToModelStream(bytesOf(huge), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  // Model -> compiler streams: a truncated frame.
  OutputList replies;
  ASSERT_TRUE(codec_->encodeReplyError(0, "x", replies).ok());
  std::string rs = replies.flatten();
  s = codec_->decodeToCompilerStream(bytesOf(rs.substr(0, rs.size() - 1)), SessionSpecs(), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
}

// The stream reader the two codecs share (wire::FramedCodec): a message's
// error is given whole, after the format and the byte its frame starts at;
// only the compiler -> model stream has preambles; a preamble later in the
// stream is checked as the first one is.
TEST_P(FramedCodecTest, StreamErrorsNameTheFormatAndTheFrame) {
  const std::string format = GetParam() == WireFormat::kJson ? "json" : "protobuf";
  OutputList hdr;
  ASSERT_TRUE(codec_->encodeHeader(SessionSpecs(), hdr).ok());
  const std::string header = hdr.flatten();
  OutputList rep;
  ASSERT_TRUE(codec_->encodeReply(3, Span<const TensorRef>(), rep).ok());
  const std::string reply = rep.flatten();
  std::vector<DecodedMessage> msgs;

  // A reply after the header: its frame starts right after the header's.
  Status s = codec_->decodeToModelStream(bytesOf(header + reply), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), format + " stream: frame at byte " + std::to_string(header.size()) +
                             ": unexpected reply message in a compiler -> model stream");
  // A context as the second frame of a model -> compiler stream.
  OutputList ctx;
  ASSERT_TRUE(codec_->encodeContext("f", ctx).ok());
  msgs.clear();
  s = codec_->decodeToCompilerStream(bytesOf(reply + ctx.flatten()), SessionSpecs(), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), format + " stream: frame at byte " + std::to_string(reply.size()) +
                             ": unexpected context message in a model -> compiler stream");
  EXPECT_EQ(msgs.size(), 1u);  // the reply before it was decoded

  // Model -> compiler streams have no preamble: "MLBR" there is a frame length
  // (over the limit), not a session start.
  const std::string preamble = header.substr(0, wire::kPreambleSize);
  msgs.clear();
  s = codec_->decodeToCompilerStream(bytesOf(preamble + reply), SessionSpecs(), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(format + " stream: frame at byte 0 announces"), std::string::npos) << s.message();
  EXPECT_TRUE(msgs.empty());

  // A second session's preamble is checked as the first one: version, format.
  std::string v2 = header;
  v2[4] = 2;
  msgs.clear();
  s = codec_->decodeToModelStream(bytesOf(header + v2), msgs);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.message();
  EXPECT_EQ(msgs.size(), 1u);
  std::string other = header;
  other[5] = GetParam() == WireFormat::kJson ? 'P' : 'J';
  s = codec_->decodeToModelStream(bytesOf(header + other), msgs);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  s = codec_->decodeToModelStream(bytesOf(header + preamble.substr(0, 5)), msgs);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), format + " stream: truncated preamble at byte " + std::to_string(header.size()));
}

TEST_P(FramedCodecTest, ANewPreambleStartsANewSession) {
  SessionSpecs a, b;
  a.features = {TensorSpec("x", DType::kInt32, {1})};
  b.features = {TensorSpec("y", DType::kFloat64, {2})};
  OutputList out;
  ASSERT_TRUE(codec_->encodeHeader(a, out).ok());
  ASSERT_TRUE(codec_->encodeEnd(out).ok());
  ASSERT_TRUE(codec_->encodeHeader(b, out).ok());
  std::vector<DecodedMessage> msgs;
  Status s = codec_->decodeToModelStream(bytesOf(out.flatten()), msgs);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0].specs.features, a.features);
  EXPECT_EQ(msgs[1].kind, DecodedMessage::Kind::kEnd);
  EXPECT_EQ(msgs[2].specs.features, b.features);
}

TEST_P(FramedCodecTest, HeaderRefusesBadSpecs) {
  SessionSpecs dup;
  dup.features = {TensorSpec("x", DType::kInt32, {1}), TensorSpec("x", DType::kInt32, {1})};
  OutputList out;
  Status s = codec_->encodeHeader(dup, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s.message();
  SessionSpecs neg;
  neg.advice = {TensorSpec("y", DType::kInt32, {-1})};
  EXPECT_FALSE(codec_->encodeHeader(neg, out).ok());
  EXPECT_TRUE(codec_->checkSpecs(SessionSpecs()).ok());
}

TEST_P(FramedCodecTest, TextFieldsAreValidUtf8) {
  // Informative text is never refused: invalid bytes become U+FFFD.
  OutputList out;
  ASSERT_TRUE(codec_->encodeHeader(SessionSpecs(), out).ok());
  ASSERT_TRUE(codec_->encodeContext("fn\xff\xc3", out).ok());
  std::vector<DecodedMessage> msgs;
  Status s = codec_->decodeToModelStream(bytesOf(out.flatten()), msgs);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[1].name, "fn\xef\xbf\xbd\xef\xbf\xbd");
  std::vector<OwnedTensor> none;
  s = decode(errorPayload(0, "bad \xe9t\xe9"), 0, none);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "model error: bad \xef\xbf\xbdt\xef\xbf\xbd");
  // Names are identifiers: refused.
  SessionSpecs bad;
  bad.features = {TensorSpec("x\xff", DType::kInt32, {1})};
  s = codec_->encodeHeader(bad, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("UTF-8"), std::string::npos) << s.message();
  SessionSpecs badAdvice;
  badAdvice.advice = {TensorSpec("y\xc3", DType::kInt32, {1})};
  s = codec_->checkSpecs(badAdvice);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "tensor name 'y\xc3' is not valid UTF-8");
}

TEST_P(FramedCodecTest, HotPathsDoNotAllocate) {
  std::vector<OwnedTensor> in = {sampleTensor("a", DType::kFloat32, {1000}), sampleTensor("b", DType::kInt64, {7}),
                                 sampleTensor("c", DType::kBool, {3}), sampleTensor("d", DType::kFloat64, {})};
  std::string payload = replyPayload(11, in);
  std::vector<OwnedTensor> got = emptyLike(in);
  std::vector<MutableTensorRef> outRefs = mutableRefs(got);
  Span<const MutableTensorRef> outputs(outRefs.data(), outRefs.size());
  std::vector<TensorRef> inRefs = refs(in);
  Span<const TensorRef> inputs(inRefs.data(), inRefs.size());
  OutputList out;
  ASSERT_TRUE(codec_->encodeObservation(0, inputs, out).ok());  // warm-up
  ASSERT_TRUE(codec_->decodeReply(bytesOf(payload), 11, outputs).ok());

  size_t before = heapAllocations();
  for (int i = 0; i < 10; ++i) {
    out.clear();
    Status e = codec_->encodeObservation(i, inputs, out);
    Status d = codec_->decodeReply(bytesOf(payload), 11, outputs);
    if (!e.ok() || !d.ok()) FAIL() << e.toString() << d.toString();
  }
  EXPECT_EQ(heapAllocations() - before, 0u);
  EXPECT_TRUE(sameValues(in[0].spec, in[0].ref().data, got[0].ref().data));
}

INSTANTIATE_TEST_SUITE_P(Json, FramedCodecTest, ::testing::Values(WireFormat::kJson));
INSTANTIATE_TEST_SUITE_P(Protobuf, FramedCodecTest, ::testing::Values(WireFormat::kProtobuf));

}  // namespace
}  // namespace testing
}  // namespace mlbridge
