#include "mlbridge/shm_runner.h"

#include "shm/channel.h"
#include "wire/channel_session.h"

namespace mlbridge {

namespace {

// The session's bytes over the shared-memory rings.
class RingTransport final : public wire::ByteTransport {
 public:
  std::unique_ptr<shm::Channel> channel;

  Status writeAll(iovec* iov, int iovcnt, const pipe::Deadline& deadline, const char* what) override {
    return channel->write(iov, iovcnt, deadline, what);
  }
  Status readAtLeast(void* buf, size_t min, size_t cap, size_t* got, const pipe::Deadline& deadline,
                     const char* what) override {
    return channel->readAtLeast(buf, min, cap, got, deadline, what);
  }
  size_t available() override { return channel->available(); }
};

}  // namespace

struct ShmModelRunner::Impl {
  RingTransport rings;
  wire::ChannelSession session;
};

ShmModelRunner::ShmModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice, ShmOptions options)
    : ModelRunner(std::move(features), std::move(advice)), impl_(new Impl), options_(std::move(options)) {}

ShmModelRunner::~ShmModelRunner() { (void)finish(); }

StatusOr<std::unique_ptr<ShmModelRunner>> ShmModelRunner::create(std::vector<TensorSpec> features,
                                                                 std::vector<TensorSpec> advice, ShmOptions options) {
  MLBRIDGE_RETURN_IF_ERROR(wire::checkChannelOptions(options, "ShmOptions", "shm"));
  if (options.spinUs < 0 || options.spinUs > 1000000)
    return invalidArgument("ShmOptions.spinUs must be in 0..1000000, got " + std::to_string(options.spinUs));
  std::unique_ptr<ShmModelRunner> r(new ShmModelRunner(std::move(features), std::move(advice), std::move(options)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  const std::string path = r->options_.base + ".shm";
  MLBRIDGE_RETURN_IF_ERROR(r->impl_->session.init(r->options_, r->inputSpecs(), r->outputSpecs(), path, path));
  MLBRIDGE_RETURN_IF_ERROR(r->connect());
  return r;
}

Status ShmModelRunner::connect() {
  Impl& m = *impl_;
  auto ch = shm::Channel::connect(options_.base, options_.connectTimeoutMs, options_.spinUs,
                                  options_.allowSharedFolder);
  if (!ch.ok()) return ch.status();
  m.rings.channel = std::move(*ch);
  return m.session.start(&m.rings);
}

Status ShmModelRunner::evaluateImpl() { return impl_->session.evaluate(inputRefs(), outputRefs()); }

Status ShmModelRunner::setContextImpl(std::string_view name) { return impl_->session.setContext(name); }

Status ShmModelRunner::finishImpl() {
  Impl& m = *impl_;
  Status s = m.session.finish();
  if (m.rings.channel) {
    m.rings.channel->end();  // the model sees the end of the session
    m.rings.channel.reset();
  }
  return s;
}

}  // namespace mlbridge
