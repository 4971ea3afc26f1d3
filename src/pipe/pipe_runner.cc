#include "mlbridge/pipe_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "pipe/fd_io.h"
#include "wire/codec.h"
#include "wire/framing.h"

namespace mlbridge {

namespace {

std::string errnoText(int err) {
  char buf[128];
  const char* s = strerror_r(err, buf, sizeof buf);
  return s ? s : "unknown error";
}

std::string parentDir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The folder holding the channel must belong to us and be closed to others:
// anyone who can open the FIFOs can read features or forge decisions.
Status checkPrivateFolder(const std::string& dir, bool allowShared) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    return Status(StatusCode::kNotFound, "channel folder " + dir + ": " + errnoText(errno));
  if (!S_ISDIR(st.st_mode)) return invalidArgument("channel folder " + dir + " is not a directory");
  if (allowShared) return Status::OK();
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status(StatusCode::kPermissionDenied,
                  "channel folder " + dir + " is not private (mode " + mode +
                      "); use a folder with mode 0700 owned by this user, or set allowSharedFolder");
  }
  return Status::OK();
}

Status makeFifo(const std::string& path) {
  if (mkfifo(path.c_str(), 0600) == 0 || errno == EEXIST) return Status::OK();
  return unavailable("cannot create FIFO " + path + ": " + errnoText(errno));
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

}  // namespace

struct PipeModelRunner::Impl {
  std::unique_ptr<wire::Codec> codec;
  wire::SessionSpecs specs;  // copies for the header
  wire::OutputList out;
  std::vector<uint8_t> reply;  // reused reply buffer
  std::string inPath, outPath;
  std::string writeWhat, readWhat;  // error-message prefixes, built once
  int inFd = -1;   // BASE.in: we read replies
  int outFd = -1;  // BASE.out: we write requests
  bool guardSigpipe = true;
  int64_t nextId = 0;
  ~Impl() {
    closeFd(inFd);
    closeFd(outFd);
  }
};

PipeModelRunner::PipeModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice,
                                 PipeOptions options)
    : ModelRunner(std::move(features), std::move(advice)), impl_(new Impl), options_(std::move(options)) {}

PipeModelRunner::~PipeModelRunner() { (void)finish(); }

