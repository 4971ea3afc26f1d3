#include "wire/channel_session.h"

#include <utility>

#include "wire/framing.h"

namespace mlbridge {
namespace wire {

Status checkChannelOptions(const ChannelOptions& options, const char* optionsName, const char* kind) {
  if (options.base.empty()) return invalidArgument(std::string(optionsName) + ".base is empty: name the channel");
  if (options.timeoutMs <= 0 || options.connectTimeoutMs <= 0)
    return invalidArgument(std::string(kind) + " timeouts must be positive (got " + std::to_string(options.timeoutMs) +
                           " and " + std::to_string(options.connectTimeoutMs) + " ms)");
  return Status::OK();
}

Status ChannelSession::init(const ChannelOptions& options, const std::vector<TensorSpec>& features,
                            const std::vector<TensorSpec>& advice, const std::string& writeChannel,
                            const std::string& readChannel) {
  codec_ = makeCodec(options.format);
  specs_.features = features;
  specs_.advice = advice;
  MLBRIDGE_RETURN_IF_ERROR(codec_->checkSpecs(specs_));
  writeWhat_ = "writing to the model (" + writeChannel + ")";
  readWhat_ = "waiting for the model's reply (" + readChannel + ")";
  timeoutMs_ = options.timeoutMs;
  maxMessageBytes_ = options.maxMessageBytes;
  return Status::OK();
}

Status ChannelSession::start(ByteTransport* transport) {
  transport_ = transport;
  out_.clear();
  MLBRIDGE_RETURN_IF_ERROR(codec_->encodeHeader(specs_, out_));
  MLBRIDGE_RETURN_IF_ERROR(sendPending("sending the session header"));
  if (codec_->framed()) {
    Status s = readReply(-1, Span<const MutableTensorRef>());
    if (!s.ok()) {
      if (s.code() == StatusCode::kAborted)
        return Status(StatusCode::kFailedPrecondition, "the model refused the session: " + s.message());
      return s;
    }
  }
  return Status::OK();
}

Status ChannelSession::fail(Status s) {
  if (broken_.ok()) broken_ = s;
  return s;
}

Status ChannelSession::checkUsable() const {
  if (!broken_.ok()) return failedPrecondition("the session is broken by an earlier error: " + broken_.toString());
  return Status::OK();
}

Status ChannelSession::sendPending(const char* what) {
  // Bytes the model sent without being asked would be read as the next reply:
  // refuse them instead of returning a shifted answer.
  if (size_t extra = transport_->available())
    return fail(dataLoss(std::string(what) + ": the model sent " + std::to_string(extra) +
                         " unexpected bytes (a reply too long for the advice spec?)"));
  std::vector<iovec>& iov = const_cast<std::vector<iovec>&>(out_.iovecs());
  pipe::Deadline deadline(timeoutMs_);
  Status s = transport_->writeAll(iov.data(), static_cast<int>(iov.size()), deadline, writeWhat_.c_str());
  if (!s.ok()) return fail(s);
  return Status::OK();
}

Status ChannelSession::readReply(int64_t expectedId, Span<const MutableTensorRef> outputs) {
  pipe::Deadline deadline(timeoutMs_);
  const char* what = readWhat_.c_str();
  ByteTransport& t = *transport_;
  if (!codec_->framed()) {
    size_t need = 0;
    for (const MutableTensorRef& o : outputs) need += o.spec->byteSize();
    // Read one byte more than needed if it is there: a longer reply is an error.
    if (reply_.size() < need + 64) reply_.resize(need + 64);
    size_t got = 0;
    Status s = t.readAtLeast(reply_.data(), need, need + 64, &got, deadline, what);
    if (!s.ok()) return fail(s);
    if (got > need)
      return fail(dataLoss("the model's reply has more than the " + std::to_string(need) +
                           " bytes of the advice spec"));
    return codec_->decodeReply(Span<const uint8_t>(reply_.data(), need), expectedId, outputs);
  }
  if (reply_.size() < 4096) reply_.resize(4096);
  size_t got = 0;
  Status s = t.readAtLeast(reply_.data(), kFrameHeaderSize, reply_.size(), &got, deadline, what);
  if (!s.ok()) return fail(s);
  uint32_t len = readFrameLength(reply_.data());
  if (len > maxMessageBytes_)
    return fail(Status(StatusCode::kResourceExhausted, "the model's reply frame is " + std::to_string(len) +
                                                           " bytes, over the limit of " +
                                                           std::to_string(maxMessageBytes_)));
  size_t total = kFrameHeaderSize + len;
  if (got < total) {
    if (reply_.size() < total) reply_.resize(total);
    size_t more = 0;
    s = t.readAtLeast(reply_.data() + got, total - got, total - got, &more, deadline, what);
    if (!s.ok()) return fail(s);
    got += more;
  }
  if (got > total) return fail(dataLoss("the model sent bytes after its reply frame"));
  s = codec_->decodeReply(Span<const uint8_t>(reply_.data() + kFrameHeaderSize, len), expectedId, outputs);
  // A model-side error leaves the stream in step: the session goes on.
  if (!s.ok() && s.code() != StatusCode::kAborted) return fail(s);
  return s;
}

Status ChannelSession::evaluate(Span<const TensorRef> features, Span<const MutableTensorRef> advice) {
  MLBRIDGE_RETURN_IF_ERROR(checkUsable());
  int64_t id = nextId_++;
  out_.clear();
  Status s = codec_->encodeObservation(id, features, out_);
  if (!s.ok()) return s;
  MLBRIDGE_RETURN_IF_ERROR(sendPending("sending an observation"));
  return readReply(id, advice);
}

Status ChannelSession::setContext(std::string_view name) {
  MLBRIDGE_RETURN_IF_ERROR(checkUsable());
  out_.clear();
  MLBRIDGE_RETURN_IF_ERROR(codec_->encodeContext(name, out_));
  nextId_ = 0;
  return sendPending("sending a context");
}

Status ChannelSession::finish() {
  Status s;
  if (transport_ && broken_.ok()) {
    out_.clear();
    s = codec_->encodeEnd(out_);
    if (s.ok() && out_.totalBytes()) s = sendPending("sending the end of session");
  }
  transport_ = nullptr;
  return s;
}

}  // namespace wire
}  // namespace mlbridge
