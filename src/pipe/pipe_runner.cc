#include "mlbridge/pipe_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "pipe/fd_io.h"
#include "pipe/sys_util.h"
#include "wire/channel_session.h"

namespace mlbridge {

namespace {

Status makeFifo(const std::string& path) {
  if (mkfifo(path.c_str(), 0600) == 0 || errno == EEXIST) return Status::OK();
  return unavailable("cannot create FIFO " + path + ": " + pipe::errnoText(errno));
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A larger pipe buffer lets big tensors go in fewer wake-ups (best effort).
void growPipe(int fd) {
#ifdef F_SETPIPE_SZ
  (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#else
  (void)fd;
#endif
}

// The session's bytes over the two FIFOs.
class FifoTransport final : public wire::ByteTransport {
 public:
  int inFd = -1;   // BASE.in: we read replies
  int outFd = -1;  // BASE.out: we write requests
  bool guardSigpipe = true;

  ~FifoTransport() override { closeFds(); }
  void closeFds() {
    closeFd(outFd);  // the model sees end of stream
    closeFd(inFd);
  }
  Status writeAll(iovec* iov, int iovcnt, const pipe::Deadline& deadline, const char* what) override {
    return pipe::writeAll(outFd, iov, iovcnt, deadline, what, guardSigpipe);
  }
  Status readAtLeast(void* buf, size_t min, size_t cap, size_t* got, const pipe::Deadline& deadline,
                     const char* what) override {
    return pipe::readAtLeast(inFd, buf, min, cap, got, deadline, what);
  }
  size_t available() override { return pipe::bytesAvailable(inFd); }
};

}  // namespace

struct PipeModelRunner::Impl {
  FifoTransport fifos;
  wire::ChannelSession session;
  std::string inPath, outPath;
};

PipeModelRunner::PipeModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice,
                                 PipeOptions options)
    : ModelRunner(std::move(features), std::move(advice)), impl_(new Impl), options_(std::move(options)) {}

PipeModelRunner::~PipeModelRunner() { (void)finish(); }

StatusOr<std::unique_ptr<PipeModelRunner>> PipeModelRunner::create(std::vector<TensorSpec> features,
                                                                   std::vector<TensorSpec> advice,
                                                                   PipeOptions options) {
  MLBRIDGE_RETURN_IF_ERROR(wire::checkChannelOptions(options, "PipeOptions", "pipe"));
  std::unique_ptr<PipeModelRunner> r(new PipeModelRunner(std::move(features), std::move(advice), std::move(options)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  Impl& m = *r->impl_;
  m.inPath = r->options_.base + ".in";
  m.outPath = r->options_.base + ".out";
  MLBRIDGE_RETURN_IF_ERROR(m.session.init(r->options_, r->inputSpecs(), r->outputSpecs(), m.outPath, m.inPath));
  m.fifos.guardSigpipe = !pipe::sigpipeIgnored();
  MLBRIDGE_RETURN_IF_ERROR(r->connect());
  return r;
}

Status PipeModelRunner::connect() {
  Impl& m = *impl_;
  FifoTransport& f = m.fifos;
  const std::string dir = pipe::parentDir(options_.base);
  if (options_.createFifos) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return unavailable("cannot create channel folder " + dir + ": " + pipe::errnoText(errno));
    MLBRIDGE_RETURN_IF_ERROR(pipe::checkPrivateFolder(dir, options_.allowSharedFolder));
    MLBRIDGE_RETURN_IF_ERROR(makeFifo(m.inPath));
    MLBRIDGE_RETURN_IF_ERROR(makeFifo(m.outPath));
  }
  pipe::Deadline deadline(options_.connectTimeoutMs);
  // LLVM's order: BASE.in for reading, then BASE.out for writing. Both opens
  // are non-blocking and retried, so a model that never comes is an error
  // within the deadline, not a hang.
  pipe::Backoff backoff;
  bool folderChecked = options_.createFifos;
  for (;;) {
    if (!folderChecked && access(dir.c_str(), F_OK) == 0) {
      MLBRIDGE_RETURN_IF_ERROR(pipe::checkPrivateFolder(dir, options_.allowSharedFolder));
      folderChecked = true;
    }
    if (f.inFd < 0) f.inFd = open(m.inPath.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f.inFd >= 0) {
      f.outFd = open(m.outPath.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (f.outFd >= 0) break;
    }
    int err = errno;
    if (err != ENOENT && err != ENXIO && err != EINTR)
      return unavailable("cannot open channel " + (f.inFd < 0 ? m.inPath : m.outPath) + ": " + pipe::errnoText(err));
    if (deadline.expired()) {
      if (err == ENOENT)
        return unavailable("channel " + (f.inFd < 0 ? m.inPath : m.outPath) + " did not appear within " +
                           std::to_string(options_.connectTimeoutMs) + " ms (is the model running?)");
      return unavailable("the model did not open " + m.outPath + " within " +
                         std::to_string(options_.connectTimeoutMs) + " ms (is the model running?)");
    }
    backoff.pause(deadline);
  }
  growPipe(f.outFd);
  // Nothing in BASE.in can be for us before our header: bytes there are
  // replies an earlier compiler left unread (it gave up waiting). In
  // bitstream, which has no reply ids, they would pass for our answers.
  char scrap[4096];
  for (size_t drained = 0; drained < (size_t(64) << 20);) {
    ssize_t n = read(f.inFd, scrap, sizeof scrap);
    if (n <= 0) break;  // EAGAIN (empty), EOF or an error: nothing more to drop now
    drained += static_cast<size_t>(n);
  }
  return m.session.start(&f);
}

Status PipeModelRunner::evaluateImpl() { return impl_->session.evaluate(inputRefs(), outputRefs()); }

Status PipeModelRunner::setContextImpl(std::string_view name) { return impl_->session.setContext(name); }

Status PipeModelRunner::finishImpl() {
  Status s = impl_->session.finish();
  impl_->fifos.closeFds();
  return s;
}

StatusOr<std::string> makePrivateChannelDir(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    for (const char* var : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
      const char* v = std::getenv(var);
      if (v && *v && access(v, W_OK) == 0) {
        base = v;
        break;
      }
    }
    if (base.empty()) base = "/tmp";
  }
  std::string templ = base + "/mlbridge-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    return unavailable("cannot create a channel folder under " + base + ": " + pipe::errnoText(errno));
  return std::string(buf.data());  // mkdtemp creates it with mode 0700
}

}  // namespace mlbridge