StatusOr<std::unique_ptr<PipeModelRunner>> PipeModelRunner::create(std::vector<TensorSpec> features,
                                                                   std::vector<TensorSpec> advice,
                                                                   PipeOptions options) {
  if (options.base.empty()) return invalidArgument("PipeOptions.base is empty: name the channel");
  if (options.timeoutMs <= 0 || options.connectTimeoutMs <= 0)
    return invalidArgument("pipe timeouts must be positive (got " + std::to_string(options.timeoutMs) + " and " +
                           std::to_string(options.connectTimeoutMs) + " ms)");
  std::unique_ptr<PipeModelRunner> r(new PipeModelRunner(std::move(features), std::move(advice), std::move(options)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  Impl& m = *r->impl_;
  m.codec = wire::makeCodec(r->options_.format);
  m.specs.features = r->inputSpecs();
  m.specs.advice = r->outputSpecs();
  MLBRIDGE_RETURN_IF_ERROR(m.codec->checkSpecs(m.specs));
  m.inPath = r->options_.base + ".in";
  m.outPath = r->options_.base + ".out";
  m.writeWhat = "writing to the model (" + m.outPath + ")";
  m.readWhat = "waiting for the model's reply (" + m.inPath + ")";
  m.guardSigpipe = !pipe::sigpipeIgnored();
  MLBRIDGE_RETURN_IF_ERROR(r->connect());
  return r;
}

Status PipeModelRunner::connect() {
  Impl& m = *impl_;
  const std::string dir = parentDir(options_.base);
  if (options_.createFifos) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return unavailable("cannot create channel folder " + dir + ": " + errnoText(errno));
    MLBRIDGE_RETURN_IF_ERROR(checkPrivateFolder(dir, options_.allowSharedFolder));
    MLBRIDGE_RETURN_IF_ERROR(makeFifo(m.inPath));
    MLBRIDGE_RETURN_IF_ERROR(makeFifo(m.outPath));
  }
  pipe::Deadline deadline(options_.connectTimeoutMs);
  // LLVM's order: BASE.in for reading, then BASE.out for writing. Both opens
  // are non-blocking and retried, so a model that never comes is an error
  // within the deadline, not a hang.
  int backoffMs = 1;
  auto pause = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(backoffMs, deadline.remainingMs())));
    backoffMs = std::min(backoffMs * 2, 50);
  };
  bool folderChecked = options_.createFifos;
  for (;;) {
    if (!folderChecked && access(dir.c_str(), F_OK) == 0) {
      MLBRIDGE_RETURN_IF_ERROR(checkPrivateFolder(dir, options_.allowSharedFolder));
      folderChecked = true;
    }
    if (m.inFd < 0) m.inFd = open(m.inPath.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (m.inFd >= 0) {
      m.outFd = open(m.outPath.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (m.outFd >= 0) break;
    }
    int err = errno;
    if (err != ENOENT && err != ENXIO && err != EINTR)
      return unavailable("cannot open channel " + (m.inFd < 0 ? m.inPath : m.outPath) + ": " + errnoText(err));
    if (deadline.expired()) {
      if (err == ENOENT)
        return unavailable("channel " + (m.inFd < 0 ? m.inPath : m.outPath) + " did not appear within " +
                           std::to_string(options_.connectTimeoutMs) + " ms (is the model running?)");
      return unavailable("the model did not open " + m.outPath + " within " +
                         std::to_string(options_.connectTimeoutMs) + " ms (is the model running?)");
    }
    pause();
  }
  growPipe(m.outFd);
  m.out.clear();
  MLBRIDGE_RETURN_IF_ERROR(m.codec->encodeHeader(m.specs, m.out));
  MLBRIDGE_RETURN_IF_ERROR(sendPending("sending the session header"));
  if (m.codec->framed()) {
    Status s = readReply(-1, Span<const MutableTensorRef>());
    if (!s.ok()) {
      if (s.code() == StatusCode::kAborted) return Status(StatusCode::kFailedPrecondition,
                                                          "the model refused the session: " + s.message());
      return s;
    }
  }
  return Status::OK();
}

Status PipeModelRunner::fail(Status s) {
  if (broken_.ok()) broken_ = s;
  return s;
}

Status PipeModelRunner::sendPending(const char* what) {
  Impl& m = *impl_;
  // Bytes the model sent without being asked would be read as the next reply:
  // refuse them instead of returning a shifted answer.
  if (size_t extra = pipe::bytesAvailable(m.inFd))
    return fail(dataLoss(std::string(what) + ": the model sent " + std::to_string(extra) +
                         " unexpected bytes (a reply too long for the advice spec?)"));
  const std::vector<iovec>& iov = m.out.iovecs();
  std::vector<iovec>& mut = const_cast<std::vector<iovec>&>(iov);
  pipe::Deadline deadline(options_.timeoutMs);
  Status s = pipe::writeAll(m.outFd, mut.data(), static_cast<int>(mut.size()), deadline, m.writeWhat.c_str(),
                            m.guardSigpipe);
  if (!s.ok()) return fail(s);
  return Status::OK();
}

Status PipeModelRunner::readReply(int64_t expectedId, Span<const MutableTensorRef> outputs) {
  Impl& m = *impl_;
  pipe::Deadline deadline(options_.timeoutMs);
  const char* what = m.readWhat.c_str();
  if (!m.codec->framed()) {
    size_t need = 0;
    for (const MutableTensorRef& o : outputs) need += o.spec->byteSize();
    // Read one byte more than needed if it is there: a longer reply is an error.
    if (m.reply.size() < need + 64) m.reply.resize(need + 64);
    size_t got = 0;
    Status s = pipe::readAtLeast(m.inFd, m.reply.data(), need, need + 64, &got, deadline, what);
    if (!s.ok()) return fail(s);
    if (got > need)
      return fail(dataLoss("the model's reply has more than the " + std::to_string(need) +
                           " bytes of the advice spec"));
    return m.codec->decodeReply(Span<const uint8_t>(m.reply.data(), need), expectedId, outputs);
  }
  if (m.reply.size() < 4096) m.reply.resize(4096);
  size_t got = 0;
  Status s = pipe::readAtLeast(m.inFd, m.reply.data(), wire::kFrameHeaderSize, m.reply.size(), &got, deadline, what);
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
    s = pipe::readAtLeast(m.inFd, m.reply.data() + got, total - got, total - got, &more, deadline, what);
    if (!s.ok()) return fail(s);
    got += more;
  }
  if (got > total) return fail(dataLoss("the model sent bytes after its reply frame"));
  s = m.codec->decodeReply(Span<const uint8_t>(m.reply.data() + wire::kFrameHeaderSize, len), expectedId, outputs);
  // A model-side error leaves the stream in step: the session goes on.
  if (!s.ok() && s.code() != StatusCode::kAborted) return fail(s);
  return s;
}

Status PipeModelRunner::evaluateImpl() {
  if (!broken_.ok()) return failedPrecondition("the session is broken by an earlier error: " + broken_.toString());
  Impl& m = *impl_;
  int64_t id = m.nextId++;
  m.out.clear();
  Status s = m.codec->encodeObservation(id, inputRefs(), m.out);
  if (!s.ok()) return s;
  MLBRIDGE_RETURN_IF_ERROR(sendPending("sending an observation"));
  return readReply(id, outputRefs());
}

Status PipeModelRunner::setContextImpl(std::string_view name) {
  if (!broken_.ok()) return failedPrecondition("the session is broken by an earlier error: " + broken_.toString());
  Impl& m = *impl_;
  m.out.clear();
  MLBRIDGE_RETURN_IF_ERROR(m.codec->encodeContext(name, m.out));
  m.nextId = 0;
  return sendPending("sending a context");
}

Status PipeModelRunner::finishImpl() {
  Impl& m = *impl_;
  Status s;
  if (broken_.ok() && m.outFd >= 0) {
    m.out.clear();
    s = m.codec->encodeEnd(m.out);
    if (s.ok() && m.out.totalBytes()) s = sendPending("sending the end of session");
  }
  closeFd(m.outFd);  // the model sees end of stream
  closeFd(m.inFd);
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
  if (!mkdtemp(buf.data())) return unavailable("cannot create a channel folder under " + base + ": " + errnoText(errno));
  return std::string(buf.data());  // mkdtemp creates it with mode 0700
}

}  // namespace mlbridge
