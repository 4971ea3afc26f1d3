// The json wire format: canonical bytes and the lenient-but-exact reply reader.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "codec_testing.h"
#include "wire/codec.h"

namespace mlbridge {
namespace testing {
namespace {

using wire::DecodedMessage;
using wire::OutputList;
using wire::SessionSpecs;

std::string le32(uint32_t n) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(n >> (8 * i));
  return s;
}

class JsonCodecTest : public ::testing::Test {
 protected:
  std::unique_ptr<wire::Codec> codec_ = wire::makeJsonCodec();

  std::string observation(int64_t id, const std::vector<OwnedTensor>& ts) {
    OutputList out;
    std::vector<TensorRef> r = refs(ts);
    Status s = codec_->encodeObservation(id, Span<const TensorRef>(r.data(), r.size()), out);
    EXPECT_TRUE(s.ok()) << s.toString();
    return out.flatten();
  }
  // Decodes `json` as a reply into one output of `spec`.
  Status decodeInto(const std::string& json, OwnedTensor& out, int64_t id = 0) {
    MutableTensorRef r = out.mutableRef();
    return codec_->decodeReply(bytesOf(json), id, Span<const MutableTensorRef>(&r, 1));
  }
  // A canonical one-tensor reply with `data` spliced in.
  static std::string reply(const std::string& name, const char* type, const std::string& shape,
                           const std::string& data) {
    return "{\"reply\":{\"id\":0,\"tensors\":[{\"name\":\"" + name + "\",\"type\":\"" + type + "\",\"shape\":" +
           shape + ",\"data\":" + data + "}]}}";
  }
};

// ---- canonical bytes ------------------------------------------------------

TEST_F(JsonCodecTest, CanonicalObservationFromTheProtocol) {
  OwnedTensor x = emptyTensor(TensorSpec("x", DType::kFloat32, {2}));
  x.set<float>(0, 1.5f);
  x.set<float>(1, -0.25f);
  const std::string payload = R"({"observation":{"id":0,"tensors":[{"name":"x","type":"float","shape":[2],"data":[1.5,-0.25]}]}})";
  EXPECT_EQ(observation(0, {x}), le32(static_cast<uint32_t>(payload.size())) + payload);
}

TEST_F(JsonCodecTest, CanonicalHeaderContextEndReplies) {
  SessionSpecs specs;
  specs.features = {TensorSpec("callee_users", DType::kInt64, {1}), TensorSpec("m", DType::kFloat32, {2, 3})};
  specs.advice = {TensorSpec("inlining_decision", DType::kInt64, {})};
  OutputList out;
  ASSERT_TRUE(codec_->encodeHeader(specs, out).ok());
  const std::string header =
      R"({"header":{"version":1,"features":[{"name":"callee_users","type":"int64_t","port":0,"shape":[1]},)"
      R"({"name":"m","type":"float","port":0,"shape":[2,3]}],)"
      R"("advice":[{"name":"inlining_decision","type":"int64_t","port":0,"shape":[]}]}})";
  EXPECT_EQ(out.flatten(), std::string("MLBR\x01J\0\0", 8) + le32(static_cast<uint32_t>(header.size())) + header);

  auto one = [&](auto encode, const std::string& want) {
    OutputList o;
    ASSERT_TRUE(encode(o).ok());
    EXPECT_EQ(o.flatten(), le32(static_cast<uint32_t>(want.size())) + want);
  };
  one([&](OutputList& o) { return codec_->encodeContext("main", o); }, R"({"context":{"name":"main"}})");
  one([&](OutputList& o) { return codec_->encodeContext("", o); }, R"({"context":{"name":""}})");
  one([&](OutputList& o) { return codec_->encodeContext("a\"b\n\x01\xc3\xa9", o); },
      "{\"context\":{\"name\":\"a\\\"b\\n\\u0001\xc3\xa9\"}}");
  one([&](OutputList& o) { return codec_->encodeEnd(o); }, R"({"end":{}})");
  one([&](OutputList& o) { return codec_->encodeReply(-1, Span<const TensorRef>(), o); },
      R"({"reply":{"id":-1,"tensors":[]}})");
  one([&](OutputList& o) { return codec_->encodeReplyError(0, "ValueError: bad input", o); },
      R"({"reply":{"id":0,"error":"ValueError: bad input"}})");
  OwnedTensor d = emptyTensor(TensorSpec("inlining_decision", DType::kInt64, {}));
  d.set<int64_t>(0, 1);
  one([&](OutputList& o) {
        TensorRef r = d.ref();
        return codec_->encodeReply(7, Span<const TensorRef>(&r, 1), o);
      },
      R"({"reply":{"id":7,"tensors":[{"name":"inlining_decision","type":"int64_t","shape":[],"data":[1]}]}})");
}

TEST_F(JsonCodecTest, CanonicalValuesOfEveryDType) {
  struct Case {
    DType type;
    std::vector<int64_t> shape;
    const char* data;
  };
  OwnedTensor f = sampleTensor("t", DType::kFloat32, {15});
  EXPECT_NE(observation(0, {f}).find(
                R"("data":[0.0,-0.0,1.0,-1.5,0.1,3.4028235e+38,-3.4028235e+38,1e-45,1.1754944e-38,"Infinity","-Infinity","NaN",123456790.0,1e-05,1e+16])"),
            std::string::npos)
      << observation(0, {f});
  OwnedTensor d = sampleTensor("t", DType::kFloat64, {13});
  EXPECT_NE(observation(0, {d}).find(
                R"("data":[0.0,-0.0,1.0,-1.5,0.1,1.7976931348623157e+308,-1.7976931348623157e+308,5e-324,"Infinity","-Infinity","NaN",1e+22,5e-324])"),
            std::string::npos)
      << observation(0, {d});
  const std::pair<DType, const char*> ints[] = {
      {DType::kInt8, "[-128,127"},          {DType::kUInt8, "[0,255"},
      {DType::kInt16, "[-32768,32767"},     {DType::kUInt16, "[0,65535"},
      {DType::kInt32, "[-2147483648,2147483647"}, {DType::kUInt32, "[0,4294967295"},
      {DType::kInt64, "[-9223372036854775808,9223372036854775807"},
      {DType::kUInt64, "[0,18446744073709551615"},
  };
  for (const auto& c : ints) {
    std::string s = observation(0, {sampleTensor("t", c.first, {4})});
    EXPECT_NE(s.find(std::string("\"data\":") + c.second + ","), std::string::npos) << s;
    EXPECT_NE(s.find(std::string("\"type\":\"") + dtypeName(c.first) + "\""), std::string::npos) << s;
  }
  OwnedTensor b = emptyTensor(TensorSpec("t", DType::kBool, {3}));
  b.bytes = {1, 0, 1};
  EXPECT_NE(observation(0, {b}).find(R"("data":[true,false,true])"), std::string::npos);
  OwnedTensor s = emptyTensor(TensorSpec("t", DType::kString, {3}));
  s.strings = {"", "a\"\\", "\xc3\xa9\t"};
  EXPECT_NE(observation(0, {s}).find("\"data\":[\"\",\"a\\\"\\\\\",\"\xc3\xa9\\t\"]"), std::string::npos);
  OwnedTensor e = emptyTensor(TensorSpec("t", DType::kInt32, {2, 0}));
  EXPECT_NE(observation(0, {e}).find(R"("shape":[2,0],"data":[])"), std::string::npos);
}

TEST_F(JsonCodecTest, StringTensorsMustBeText) {
  OwnedTensor s = emptyTensor(TensorSpec("words", DType::kString, {2}));
  s.strings = {"ok", "bytes \xff\x00"};
  OutputList out;
  TensorRef r = s.ref();
  Status st = codec_->encodeObservation(0, Span<const TensorRef>(&r, 1), out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'words' element 1"), std::string::npos) << st.message();
  EXPECT_EQ(out.totalBytes(), 0u);  // nothing half-written
}

TEST_F(JsonCodecTest, FramesAppendToPreviousContent) {
  OutputList out;
  out.append("junk");
  ASSERT_TRUE(codec_->encodeEnd(out).ok());
  ASSERT_TRUE(codec_->encodeEnd(out).ok());
  EXPECT_EQ(out.flatten(), "junk" + le32(10) + R"({"end":{}})" + le32(10) + R"({"end":{}})");
}

// ---- lenient reading -------------------------------------------------------

TEST_F(JsonCodecTest, AcceptsAnyKeyOrderWhiteSpaceEscapesAndUnknownKeys) {
  OwnedTensor out = emptyTensor(TensorSpec("prob\xc3\xa9", DType::kFloat32, {2}));
  const std::string json = " \n{ \"x-extra\" : {\"deep\":[1,{\"a\":null},\"s\"]}, \"re\\u0070ly\" :\t{ \"tensors\" : [ {"
                           "\"data\" : [ 1e0 , -2.5E-1 ], \"unknown\": [[[]]], \"sh\\u0061pe\": [ 2 ],"
                           "\"type\":\"float32\", \"name\":\"prob\\u00e9\" } ], \"note\": \"hi\", \"id\" : 0 ,"
                           "\"error\": null } , \"z\": true }\r\n";
  Status s = decodeInto(json, out);
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_EQ(out.at<float>(0), 1.0f);
  EXPECT_EQ(out.at<float>(1), -0.25f);
}

TEST_F(JsonCodecTest, NumberFormsPerDType) {
  OwnedTensor f = emptyTensor(TensorSpec("t", DType::kFloat32, {7}));
  ASSERT_TRUE(decodeInto(reply("t", "float", "[7]", R"([3, -0, 1e-50, "NaN", Infinity, "-Infinity", 0.1])"), f).ok());
  EXPECT_EQ(f.at<float>(0), 3.0f);
  EXPECT_TRUE(std::signbit(f.at<float>(1)));
  EXPECT_EQ(f.at<float>(2), 0.0f);  // underflow rounds to zero
  EXPECT_TRUE(std::isnan(f.at<float>(3)));
  EXPECT_EQ(f.at<float>(4), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f.at<float>(5), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(f.at<float>(6), 0.1f);  // rounded once, from the text
  // A value just above float's max that still rounds to it, and one that does not.
  ASSERT_TRUE(decodeInto(reply("t", "float", "[7]", "[3.4028235677973366e38,0,0,0,0,0,0]"), f).ok());
  EXPECT_EQ(f.at<float>(0), std::numeric_limits<float>::max());

  OwnedTensor d = emptyTensor(TensorSpec("t", DType::kFloat64, {3}));
  ASSERT_TRUE(decodeInto(reply("t", "double", "[3]", "[18446744073709551616, 5e-324, -1.5e300]"), d).ok());
  EXPECT_EQ(d.at<double>(0), 18446744073709551616.0);
  EXPECT_EQ(d.at<double>(1), 5e-324);
  EXPECT_EQ(d.at<double>(2), -1.5e300);

  OwnedTensor i = emptyTensor(TensorSpec("t", DType::kInt64, {4}));
  ASSERT_TRUE(decodeInto(reply("t", "int64_t", "[4]", "[-9223372036854775808, 3.0, 1e3, 9223372036854775807]"), i).ok());
  EXPECT_EQ(i.at<int64_t>(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i.at<int64_t>(1), 3);
  EXPECT_EQ(i.at<int64_t>(2), 1000);
  EXPECT_EQ(i.at<int64_t>(3), std::numeric_limits<int64_t>::max());

  OwnedTensor u = emptyTensor(TensorSpec("t", DType::kUInt64, {2}));
  ASSERT_TRUE(decodeInto(reply("t", "uint64_t", "[2]", "[18446744073709551615, -0]"), u).ok());
  EXPECT_EQ(u.at<uint64_t>(0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(u.at<uint64_t>(1), 0u);

  OwnedTensor b = emptyTensor(TensorSpec("t", DType::kBool, {4}));
  ASSERT_TRUE(decodeInto(reply("t", "bool", "[4]", "[true,false,1,0]"), b).ok());
  EXPECT_EQ(b.bytes, (std::vector<unsigned char>{1, 0, 1, 0}));

  OwnedTensor s = emptyTensor(TensorSpec("t", DType::kString, {3}));
  ASSERT_TRUE(decodeInto(reply("t", "string", "[3]", R"(["", "a\"\\\/\u00e9\ud83d\ude00", "x"])"), s).ok());
  EXPECT_EQ(s.strings, (std::vector<std::string>{"", "a\"\\/\xc3\xa9\xf0\x9f\x98\x80", "x"}));
}

TEST_F(JsonCodecTest, RefusesValuesThatDoNotFit) {
  struct Case {
    DType type;
    const char* data;
    const char* mention;
  };
  const Case cases[] = {
      {DType::kUInt8, "[300]", "300 is not"},
      {DType::kUInt8, "[-1]", "-1 is not"},
      {DType::kInt8, "[128]", "128 is not"},
      {DType::kInt16, "[-32769]", "-32769 is not"},
      {DType::kUInt32, "[4294967296]", "4294967296 is not"},
      {DType::kInt64, "[2.5]", "2.5 is not"},
      {DType::kInt64, "[9223372036854775808]", "9223372036854775808 is not"},
      {DType::kUInt64, "[18446744073709551616]", "18446744073709551616 is not"},
      {DType::kInt32, "[1e-3]", "1e-3 is not"},
      {DType::kInt32, "[NaN]", "NaN is not"},
      {DType::kInt32, "[\"NaN\"]", "\"NaN\""},
      {DType::kInt32, "[true]", "value 0"},
      {DType::kInt32, "[null]", "value 0"},
      {DType::kFloat32, "[1e39]", "1e39 is not"},
      {DType::kFloat32, "[\"nan\"]", "\"nan\""},
      {DType::kFloat64, "[1e400]", "1e400 is not"},
      {DType::kFloat64, "[\"1.5\"]", "\"1.5\""},
      {DType::kFloat64, "[[1.5]]", "value 0"},
      {DType::kFloat64, "[{}]", "value 0"},
      {DType::kBool, "[2]", "2 is not"},
      {DType::kBool, "[\"true\"]", "value 0"},
      {DType::kBool, "[1.0]", "1.0 is not"},
      {DType::kString, "[1]", "value 0"},
      {DType::kString, "[null]", "value 0"},
  };
  for (const Case& c : cases) {
    OwnedTensor t = emptyTensor(TensorSpec("val", c.type, {1}));
    Status s = decodeInto(reply("val", dtypeName(c.type), "[1]", c.data), t);
    EXPECT_FALSE(s.ok()) << dtypeName(c.type) << " accepted " << c.data;
    EXPECT_NE(s.message().find("'val'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(c.mention), std::string::npos) << dtypeName(c.type) << " " << c.data << ": " << s.message();
  }
}

TEST_F(JsonCodecTest, RefusesMalformedTensors) {
  OwnedTensor t = emptyTensor(TensorSpec("t", DType::kInt32, {2}));
  const std::pair<std::string, const char*> cases[] = {
      {reply("t", "int32_t", "[2]", "[1,2,3]"), "more than the 2 values"},
      {reply("t", "int32_t", "[2]", "[1]"), "1 values, expected 2"},
      {reply("t", "int32_t", "[2]", "[]"), "0 values, expected 2"},
      {reply("t", "int32_t", "[2]", "1"), "expected '['"},
      {reply("t", "int32_t", "[2]", "[1,]"), "expected a number"},
      {reply("t", "int128_t", "[2]", "[1,2]"), "unknown type \"int128_t\""},
      {reply("t", "int32_t", "[2.5]", "[1,2]"), "bad dimension"},
      {reply("t", "int32_t", "[1,2]", "[1,2]"), "[1,2]"},
      {reply("u", "int32_t", "[2]", "[1,2]"), "'u'"},
      {R"({"reply":{"id":0,"tensors":[{"type":"int32_t","shape":[2],"data":[1,2]}]}})", "no \"name\""},
      {R"({"reply":{"id":0,"tensors":[{"name":"t","shape":[2],"data":[1,2]}]}})", "no \"type\""},
      {R"({"reply":{"id":0,"tensors":[{"name":"t","type":"int32_t","data":[1,2]}]}})", "no \"shape\""},
      {R"({"reply":{"id":0,"tensors":[{"name":"t","type":"int32_t","shape":[2]}]}})", "no \"data\""},
      {R"({"reply":{"id":0,"tensors":[{"name":1,"type":"int32_t","shape":[2],"data":[1,2]}]}})", "expected a string"},
      {R"({"reply":{"id":0,"tensors":[]}})", "0 tensors, expected 1"},
      {R"({"reply":{"id":0}})", "no \"tensors\""},
      {R"({"reply":{"tensors":[]}})", "no \"id\""},
      {R"({"reply":{"id":0.5,"tensors":[]}})", "not an int64"},
      {R"({"reply":{"id":"0","tensors":[]}})", "expected a number"},
      {R"({"observation":{"id":0,"tensors":[]}})", "kind \"observation\""},
      {R"({"header":{}})", "kind \"header\""},
      {R"({"other":{}})", "not a reply"},
      {R"({})", "not a reply"},
      {R"([])", "expected '{'"},
      {R"({"reply":{"id":0,"tensors":[]}} x)", "after the message"},
      {R"({"reply":{"id":0,"tensors":[]}}})", "after the message"},
      {"", "end of the message"},
      {R"({"reply":{"id":0,"error":1}})", "expected a string"},
      {"{\"reply\":{\"id\":0,\"error\":\"bad\xff\"}}", "UTF-8"},
      {R"({"reply":{"id":0,"error":"\ud800"}})", "surrogate"},
  };
  for (const auto& c : cases) {
    Status s = decodeInto(c.first, t);
    EXPECT_FALSE(s.ok()) << "accepted " << c.first;
    EXPECT_NE(s.message().find(c.second), std::string::npos) << c.first << "\n -> " << s.message();
  }
}

TEST_F(JsonCodecTest, DeeplyNestedUnknownValuesAreRefusedNotACrash) {
  OwnedTensor t = emptyTensor(TensorSpec("t", DType::kInt32, {1}));
  std::string deep = "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "," +
                     R"("reply":{"id":0,"tensors":[{"name":"t","type":"int32_t","shape":[1],"data":[1]}]}})";
  Status s = decodeInto(deep, t);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("too deep"), std::string::npos) << s.message();
  std::string ok = "{\"x\":" + std::string(200, '[') + std::string(200, ']') + "," +
                   R"("reply":{"id":0,"tensors":[{"name":"t","type":"int32_t","shape":[1],"data":[1]}]}})";
  EXPECT_TRUE(decodeInto(ok, t).ok());
}

TEST_F(JsonCodecTest, ErrorTextIsUnescaped) {
  OwnedTensor t = emptyTensor(TensorSpec("t", DType::kInt32, {1}));
  Status s = decodeInto(R"({"reply":{"error":"Value\u0045rror: \"x\"\n","id":0}})", t);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "model error: ValueError: \"x\"\n");
  // An empty text is still an error (the key is there).
  s = decodeInto(R"({"reply":{"id":0,"error":""}})", t);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
}

TEST_F(JsonCodecTest, ColdDecoderAcceptsWhatThePythonWriterMayOmit) {
  std::string stream = std::string("MLBR\x01J\0\0", 8);
  for (const std::string& p : {std::string(R"({"header":{"features":[{"name":"a","type":"int8","shape":[1]}]}})"),
                               std::string(R"({"context":{}})"), std::string(R"({"observation":{"id":3}})"),
                               std::string(R"({"end":{},"extra":1})")})
    stream += le32(static_cast<uint32_t>(p.size())) + p;
  std::vector<DecodedMessage> msgs;
  Status s = codec_->decodeToModelStream(bytesOf(stream), msgs);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0].specs.features.at(0), TensorSpec("a", DType::kInt8, {1}));
  EXPECT_TRUE(msgs[0].specs.advice.empty());
  EXPECT_EQ(msgs[1].name, "");
  EXPECT_EQ(msgs[2].id, 3);
  EXPECT_TRUE(msgs[2].tensors.empty());
  EXPECT_EQ(msgs[3].kind, DecodedMessage::Kind::kEnd);

  // ... but not a wrong header version, nor two kinds in one message.
  for (const std::string& p : {std::string(R"({"header":{"version":2}})"),
                               std::string(R"({"context":{"name":"a"},"end":{}})")}) {
    std::string bad = std::string("MLBR\x01J\0\0", 8) + le32(static_cast<uint32_t>(p.size())) + p;
    msgs.clear();
    s = codec_->decodeToModelStream(bytesOf(bad), msgs);
    EXPECT_FALSE(s.ok()) << p;
  }
  msgs.clear();
  std::string v2 = R"({"header":{"version":2}})";
  s = codec_->decodeToModelStream(bytesOf(std::string("MLBR\x01J\0\0", 8) + le32(static_cast<uint32_t>(v2.size())) + v2), msgs);
  EXPECT_NE(s.message().find("version 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("version 1"), std::string::npos) << s.message();
}

TEST_F(JsonCodecTest, ColdDecoderChecksTensors) {
  const std::pair<std::string, const char*> cases[] = {
      {R"({"observation":{"id":0,"tensors":[{"name":"a","type":"uint8_t","shape":[1],"data":[256]}]}})", "not a valid uint8_t"},
      {R"({"observation":{"id":0,"tensors":[{"name":"a","type":"float","shape":[2],"data":[1]}]}})", "1 values, expected 2"},
      {R"({"observation":{"id":0,"tensors":[{"name":"a","type":"float","shape":[-1],"data":[]}]}})", "negative"},
      {R"({"observation":{"id":0,"tensors":[{"name":"a","type":"float","shape":[1099511627776,1099511627776],"data":[]}]}})", "too large"},
      {R"({"observation":{"id":0,"tensors":[{"name":"a","type":"f16","shape":[1],"data":[1]}]}})", "unknown type"},
      {R"({"observation":{"id":0,"tensors":[{"name":"a","type":"string","shape":[1],"data":[1]}]}})", "not a string"},
      {R"({"observation":{"id":"x","tensors":[]}})", "\"id\""},
      {R"({"observation":[]})", "not a JSON object"},
  };
  for (const auto& c : cases) {
    std::string stream = std::string("MLBR\x01J\0\0", 8) + le32(static_cast<uint32_t>(c.first.size())) + c.first;
    std::vector<DecodedMessage> msgs;
    Status s = codec_->decodeToModelStream(bytesOf(stream), msgs);
    EXPECT_FALSE(s.ok()) << c.first;
    EXPECT_NE(s.message().find(c.second), std::string::npos) << c.first << "\n -> " << s.message();
  }
}

}  // namespace
}  // namespace testing
}  // namespace mlbridge
