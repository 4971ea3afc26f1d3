#include "shm/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "pipe/sys_util.h"
#include "shm/layout.h"

namespace mlbridge {
namespace shm {

namespace {

// Futex sleeps are cut into slices so that a dead peer is noticed within one.
constexpr int kSliceMs = 20;

uint32_t roundUpPow2(uint32_t v) {
  uint32_t p = kMinRingBytes;
  while (p < v && p < kMaxRingBytes) p <<= 1;
  return p;
}

uint32_t readU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Copies n bytes into a ring of capacity cap (a power of two) at position pos.
void copyIn(uint8_t* ring, uint32_t cap, uint32_t pos, const uint8_t* src, size_t n) {
  size_t at = pos & (cap - 1);
  size_t first = std::min(n, cap - at);
  std::memcpy(ring + at, src, first);
  if (n > first) std::memcpy(ring, src + first, n - first);
}

void copyOut(const uint8_t* ring, uint32_t cap, uint32_t pos, uint8_t* dst, size_t n) {
  size_t at = pos & (cap - 1);
  size_t first = std::min(n, cap - at);
  std::memcpy(dst, ring + at, first);
  if (n > first) std::memcpy(dst + first, ring, n - first);
}

}  // namespace

Channel::Channel(Role role, int fd, uint8_t* map, size_t size, std::string path, int spinUs)
    : role_(role), fd_(fd), map_(map), size_(size), path_(std::move(path)), spinUs_(spinUs < 0 ? 0 : spinUs) {
  bindWords();
}

Channel::~Channel() {
  if (!ended_ && role_ == Role::kCompiler && session_ != 0) end();
  if (role_ == Role::kModel) {
    store(kServerClosed, kServerGone);
    ring();
    // Remove the file only if it is still ours (a new model may have replaced it).
    struct stat mine, there;
    if (fstat(fd_, &mine) == 0 && stat(path_.c_str(), &there) == 0 && mine.st_ino == there.st_ino &&
        mine.st_dev == there.st_dev)
      unlink(path_.c_str());
  }
  munmap(map_, size_);
  ::close(fd_);  // also releases a compiler's claim (flock)
}

void Channel::bindWords() {
  uint32_t reqCap = readU32(map_ + kRequestBytes), repCap = readU32(map_ + kReplyBytes);
  uint8_t* req = map_ + readU32(map_ + kDataOffset);
  uint8_t* rep = req + reqCap;
  if (role_ == Role::kCompiler) {
    outData_ = req, outCap_ = reqCap, outTailW_ = kReqTail, outHeadW_ = kReqHead;
    inData_ = rep, inCap_ = repCap, inTailW_ = kRepTail, inHeadW_ = kRepHead;
    myBellW_ = kClientBell, peerBellW_ = kServerBell, myWaitingW_ = kClientWaiting, peerWaitingW_ = kServerWaiting;
    myCpuW_ = kClientCpu, peerCpuW_ = kServerCpu;
  } else {
    outData_ = rep, outCap_ = repCap, outTailW_ = kRepTail, outHeadW_ = kRepHead;
    inData_ = req, inCap_ = reqCap, inTailW_ = kReqTail, inHeadW_ = kReqHead;
    myBellW_ = kServerBell, peerBellW_ = kClientBell, myWaitingW_ = kServerWaiting, peerWaitingW_ = kClientWaiting;
    myCpuW_ = kServerCpu, peerCpuW_ = kClientCpu;
  }
  outTail_ = load(outTailW_);
  inHead_ = load(inHeadW_);
  bell_ = load(myBellW_);
}

uint32_t Channel::load(size_t off) const {
  return __atomic_load_n(reinterpret_cast<uint32_t*>(map_ + off), __ATOMIC_ACQUIRE);
}

void Channel::store(size_t off, uint32_t v) {
  __atomic_store_n(reinterpret_cast<uint32_t*>(map_ + off), v, __ATOMIC_RELEASE);
}

// Eventcount: the bell changes on every event, so a peer about to sleep on
// its old value returns at once. Both the bell store and the read of the
// peer's waiting flag are seq_cst (the peer sets that flag, seq_cst, before
// its last check), so either the peer sees our event or we see it waiting.
void Channel::signal(bool freedSpace) {
  uint32_t* bell = reinterpret_cast<uint32_t*>(map_ + myBellW_);
  __atomic_store_n(bell, ++bell_, __ATOMIC_SEQ_CST);
  uint32_t waiting = __atomic_load_n(reinterpret_cast<uint32_t*>(map_ + peerWaitingW_), __ATOMIC_SEQ_CST);
  if (freedSpace ? waiting == kWaitSpace : waiting != 0) futexWake(bell);
}

void Channel::ring() {
  uint32_t* bell = reinterpret_cast<uint32_t*>(map_ + myBellW_);
  __atomic_store_n(bell, ++bell_, __ATOMIC_SEQ_CST);
  futexWake(bell);
}

bool Channel::peerClosedWord() const {
  if (role_ == Role::kCompiler) {
    uint32_t c = load(kServerClosed);
    return c == session_ || c == kServerGone;
  }
  return load(kClientClosed) == session_ || load(kSession) != session_;
}

template <class Check>
Status Channel::waitFor(Check check, const pipe::Deadline& deadline, const char* what, Event* event,
                        uint32_t waitingFor) {
  if ((*event = check()) != Event::kNone) return Status::OK();
  // Spin first: a peer on another CPU usually answers within microseconds,
  // and a futex wake-up across cores costs tens. A peer that last waited on
  // our CPU cannot run while we spin, so then we sleep at once.
  if (spinUs_ > 0 && static_cast<int>(load(peerCpuW_)) != currentCpu()) {
    auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(spinUs_);
    for (unsigned i = 1;; ++i) {
      cpuRelax();
      if ((*event = check()) != Event::kNone) return Status::OK();
      if ((i & 15) == 0 && std::chrono::steady_clock::now() >= end) break;
    }
  }
  store(myCpuW_, static_cast<uint32_t>(currentCpu()));
  uint32_t* bell = reinterpret_cast<uint32_t*>(map_ + peerBellW_);
  for (;;) {
    uint32_t seen = load(peerBellW_);
    __atomic_store_n(reinterpret_cast<uint32_t*>(map_ + myWaitingW_), waitingFor, __ATOMIC_SEQ_CST);
    *event = check();
    int left = deadline.remainingMs();
    if (*event != Event::kNone || left == 0) {
      store(myWaitingW_, 0);
      if (*event != Event::kNone) return Status::OK();
      return deadlineExceeded(std::string(what) + ": timed out");
    }
    bool woken = futexWait(bell, seen, std::min(left, kSliceMs));
    store(myWaitingW_, 0);
    if (!woken && peer_.pid() > 0 && !peer_.alive()) {
      *event = check();
      if (*event == Event::kNone) *event = Event::kClosed;
      return Status::OK();
    }
  }
}

Status Channel::peerGone(const char* what, size_t have, size_t want) const {
  std::string after = have ? " after " + std::to_string(have) + " of " + std::to_string(want) + " bytes" : "";
  if (role_ == Role::kCompiler) {
    if (!peer_.alive())
      return unavailable(std::string(what) + ": the model process (pid " + std::to_string(peer_.pid()) + ") died" +
                         after);
    return unavailable(std::string(what) + ": the model closed the channel" + after);
  }
  return unavailable(std::string(what) + ": the compiler ended the session" + after);
}

// The peer's ring counters are outside our control: never trust them to
// stay within the ring.
Status Channel::corrupt(const char* what) const {
  return dataLoss(std::string(what) + ": the ring counters in " + path_ +
                  " are inconsistent (the peer wrote over the control page?)");
}

Status Channel::write(const iovec* iov, int iovcnt, const pipe::Deadline& deadline, const char* what) {
  if (peerClosedWord()) return peerGone(what, 0, 0);
  const uint32_t cap = outCap_;
  for (int k = 0; k < iovcnt; ++k) {
    const uint8_t* p = static_cast<const uint8_t*>(iov[k].iov_base);
    size_t n = iov[k].iov_len;
    while (n > 0) {
      uint32_t used = outTail_ - load(outHeadW_);
      if (used > cap) return corrupt(what);
      uint32_t space = cap - used;
      if (space == 0) {
        // Publish what we have and wait for the peer to make room.
        store(outTailW_, outTail_);
        signal();
        Event e;
        MLBRIDGE_RETURN_IF_ERROR(waitFor(
            [&] {
              if (outTail_ - load(outHeadW_) < cap) return Event::kReady;
              return peerClosedWord() ? Event::kClosed : Event::kNone;
            },
            deadline, what, &e, kWaitSpace));
        if (e == Event::kClosed) return peerGone(what, 0, 0);
        continue;
      }
      size_t chunk = std::min<size_t>(n, space);
      copyIn(outData_, cap, outTail_, p, chunk);
      outTail_ += static_cast<uint32_t>(chunk);
      p += chunk;
      n -= chunk;
    }
  }
  store(outTailW_, outTail_);
  signal();
  return Status::OK();
}

Status Channel::readAtLeast(void* buf, size_t min, size_t cap, size_t* got, const pipe::Deadline& deadline,
                            const char* what) {
  uint8_t* dst = static_cast<uint8_t*>(buf);
  size_t have = 0;
  Status s;
  while (have < min) {
    uint32_t avail = load(inTailW_) - inHead_;
    if (avail > inCap_) {
      s = corrupt(what);
      break;
    }
    if (avail == 0) {
      // A message longer than the ring: free what we took before waiting.
      if (have && load(inHeadW_) != inHead_) {
        store(inHeadW_, inHead_);
        signal(true);
      }
      Event e;
      s = waitFor(
          [&] {
            if (load(inTailW_) != inHead_) return Event::kReady;
            return peerClosedWord() ? Event::kClosed : Event::kNone;
          },
          deadline, what, &e);
      if (!s.ok()) break;
      // The peer publishes its data before it hangs up: look once more.
      if (e == Event::kClosed && load(inTailW_) == inHead_) {
        s = peerGone(what, have, min);
        break;
      }
      continue;
    }
    size_t n = std::min<size_t>(avail, cap - have);
    copyOut(inData_, inCap_, inHead_, dst + have, n);
    inHead_ += static_cast<uint32_t>(n);
    have += n;
  }
  *got = have;
  if (have) {
    store(inHeadW_, inHead_);
    signal(true);
  }
  return s;
}

size_t Channel::available() const { return load(inTailW_) - inHead_; }

void Channel::end() {
  if (ended_ || session_ == 0) return;
  ended_ = true;
  store(role_ == Role::kCompiler ? kClientClosed : kServerClosed, session_);
  ring();
  if (role_ == Role::kCompiler) flock(fd_, LOCK_UN);
}

StatusOr<std::unique_ptr<Channel>> Channel::create(const std::string& base, uint32_t ringBytes, int spinUs,
                                                   bool allowSharedFolder) {
  if (base.empty()) return invalidArgument("the channel base path is empty");
  const std::string dir = pipe::parentDir(base), path = base + ".shm";
  MLBRIDGE_RETURN_IF_ERROR(pipe::checkPrivateFolder(dir, allowSharedFolder));
  const uint32_t cap = roundUpPow2(ringBytes);
  const size_t size = kControlBytes + size_t(cap) * 2;
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  unlink(tmp.c_str());
  int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return unavailable("cannot create " + tmp + ": " + pipe::errnoText(errno));
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(size)) == 0)
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    ::close(fd);
    unlink(tmp.c_str());
    return unavailable("cannot map " + tmp + ": " + pipe::errnoText(err));
  }
  uint8_t* m = static_cast<uint8_t*>(p);
  auto put = [m](size_t off, uint32_t v) { std::memcpy(m + off, &v, 4); };
  put(kVersion, kLayoutVersion);
  put(kDataOffset, kControlBytes);
  put(kRequestBytes, cap);
  put(kReplyBytes, cap);
  put(kServerPid, static_cast<uint32_t>(getpid()));
  put(kClientCpu, ~0u);  // no CPU yet
  put(kServerCpu, ~0u);
  std::memcpy(m, kMagic, sizeof kMagic);
  // Compilers only ever see a complete region: it appears under its name at once.
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    munmap(p, size);
    ::close(fd);
    unlink(tmp.c_str());
    return unavailable("cannot create " + path + ": " + pipe::errnoText(err));
  }
  return std::unique_ptr<Channel>(new Channel(Role::kModel, fd, m, size, path, spinUs));
}

