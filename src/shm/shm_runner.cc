#include "mlbridge/shm_runner.h"

#include "shm/channel.h"
#include "wire/codec.h"
#include "wire/framing.h"

namespace mlbridge {

struct ShmModelRunner::Impl {
  std::unique_ptr<wire::Codec> codec;
  wire::SessionSpecs specs;  // copies for the header
  wire::OutputList out;
  std::vector<uint8_t> reply;  // reused reply buffer
  std::unique_ptr<shm::Channel> channel;
  std::string writeWhat, readWhat;  // error-message prefixes, built once
  int64_t nextId = 0;
};

ShmModelRunner::ShmModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice, ShmOptions options)
    : ModelRunner(std::move(features), std::move(advice)), impl_(new Impl), options_(std::move(options)) {}

ShmModelRunner::~ShmModelRunner() { (void)finish(); }

StatusOr<std::unique_ptr<ShmModelRunner>> ShmModelRunner::create(std::vector<TensorSpec> features,
                                                                 std::vector<TensorSpec> advice, ShmOptions options) {
  if (options.base.empty()) return invalidArgument("ShmOptions.base is empty: name the channel");
  if (options.timeoutMs <= 0 || options.connectTimeoutMs <= 0)
    return invalidArgument("shm timeouts must be positive (got " + std::to_string(options.timeoutMs) + " and " +
                           std::to_string(options.connectTimeoutMs) + " ms)");
  if (options.spinUs < 0 || options.spinUs > 1000000)
    return invalidArgument("ShmOptions.spinUs must be in 0..1000000, got " + std::to_string(options.spinUs));
  std::unique_ptr<ShmModelRunner> r(new ShmModelRunner(std::move(features), std::move(advice), std::move(options)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  Impl& m = *r->impl_;
  m.codec = wire::makeCodec(r->options_.format);
  m.specs.features = r->inputSpecs();
  m.specs.advice = r->outputSpecs();
  MLBRIDGE_RETURN_IF_ERROR(m.codec->checkSpecs(m.specs));
  const std::string path = r->options_.base + ".shm";
  m.writeWhat = "writing to the model (" + path + ")";
  m.readWhat = "waiting for the model's reply (" + path + ")";
  MLBRIDGE_RETURN_IF_ERROR(r->connect());
  return r;
}

Status ShmModelRunner::connect() {
  Impl& m = *impl_;
  auto ch = shm::Channel::connect(options_.base, options_.connectTimeoutMs, options_.spinUs,
                                  options_.allowSharedFolder);
  if (!ch.ok()) return ch.status();
  m.channel = std::move(*ch);
  m.out.clear();
  MLBRIDGE_RETURN_IF_ERROR(m.codec->encodeHeader(m.specs, m.out));
  MLBRIDGE_RETURN_IF_ERROR(sendPending("sending the session header"));
  if (m.codec->framed()) {
    Status s = readReply(-1, Span<const MutableTensorRef>());
    if (!s.ok()) {
      if (s.code() == StatusCode::kAborted)
        return Status(StatusCode::kFailedPrecondition, "the model refused the session: " + s.message());
      return s;
    }
  }
  return Status::OK();
}

Status ShmModelRunner::fail(Status s) {
  if (broken_.ok()) broken_ = s;
  return s;
}

Status ShmModelRunner::sendPending(const char* what) {
  Impl& m = *impl_;
  // Bytes the model sent without being asked would be read as the next reply.
  if (size_t extra = m.channel->available())
    return fail(dataLoss(std::string(what) + ": the model sent " + std::to_string(extra) +
                         " unexpected bytes (a reply too long for the advice spec?)"));
  const std::vector<iovec>& iov = m.out.iovecs();
  pipe::Deadline deadline(options_.timeoutMs);
  Status s = m.channel->write(iov.data(), static_cast<int>(iov.size()), deadline, m.writeWhat.c_str());
  if (!s.ok()) return fail(s);
  return Status::OK();
}

Status ShmModelRunner::readReply(int64_t expectedId, Span<const MutableTensorRef> outputs) {
  Impl& m = *impl_;
  pipe::Deadline deadline(options_.timeoutMs);
  const char* what = m.readWhat.c_str();
  shm::Channel& ch = *m.channel;
  if (!m.codec->framed()) {
    size_t need = 0;
    for (const MutableTensorRef& o : outputs) need += o.spec->byteSize();
    // Take one byte more than needed if it is there: a longer reply is an error.
    if (m.reply.size() < need + 64) m.reply.resize(need + 64);
    size_t got = 0;
    Status s = ch.readAtLeast(m.reply.data(), need, need + 64, &got, deadline, what);
    if (!s.ok()) return fail(s);
    if (got > need)
      return fail(dataLoss("the model's reply has more than the " + std::to_string(need) +
                           " bytes of the advice spec"));
    return m.codec->decodeReply(Span<const uint8_t>(m.reply.data(), need), expectedId, outputs);
  }
  if (m.reply.size() < 4096) m.reply.resize(4096);
  size_t got = 0;
  Status s = ch.readAtLeast(m.reply.data(), wire::kFrameHeaderSize, m.reply.size(), &got, deadline, what);
  if (!s.ok()) return fail(s);
  uint32_t len = wire::readFrameLength(m.reply.data());
  if (len > options_.maxMessageBytes)
    return fail(Status(StatusCode::kResourceExhausted, "the model's reply frame is " + std::to_string(len) +
                                                           " bytes, over the limit of " +
                                                           std::to_string(options_.maxMessageBytes)));
  size_t total = wire::kFrameHeaderSize + len;
  if (got < total) {
    if (m.reply.size() < total) m.reply.resize(total);
    size_t more = 0;
    s = ch.readAtLeast(m.reply.data() + got, total - got, total - got, &more, deadline, what);
    if (!s.ok()) return fail(s);
    got += more;
  }
  if (got > total) return fail(dataLoss("the model sent bytes after its reply frame"));
  s = m.codec->decodeReply(Span<const uint8_t>(m.reply.data() + wire::kFrameHeaderSize, len), expectedId, outputs);
  // A model-side error leaves the stream in step: the session goes on.
  if (!s.ok() && s.code() != StatusCode::kAborted) return fail(s);
  return s;
}

Status ShmModelRunner::evaluateImpl() {
  if (!broken_.ok()) return failedPrecondition("the session is broken by an earlier error: " + broken_.toString());
  Impl& m = *impl_;
  int64_t id = m.nextId++;
  m.out.clear();
  Status s = m.codec->encodeObservation(id, inputRefs(), m.out);
  if (!s.ok()) return s;
  MLBRIDGE_RETURN_IF_ERROR(sendPending("sending an observation"));
  return readReply(id, outputRefs());
}

Status ShmModelRunner::setContextImpl(std::string_view name) {
  if (!broken_.ok()) return failedPrecondition("the session is broken by an earlier error: " + broken_.toString());
  Impl& m = *impl_;
  m.out.clear();
  MLBRIDGE_RETURN_IF_ERROR(m.codec->encodeContext(name, m.out));
  m.nextId = 0;
  return sendPending("sending a context");
}

Status ShmModelRunner::finishImpl() {
  Impl& m = *impl_;
  Status s;
  if (!m.channel) return s;
  if (broken_.ok()) {
    m.out.clear();
    s = m.codec->encodeEnd(m.out);
    if (s.ok() && m.out.totalBytes()) s = sendPending("sending the end of session");
  }
  m.channel->end();  // the model sees the end of the session
  m.channel.reset();
  return s;
}

}  // namespace mlbridge
