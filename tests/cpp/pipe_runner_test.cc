// The named-pipe runner against a scripted fake model: the happy path in
// every format and every failure path the protocol names.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <future>

#include "mlbridge/pipe_runner.h"
#include "test_util.h"
#include "wire/codec.h"

namespace mlbridge {
namespace {

using testing::FakeModel;
using testing::TempChannel;
using testing::le64;

std::vector<TensorSpec> features() {
  return {TensorSpec::create<int64_t>("callee_users", {1}), TensorSpec::create<float>("weights", {3})};
}
TensorSpec advice() { return TensorSpec::create<int64_t>("inlining_decision", {1}); }

PipeOptions opts(const TempChannel& ch, WireFormat f = WireFormat::kBitstream, int timeoutMs = 3000) {
  PipeOptions o;
  o.base = ch.base();
  o.format = f;
  o.timeoutMs = timeoutMs;
  o.connectTimeoutMs = 3000;
  return o;
}

// The framed ack the model sends for a header.
std::string ackFrame(WireFormat f) {
  wire::OutputList out;
  auto codec = wire::makeCodec(f);
  EXPECT_TRUE(codec->encodeReply(-1, Span<const TensorRef>(), out).ok());
  return out.flatten();  // the codec writes whole frames
}

std::string replyFrame(WireFormat f, int64_t id, const TensorSpec& spec, const void* data) {
  wire::OutputList out;
  auto codec = wire::makeCodec(f);
  TensorRef ref{&spec, data};
  EXPECT_TRUE(codec->encodeReply(id, Span<const TensorRef>(&ref, 1), out).ok());
  return out.flatten();  // the codec writes whole frames
}

TEST(PipeRunner, BitstreamSpeaksLlvmsStream) {
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  std::string header, ctx, obsLine, obsBytes;
  model.run([&](FakeModel& m) {
    header = m.readLine();
    ctx = m.readLine();
    obsLine = m.readLine();
    obsBytes = m.read(8 + 12 + 1);
    m.write(le64(1));
    obsLine += m.readLine();
    obsBytes += m.read(21);
    m.write(le64(0));
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  PipeModelRunner& runner = **r;
  ASSERT_TRUE(runner.setContext("").ok());
  *runner.getTensor<int64_t>(0) = 10;  // 0x0A: a newline byte inside tensor data
  float w[3] = {1.f, 2.f, 3.f};
  std::memcpy(runner.getTensor<float>(1), w, sizeof w);
  StatusOr<int64_t> d1 = runner.evaluate<int64_t>();
  ASSERT_TRUE(d1.ok()) << d1.status().toString();
  EXPECT_EQ(*d1, 1);
  StatusOr<int64_t> d2 = runner.evaluate<int64_t>();
  ASSERT_TRUE(d2.ok()) << d2.status().toString();
  EXPECT_EQ(*d2, 0);
  model.join();
  EXPECT_EQ(header,
            "{\"features\":[{\"name\":\"callee_users\",\"type\":\"int64_t\",\"port\":0,\"shape\":[1]},"
            "{\"name\":\"weights\",\"type\":\"float\",\"port\":0,\"shape\":[3]}],"
            "\"advice\":{\"name\":\"inlining_decision\",\"type\":\"int64_t\",\"port\":0,\"shape\":[1]}}\n");
  EXPECT_EQ(ctx, "{\"context\":\"\"}\n");
  EXPECT_EQ(obsLine, "{\"observation\":0}\n{\"observation\":1}\n");
  std::string expect = le64(10) + std::string(reinterpret_cast<char*>(w), 12) + "\n";
  EXPECT_EQ(obsBytes, expect + expect);
}

TEST(PipeRunner, ModelNeverStartsIsAnErrorWithinTheTimeout) {
  TempChannel ch;
  PipeOptions o = opts(ch);
  o.connectTimeoutMs = 200;
  auto r = PipeModelRunner::create(features(), {advice()}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("is the model running"), std::string::npos) << r.status().message();
}

TEST(PipeRunner, ChannelThatNeverAppears) {
  TempChannel ch;
  PipeOptions o = opts(ch);
  o.base = ch.dir() + "/missing";
  o.connectTimeoutMs = 200;
  auto r = PipeModelRunner::create(features(), {advice()}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("did not appear"), std::string::npos) << r.status().message();
}

TEST(PipeRunner, ModelDiesMidSession) {
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.run([](FakeModel& m) {
    m.readLine();
    m.readLine();
    m.closeAll();  // dies before replying
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  Status s = (*r)->evaluate();
  model.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.toString();
  // The session is over: later calls fail fast with the first error.
  Status again = (*r)->evaluate();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("UNAVAILABLE"), std::string::npos);
}

TEST(PipeRunner, WriteToDeadModelIsEpipeNotSigpipe) {
  // Default SIGPIPE disposition: a raised SIGPIPE would kill the test binary.
  struct sigaction old, dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, &old);
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.run([](FakeModel& m) {
    m.readLine();
    m.closeAll();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  model.join();
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.toString();
  sigaction(SIGPIPE, &old, nullptr);
}

TEST(PipeRunner, TooFewReplyBytesTimesOut) {
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.run([](FakeModel& m) {
    m.readLine();
    m.readLine();
    m.read(21);
    m.write(std::string(4, '\0'));  // half an int64
    m.readToEnd();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch, WireFormat::kBitstream, 200));
  ASSERT_TRUE(r.ok());
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.toString();
  (*r)->finish();
  model.join();
}

TEST(PipeRunner, TooManyReplyBytesAreDetected) {
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.run([](FakeModel& m) {
    m.readLine();
    m.readLine();
    m.read(21);
    m.write(le64(1) + le64(2));  // one answer too many
    m.readToEnd();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch));
  ASSERT_TRUE(r.ok());
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.toString();
  (*r)->finish();
  model.join();
}

TEST(PipeRunner, LateExtraBytesAreDetectedBeforeTheNextRequest) {
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  std::promise<void> go, written;
  model.run([&](FakeModel& m) {
    m.readLine();
    m.readLine();
    m.read(21);
    m.write(le64(1));
    go.get_future().wait();
    m.write(le64(2));  // sent after the reply was consumed, unasked
    written.set_value();
    m.readToEnd();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch));
  ASSERT_TRUE(r.ok());
  StatusOr<int64_t> first = (*r)->evaluate<int64_t>();
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_EQ(*first, 1);
  go.set_value();
  written.get_future().wait();
  // The stray answer must not be taken as the reply to the next request.
  Status second = (*r)->evaluate();
  EXPECT_EQ(second.code(), StatusCode::kDataLoss) << second.toString();
  (*r)->finish();
  model.join();
}

TEST(PipeRunner, RepliesLeftInTheChannelAreDroppedAtConnect) {
  // An earlier compiler gave up on a slow answer; the model answered anyway
  // and the bytes wait in BASE.in. Bitstream has no reply ids: they must not
  // pass for the answer to the next compiler's first request.
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.write(le64(7));  // the late answer, before the new compiler connects
  model.run([&](FakeModel& m) {
    m.readLine();  // header
    m.readLine();  // observation line
    m.read(21);
    m.write(le64(1));
    m.readToEnd();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  StatusOr<int64_t> d = (*r)->evaluate<int64_t>();
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(*d, 1);
  (*r)->finish();
  model.join();
}

class FramedRunner : public ::testing::TestWithParam<WireFormat> {};

TEST_P(FramedRunner, HappyPathAndErrors) {
  WireFormat f = GetParam();
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  TensorSpec adv = advice();
  TensorSpec wrong = TensorSpec::create<float>("inlining_decision", {1});
  std::string preamble;
  std::vector<std::string> frames;
  model.run([&](FakeModel& m) {
    preamble = m.readPreamble();
    frames.push_back(m.readFrame());  // header
    m.write(ackFrame(f));
    frames.push_back(m.readFrame());  // observation 0
    int64_t one = 1;
    m.write(replyFrame(f, 0, adv, &one));
    frames.push_back(m.readFrame());  // observation 1: model error
    wire::OutputList out;
    wire::makeCodec(f)->encodeReplyError(1, "ValueError: no policy", out);
    m.write(out.flatten());
    frames.push_back(m.readFrame());  // observation 2: wrong dtype
    float bad = 1.f;
    m.write(replyFrame(f, 2, wrong, &bad));
    frames.push_back(m.readToEnd());
  });
  auto r = PipeModelRunner::create(features(), {adv}, opts(ch, f));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  StatusOr<int64_t> d = (*r)->evaluate<int64_t>();
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(*d, 1);
  Status e = (*r)->evaluate();
  EXPECT_EQ(e.code(), StatusCode::kAborted);
  EXPECT_NE(e.message().find("ValueError: no policy"), std::string::npos) << e.message();
  Status w = (*r)->evaluate();
  EXPECT_EQ(w.code(), StatusCode::kInvalidArgument) << w.toString();
  EXPECT_NE(w.message().find("float"), std::string::npos) << w.message();
  (*r)->finish();
  model.join();
  ASSERT_EQ(preamble.size(), 8u);
  EXPECT_EQ(preamble.substr(0, 4), "MLBR");
  EXPECT_EQ(preamble[4], 1);
  EXPECT_EQ(preamble[5], f == WireFormat::kJson ? 'J' : 'P');
  // The stream decodes as header, observation x3 (end is sent only on a
  // healthy session; this one ended broken).
  std::string all = preamble;
  for (size_t i = 0; i + 1 < frames.size(); ++i) all += testing::frame(frames[i]);
  std::vector<wire::DecodedMessage> msgs;
  Status ds = wire::makeCodec(f)->decodeToModelStream(
      Span<const uint8_t>(reinterpret_cast<const uint8_t*>(all.data()), all.size()), msgs);
  ASSERT_TRUE(ds.ok()) << ds.toString();
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0].kind, wire::DecodedMessage::Kind::kHeader);
  EXPECT_EQ(msgs[0].specs.features, features());
  EXPECT_EQ(msgs[2].id, 1);
}

TEST_P(FramedRunner, CleanEndIsSent) {
  WireFormat f = GetParam();
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  std::string rest;
  model.run([&](FakeModel& m) {
    m.readPreamble();
    m.readFrame();
    m.write(ackFrame(f));
    rest = m.readToEnd();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch, f));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_TRUE((*r)->finish().ok());
  model.join();
  wire::OutputList hdr;
  wire::SessionSpecs specs{features(), {advice()}};
  // Re-encode the header the way the runner did and append what came after.
  auto codec = wire::makeCodec(f);
  ASSERT_TRUE(codec->encodeHeader(specs, hdr).ok());
  std::string stream = hdr.flatten() + rest;
  std::vector<wire::DecodedMessage> msgs;
  ASSERT_TRUE(codec->decodeToModelStream(
      Span<const uint8_t>(reinterpret_cast<const uint8_t*>(stream.data()), stream.size()), msgs).ok());
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[1].kind, wire::DecodedMessage::Kind::kEnd);
}

TEST_P(FramedRunner, RefusedHeaderNamesTheReason) {
  WireFormat f = GetParam();
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.run([&](FakeModel& m) {
    m.readPreamble();
    m.readFrame();
    wire::OutputList out;
    wire::makeCodec(f)->encodeReplyError(-1, "missing required feature 'callee_size'", out);
    m.write(out.flatten());
    m.readToEnd();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch, f));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("callee_size"), std::string::npos) << r.status().message();
  model.join();
}

TEST_P(FramedRunner, GarbageTruncatedAndOversizedFrames) {
  WireFormat f = GetParam();
  for (int variant = 0; variant < 3; ++variant) {
    TempChannel ch;
    FakeModel model(ch.base());
    model.open();
    model.run([&](FakeModel& m) {
      m.readPreamble();
      m.readFrame();
      m.write(ackFrame(f));
      m.readFrame();
      if (variant == 0) m.write(testing::frame("\xff\xfe garbage \x01\x02"));
      if (variant == 1) {
        m.write(std::string("\x10\x00\x00\x00", 4) + "short");  // 16 announced, 5 sent
        m.closeAll();
        return;
      }
      if (variant == 2) m.write(std::string("\xff\xff\xff\x7f", 4));
      m.readToEnd();
    });
    PipeOptions o = opts(ch, f, 500);
    o.maxMessageBytes = 1 << 20;
    auto r = PipeModelRunner::create(features(), {advice()}, o);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    Status s = (*r)->evaluate();
    const StatusCode expected[] = {StatusCode::kDataLoss, StatusCode::kUnavailable, StatusCode::kResourceExhausted};
    EXPECT_EQ(s.code(), expected[variant]) << "variant " << variant << ": " << s.toString();
    (*r)->finish();
    model.join();
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, FramedRunner, ::testing::Values(WireFormat::kJson, WireFormat::kProtobuf),
                         [](const ::testing::TestParamInfo<WireFormat>& i) {
                           return std::string(wireFormatName(i.param));
                         });

TEST(PipeRunner, StringsAreRefusedByBitstream) {
  TempChannel ch;
  auto r = PipeModelRunner::create({TensorSpec("s", DType::kString, {1})}, {advice()}, opts(ch));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(PipeRunner, CreatesPrivateFifosAndRefusesSharedFolders) {
  StatusOr<std::string> dir = makePrivateChannelDir();
  ASSERT_TRUE(dir.ok()) << dir.status().toString();
  struct stat st;
  ASSERT_EQ(stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  PipeOptions o;
  o.base = *dir + "/sub/chan";
  o.createFifos = true;
  o.connectTimeoutMs = 100;
  auto r = PipeModelRunner::create(features(), {advice()}, o);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << "no model, but the FIFOs exist now";
  ASSERT_EQ(stat((*dir + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((*dir + "/sub/chan.in").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  chmod((*dir + "/sub").c_str(), 0755);
  auto shared = PipeModelRunner::create(features(), {advice()}, o);
  EXPECT_EQ(shared.status().code(), StatusCode::kPermissionDenied) << shared.status().toString();
  unlink((*dir + "/sub/chan.in").c_str());
  unlink((*dir + "/sub/chan.out").c_str());
  rmdir((*dir + "/sub").c_str());
  rmdir(dir->c_str());
}

TEST(PipeRunner, BadOptions) {
  PipeOptions o;
  EXPECT_EQ(PipeModelRunner::create(features(), {advice()}, o).status().code(), StatusCode::kInvalidArgument);
  o.base = "/tmp/x";
  o.timeoutMs = 0;
  EXPECT_EQ(PipeModelRunner::create(features(), {advice()}, o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mlbridge

namespace mlbridge {
namespace {

TEST_P(FramedRunner, ModelEndsTheSessionWithAReason) {
  WireFormat f = GetParam();
  TempChannel ch;
  FakeModel model(ch.base());
  model.open();
  model.run([&](FakeModel& m) {
    m.readPreamble();
    m.readFrame();
    m.write(ackFrame(f));
    m.readFrame();
    wire::OutputList out;
    wire::makeCodec(f)->encodeReplyError(-1, "ProtocolError: policy state lost", out);
    m.write(out.flatten());
    m.closeAll();
  });
  auto r = PipeModelRunner::create(features(), {advice()}, opts(ch, f));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  Status s = (*r)->evaluate();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.toString();
  EXPECT_NE(s.message().find("policy state lost"), std::string::npos) << s.message();
  EXPECT_EQ((*r)->evaluate().code(), StatusCode::kFailedPrecondition) << "the session is over";
  model.join();
}

}  // namespace
}  // namespace mlbridge