StatusOr<std::unique_ptr<Channel>> Channel::connect(const std::string& base, int connectTimeoutMs, int spinUs,
                                                    bool allowSharedFolder) {
  if (base.empty()) return invalidArgument("the channel base path is empty");
  const std::string dir = pipe::parentDir(base), path = base + ".shm";
  pipe::Deadline deadline(connectTimeoutMs);
  pipe::Backoff backoff;
  std::string why = path + " did not appear";
  bool folderChecked = false;
  std::unique_ptr<Channel> ch;
  for (;;) {
    if (!folderChecked && access(dir.c_str(), F_OK) == 0) {
      MLBRIDGE_RETURN_IF_ERROR(pipe::checkPrivateFolder(dir, allowSharedFolder));
      folderChecked = true;
    }
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != ENOENT) return unavailable("cannot open " + path + ": " + pipe::errnoText(errno));
    if (fd >= 0) {
      struct stat st;
      uint8_t head[32];
      if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return invalidArgument(path + " is not a shared-memory channel (not a regular file)");
      }
      Status priv = pipe::checkPrivate(st, "channel file " + path, allowSharedFolder);
      if (!priv.ok()) {
        ::close(fd);
        return priv;
      }
      size_t size = static_cast<size_t>(st.st_size);
      bool valid = size >= kControlBytes && pread(fd, head, sizeof head, 0) == static_cast<ssize_t>(sizeof head) &&
                   std::memcmp(head, kMagic, sizeof kMagic) == 0;
      uint32_t reqCap = valid ? readU32(head + kRequestBytes) : 0, repCap = valid ? readU32(head + kReplyBytes) : 0;
      if (!valid || readU32(head + kVersion) != kLayoutVersion || readU32(head + kDataOffset) != kControlBytes ||
          reqCap < kMinRingBytes || repCap < kMinRingBytes || reqCap > kMaxRingBytes || repCap > kMaxRingBytes ||
          (reqCap & (reqCap - 1)) || (repCap & (repCap - 1)) || size < kControlBytes + size_t(reqCap) + repCap) {
        ::close(fd);
        return invalidArgument(path + " is not a shared-memory channel of layout version " +
                               std::to_string(kLayoutVersion));
      }
      // Populated now: a page first touched inside evaluate() would cost a fault there.
      void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        return unavailable("cannot map " + path + ": " + pipe::errnoText(err));
      }
      ch.reset(new Channel(Role::kCompiler, fd, static_cast<uint8_t*>(p), size, path, spinUs));
      pid_t server = static_cast<pid_t>(ch->load(kServerPid));
      if (ch->load(kServerClosed) == kServerGone || !ch->peer_.watch(server)) {
        why = "the model that created " + path + " (pid " + std::to_string(server) + ") is gone";
        ch.reset();  // a new model may replace the file: retry
      } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        why = "another compiler is using " + path;
        ch.reset();
      } else {
        break;
      }
    }
    if (deadline.expired())
      return unavailable(why + " (waited " + std::to_string(connectTimeoutMs) + " ms; is the model running?)");
    backoff.pause(deadline);
  }
  // Claim a session: the model resets the request ring and accepts it.
  uint32_t s = ch->load(kSession) + 1;
  if (s == 0 || s == kServerGone) s = 1;
  ch->store(kClientPid, static_cast<uint32_t>(getpid()));
  ch->store(kSession, s);
  ch->session_ = s;
  ch->ring();
  Channel& c = *ch;
  Event e;
  std::string what = "waiting for the model to accept the session on " + path;
  MLBRIDGE_RETURN_IF_ERROR(c.waitFor(
      [&c, s] {
        if (c.load(kAccepted) == s) return Event::kReady;
        return c.peerClosedWord() ? Event::kClosed : Event::kNone;
      },
      deadline, what.c_str(), &e));
  if (e == Event::kClosed) return c.peerGone(what.c_str(), 0, 0);
  // Replies a previous compiler left unread are not ours.
  c.inHead_ = c.load(kRepTail);
  c.store(kRepHead, c.inHead_);
  c.outTail_ = c.load(kReqTail);
  return ch;
}

Status Channel::accept(const pipe::Deadline& deadline) {
  Event e;
  peer_.reset();  // between sessions nobody is watched
  uint32_t accepted = load(kAccepted);
  MLBRIDGE_RETURN_IF_ERROR(waitFor(
      [&] { return load(kSession) != accepted ? Event::kReady : Event::kNone; }, deadline,
      "waiting for a compiler", &e));
  if (e != Event::kReady) return unavailable("waiting for a compiler: no session");
  session_ = load(kSession);
  ended_ = false;
  peer_.watch(static_cast<pid_t>(load(kClientPid)));
  // Requests a dead compiler left unread are not this session's.
  inHead_ = load(kReqTail);
  store(kReqHead, inHead_);
  store(kAccepted, session_);
  ring();
  return Status::OK();
}

}  // namespace shm
}  // namespace mlbridge
