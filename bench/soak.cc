// `mlbridge-bench soak --minutes N`: many concurrent compiler sessions against
// Python model servers that are SIGKILLed at random moments and restarted.
//
//   mlbridge-bench soak [--minutes M] [--sessions S] [--seed N] [--transports pipe,shm,grpc]
//                       [--kill-every-s S] [--timeout-ms T] [--slack-ms MS] [--python PY]
//                       [--malloc-arenas N] [--keep-grpc 0|1] [--malloc-tcache 0|1]
//                       [--malloc-mmap-threshold BYTES]
//
// S threads in this process play the compilers, spread over named pipes,
// shared memory and gRPC (PipeModelRunner, ShmModelRunner, GrpcModelRunner),
// in every wire format; one Python process per transport (bench/soak_peer.py)
// serves all of that transport's sessions. A seeded killer SIGKILLs a random
// model process every ~--kill-every-s seconds; each restarted model may also
// kill itself in the middle of its N-th answer (after reading the request,
// or after writing half of the reply). The checks, each a non-zero exit:
//   * every failure is reported within its bound (the runner's timeouts, see
//     Bounds) plus --slack-ms, and no call hangs;
//   * every answer is the right one for its request (the model's answer is a
//     function of the request: session, sequence number, payload);
//   * no file descriptor or thread leaks, RSS and the heap in use grow < 5 %,
//     and no GrpcChannel outlives its runner: measured with every session
//     closed and every model up, after the warm-up and after each ~minute;
//   * the model processes die only by SIGKILL (never crash) and inherit no
//     descriptor from this process (gRPC's TCP sockets, which gRPC marks
//     close-on-exec only after creating them, are counted apart).
// Output: one JSON line per transport and a summary line, like the other modes.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include <malloc.h>
#include <netinet/in.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_received (glibc's is older)
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "mlbridge/mlbridge.hpp"
#include "mlbridge/shm_runner.h"
#ifdef MLBRIDGE_BENCH_WITH_GRPC
#include "mlbridge/grpc_runner.h"
#endif

extern char** environ;

using namespace mlbridge;
using Clock = std::chrono::steady_clock;

namespace {

enum Transport { kPipe, kShm, kGrpc, kTransports };
const char* const kTransportNames[kTransports] = {"pipe", "shm", "grpc"};

struct Options {
  double minutes = 1;
  int sessions = 64;
  uint64_t seed = 1;
  std::string python = "python3";
  std::string transports = "pipe,shm,grpc";
  double killEverySec = 3;
  int timeoutMs = 2000;  // pipe/shm timeoutMs, gRPC deadlineMs
  int slackMs = 1000;    // scheduling on a loaded 2-core machine
  // glibc's malloc arenas (0: its default, 8 per core). With 64 threads on
  // the default, RSS climbs for many minutes as arenas fill in, while the
  // bytes in use stay flat; 2 makes RSS a leak signal (docs/reliability.md).
  int mallocArenas = 2;
  // glibc's per-thread cache of freed chunks (tcache): malloc_info cannot see
  // it, so the chunks it holds count as in use. Over minutes 64 threads fill
  // it in, size class by size class, and the heap in use seemed to grow
  // 20-40 kB a minute with nothing leaked (docs/reliability.md). Off by
  // default (the bench restarts itself with GLIBC_TUNABLES): the heap in use
  // is then what is live.
  bool mallocTcache = false;
  // glibc raises its mmap threshold each time an mmapped chunk is freed (up
  // to 32 MiB), after which the payload buffers (up to 256 KiB) come from the
  // arenas and leave free holes that malloc_trim cannot return: RSS then
  // drifts up with the heap in use flat. A fixed threshold keeps big buffers
  // mmapped, returned at free (0: glibc's dynamic default).
  int mallocMmapThreshold = 128 << 10;
  bool keepGrpc = true;  // hold gRPC initialized between sessions (see Soak::run)
};

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ---- what the process holds ---------------------------------------------------
// Whether glibc's tcache is on in this process (see Options::mallocTcache).
bool gTcacheOn = true;
bool tcacheOn() { return gTcacheOn; }

int countDir(const char* path) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Heap that one socket of gRPC 1.51's leak holds (measured: the steps of the
// heap in use in a 30-minute soak, and a standalone reproducer).
constexpr long kGrpcUnclosedSocketKb = 12;
// Heap that one more thread in gRPC's pools holds (soak runs: 5 to 12 kB more
// heap for 6 to 11 more pool threads, about 1.1 kB each).
constexpr long kGrpcPoolThreadKb = 1;
// Resident memory that one more gRPC pool thread may bring: its touched stack
// and what malloc keeps after it (a one-minute soak that failed at +7.9 % RSS:
// 1.8 MB more RSS, 2.2 MB more held by malloc, 7 kB more heap in use, with 5
// more pool threads; the same soak with 2 more threads: +2.3 to 2.5 %). Like
// the heap, RSS is judged without them; the thread check bounds how many.
constexpr long kGrpcPoolThreadRssKb = 256;

struct Footprint {
  int fds = 0, threads = 0;
  int grpcThreads = 0;  // of threads, gRPC's own pools (by name): they grow on demand, bounded
  int sockets = 0;      // of fds, sockets: only gRPC makes them here (the library and the bench make none)
  // Of sockets, TCP connections gRPC shut down (FIN sent, state CLOSE) after
  // they had received bytes, and never closed: gRPC 1.51 keeps one when a
  // model dies just as a connection attempt to it is abandoned (about 12 kB
  // of heap each; docs/reliability.md). Counted, reported, and their memory
  // left out of the heap check (which is there to catch leaks of ours).
  int unclosedSockets = 0;
  long rssKb = 0;
  long heapKb = -1;  // malloc'd and not freed (glibc), -1 if unknown: tells a leak from fragmentation
  long heldKb = -1;  // what malloc holds from the system, free chunks included
  long rssUntrimmedKb = 0;  // quietFootprint(): RSS before malloc_trim
  long anonKb = 0, fileKb = 0, shmemKb = 0;  // RSS by kind: a leak is anonymous; code paths run late add file pages
};

#ifdef __GLIBC__
// Bytes malloc'd and not freed, over every arena (mallinfo2 sees the main
// arena only): malloc_info's totals, system size minus free chunks.
void heapKb(long* inUse, long* held) {
  char* text = nullptr;
  size_t size = 0;
  FILE* mem = open_memstream(&text, &size);
  if (!mem) return;
  malloc_info(0, mem);
  std::fclose(mem);
  std::string xml(text, size);
  std::free(text);
  // The totals follow the last </heap>.
  size_t at = xml.rfind("</heap>");
  if (at == std::string::npos) return;
  auto field = [&](const char* tag) -> long long {
    size_t p = xml.find(tag, at);
    if (p == std::string::npos) return -1;
    p = xml.find("size=\"", p);
    return p == std::string::npos ? -1 : std::atoll(xml.c_str() + p + 6);
  };
  long long fast = field("<total type=\"fast\""), rest = field("<total type=\"rest\""),
            mmapped = field("<total type=\"mmap\""), current = field("<system type=\"current\"");
  if (fast < 0 || rest < 0 || mmapped < 0 || current < 0) return;
  *inUse = static_cast<long>((current - fast - rest + mmapped) / 1024);
  *held = static_cast<long>((current + mmapped) / 1024);
}
#endif

int countGrpcThreads();

constexpr int kTcpClose = 7;  // TCP_CLOSE of the kernel's TCP states (include/net/tcp_states.h)

// Sockets among our descriptors; `unclosed`: of them, TCP connections in
// state CLOSE that had received bytes (see Footprint::unclosedSockets).
int countSockets(int* unclosed) {
  int n = 0;
  *unclosed = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[64] = {};
      ssize_t len = readlink(("/proc/self/fd/" + std::string(e->d_name)).c_str(), target, sizeof target - 1);
      if (len > 7 && std::strncmp(target, "socket:", 7) == 0) {
        ++n;
        tcp_info ti{};
        socklen_t tl = sizeof ti;
        if (getsockopt(std::atoi(e->d_name), IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 && ti.tcpi_state == kTcpClose &&
            ti.tcpi_bytes_received > 0)
          ++*unclosed;
      }
    }
    closedir(d);
  }
  return n;
}

Footprint footprint() {
  Footprint f;
  f.fds = countDir("/proc/self/fd") - 1;  // opendir's own descriptor
  f.threads = countDir("/proc/self/task");
  f.grpcThreads = countGrpcThreads();
  f.sockets = countSockets(&f.unclosedSockets);
  if (FILE* s = std::fopen("/proc/self/statm", "re")) {
    long size = 0, rss = 0;
    if (std::fscanf(s, "%ld %ld", &size, &rss) == 2) f.rssKb = rss * (sysconf(_SC_PAGESIZE) / 1024);
    std::fclose(s);
  }
  if (FILE* s = std::fopen("/proc/self/status", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, s)) {
      long v = 0;
      if (std::sscanf(line, "RssAnon: %ld", &v) == 1) f.anonKb = v;
      else if (std::sscanf(line, "RssFile: %ld", &v) == 1) f.fileKb = v;
      else if (std::sscanf(line, "RssShmem: %ld", &v) == 1) f.shmemKb = v;
    }
    std::fclose(s);
  }
#ifdef __GLIBC__
  heapKb(&f.heapKb, &f.heldKb);
#endif
  return f;
}

// At a quiet point (no session open): malloc's free chunks go back to the
// system first, so RSS counts what is live (a leak), not what the allocator
// keeps for later (fragmentation across 64 threads' arenas). The RSS before
// that is kept too.
Footprint quietFootprint() {
  long before = footprint().rssKb;
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  Footprint f = footprint();
  f.rssUntrimmedKb = before;
  return f;
}

// gRPC's pools (executors, timer threads, event engine) start threads on
// demand and keep them, and gRPC may hold a socket at a quiet point (seen: one
// socket, created after the warm-up, kept for minutes with no channel of ours
// alive): their numbers move from one quiet point to the next without a
// leak. They are held to a bound instead, which a leak of one per session
// passes within seconds; every other thread and descriptor (the library's,
// the bench's) must be back to its number after the warm-up.
constexpr int kGrpcBound = 64;

// gRPC names the threads of its pools (executors, timers, event engine,
// resolver, shutdown); Linux keeps 15 characters of a name.
bool isGrpcThread(const std::string& comm) {
  for (const char* p : {"default-executo", "resolver-execut", "grpc", "event_engine", "timer_manager",
                        "global-executor"})
    if (comm.compare(0, std::strlen(p), p) == 0) return true;
  return false;
}

std::string threadComm(const char* tid) {
  std::string comm;
  if (FILE* f = std::fopen(("/proc/self/task/" + std::string(tid) + "/comm").c_str(), "re")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f)) comm = buf;
    std::fclose(f);
  }
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

// This process's threads by name, in order of first appearance.
std::vector<std::pair<std::string, int>> threadsByName() {
  std::vector<std::pair<std::string, int>> names;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string comm = threadComm(e->d_name);
      auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == comm; });
      if (it == names.end()) names.emplace_back(comm, 1);
      else ++it->second;
    }
    closedir(d);
  }
  return names;
}

int countGrpcThreads() {
  int n = 0;
  for (const auto& t : threadsByName())
    if (isGrpcThread(t.first)) n += t.second;
  return n;
}

// "name x count, ...": whose threads outlive the sessions (gRPC names its own).
std::string threadNames() {
  std::string out;
  for (const auto& n : threadsByName()) out += (out.empty() ? "" : ", ") + n.first + " x" + std::to_string(n.second);
  return out;
}

std::string footprintJson(const Footprint& f) {
  return "{\"fds\":" + std::to_string(f.fds) + ",\"threads\":" + std::to_string(f.threads) +
         ",\"grpc_threads\":" + std::to_string(f.grpcThreads) + ",\"sockets\":" + std::to_string(f.sockets) + ",\"grpc_unclosed_sockets\":" + std::to_string(f.unclosedSockets) +
         ",\"rss_kb\":" + std::to_string(f.rssKb) + ",\"heap_kb\":" + std::to_string(f.heapKb) +
         ",\"malloc_held_kb\":" + std::to_string(f.heldKb) + ",\"rss_anon_kb\":" + std::to_string(f.anonKb) +
         ",\"rss_file_kb\":" + std::to_string(f.fileKb) + ",\"rss_shmem_kb\":" + std::to_string(f.shmemKb) +
         (f.rssUntrimmedKb ? ",\"rss_before_trim_kb\":" + std::to_string(f.rssUntrimmedKb) : std::string()) + "}";
}

// ---- the model's answer (bench/soak_peer.py computes the same) ---------------
void expectedAnswer(int64_t session, int64_t seq, const int32_t* x, size_t n, int64_t out[2]) {
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += x[i];
  out[0] = session * (int64_t(1) << 20) + seq;
  out[1] = 3 * sum + seq;
}

// ---- counters ---------------------------------------------------------------
struct Counters {
  std::mutex mu;
  long sessions = 0, decisions = 0, wrong = 0;
  long connectFailures = 0, evalFailures = 0, overBound = 0, hangs = 0;
  double maxConnectFailMs = 0, maxEvalFailMs = 0;
  std::string firstWrong, firstOverBound;
  // A few distinct error texts for the report, in fixed storage: the bench's
  // own bookkeeping must not grow the heap it measures.
  static constexpr int kSamples = 12, kSampleChars = 61;
  char sampleErrors[kSamples][kSampleChars] = {};
  int samples = 0;
};

// The bound on reporting a failure, by what the runner documents.
struct Bounds {
  int connectMs = 0, evalMs = 0;
};

// ---- the model processes ------------------------------------------------------
struct Peer {
  Transport transport;
  std::vector<std::string> bases;  // pipe/shm channels
  int port = 0;                    // gRPC: fixed after the first start
  std::string log;                 // its stderr
  std::mutex mu;
  pid_t pid = -1;
  bool up = false, killedByUs = false;
  // Results.
  long starts = 0, killsExternal = 0, killsSelf = 0, crashes = 0, startFailures = 0, inherited = 0;
  long inheritedTcp = 0;  // gRPC's TCP sockets (grpc/grpc#34634), reported, not ours
  std::string lastCrash;
};

class Soak {
 public:
  Soak(const Options& o, const std::string& dir) : o_(o), dir_(dir), rng_(o.seed) {}

  int run();

 private:
  void supervise(Peer* p);
  bool startPeer(Peer* p);
  void killer();
  void session(int index);
  void monitor();
  bool allPeersUp(int waitMs);
  std::unique_ptr<ModelRunner> connect(int index, Transport t, const std::vector<TensorSpec>& feats,
                                       const std::vector<TensorSpec>& advice, Status* error);
  void runSessions(double seconds);
  bool waitFor(double seconds);  // false once the run stops
  void recordFailure(Transport t, bool connecting, double ms, const Status& s);

  const Options& o_;
  std::string dir_;
  std::mt19937_64 rng_;  // the kill schedule (under rngMu_)
  std::mutex rngMu_;
  std::vector<Transport> enabled_;
  std::unique_ptr<Peer> peers_[kTransports];
  Counters counters_[kTransports];
  Bounds bounds_[kTransports];
  std::atomic<bool> stopAll_{false}, stopSessions_{false}, killerPaused_{false};
  std::mutex stopMu_;
  std::condition_variable stopCv_;
  // Per session: start of the call in flight (ns since the epoch of Clock, 0: none) and its bound.
  std::unique_ptr<std::atomic<int64_t>[]> callStart_;
  std::unique_ptr<std::atomic<int>[]> callBound_;
  std::unique_ptr<std::atomic<int>[]> callTransport_;
  std::atomic<int> sessionsRunning_{0};
  std::vector<int> payloads_;
  std::vector<WireFormat> formats_;
  std::string ownFds_;  // descriptors this process inherited ("3,10"): not ours to judge
#ifdef MLBRIDGE_BENCH_WITH_GRPC
  std::vector<std::weak_ptr<GrpcChannel>> grpcChannels_;  // each session's last channel
#endif
  int channelsAlive() const {
    int n = 0;
#ifdef MLBRIDGE_BENCH_WITH_GRPC
    for (const auto& w : grpcChannels_) n += !w.expired();
#endif
    return n;
  }
  int maxChannelsAlive_ = 0;  // at quiet points: should be 0
};

bool Soak::waitFor(double seconds) {
  std::unique_lock<std::mutex> lock(stopMu_);
  return !stopCv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopAll_.load(); });
}

std::string peerScript() {
#ifdef MLBRIDGE_SOURCE_DIR
  return std::string(MLBRIDGE_SOURCE_DIR) + "/bench/soak_peer.py";
#else
  return "soak_peer.py";
#endif
}

// Starts the model; true once it printed its ready line.
bool Soak::startPeer(Peer* p) {
  std::vector<std::string> args = {o_.python, peerScript(), kTransportNames[p->transport]};
  for (const std::string& b : p->bases) args.push_back(b);
  args.push_back("--ignore-fds=" + ownFds_);
  args.push_back("--parent");
  args.push_back(std::to_string(getpid()));
  if (p->transport == kGrpc) {
    args.push_back("--address");
    args.push_back("127.0.0.1:" + std::to_string(p->port));
    args.push_back("--max-workers");
    args.push_back(std::to_string(o_.sessions + 8));
  }
  {
    // Half the restarts also die by themselves in the middle of an answer.
    std::lock_guard<std::mutex> lock(rngMu_);
    if (rng_() % 2) {
      args.push_back("--die-after");
      args.push_back(std::to_string(50 + rng_() % 3000));
      args.push_back("--die-how");
      args.push_back(p->transport != kGrpc && rng_() % 2 ? "reply" : "policy");
    }
  }
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, p->log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(p->mu);
    p->pid = pid;
    p->killedByUs = false;
    ++p->starts;
  }
  // The ready line: {"event": "ready", "port": N, "inherited": K, "inherited_tcp": T}.
  std::string line;
  pollfd pfd{out[0], POLLIN, 0};
  auto t0 = Clock::now();
  while (line.find('\n') == std::string::npos && msSince(t0) < 60000 && !stopAll_) {
    if (poll(&pfd, 1, 200) <= 0) continue;
    char buf[256];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  size_t at = line.find("\"port\": ");
  if (at == std::string::npos) return false;
  int port = std::atoi(line.c_str() + at + 8);
  size_t inh = line.find("\"inherited\": ");
  std::lock_guard<std::mutex> lock(p->mu);
  if (p->transport == kGrpc) p->port = port;
  if (inh != std::string::npos) p->inherited += std::atoi(line.c_str() + inh + 13);
  size_t tcp = line.find("\"inherited_tcp\": ");
  if (tcp != std::string::npos) p->inheritedTcp += std::atoi(line.c_str() + tcp + 17);
  p->up = true;
  return true;
}

// How a model that was up ended: killed by us, by itself (mid-answer), or a crash.
void classifyDeath(Peer* p, int status) {
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    if (p->killedByUs) ++p->killsExternal;
    else ++p->killsSelf;
    return;
  }
  ++p->crashes;
  p->lastCrash = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                     : "exit code " + std::to_string(WEXITSTATUS(status));
}

// Keeps one model process alive: starts it, reaps it, classifies its death, restarts it.
void Soak::supervise(Peer* p) {
  while (!stopAll_) {
    bool ready = startPeer(p);
    pid_t pid;
    {
      std::lock_guard<std::mutex> lock(p->mu);
      pid = p->pid;
      if (!ready) ++p->startFailures;
    }
    if (pid <= 0) {
      waitFor(1);
      continue;
    }
    if (!ready) kill(pid, SIGKILL);
    int status = 0;
    for (;;) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) break;
      if (stopAll_) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        std::lock_guard<std::mutex> lock(p->mu);
        p->pid = -1;
        p->up = false;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // reaping poll, not synchronization
    }
    double restartDelay;
    {
      // Compilers also meet a channel with no model for a while.
      std::lock_guard<std::mutex> lock(rngMu_);
      restartDelay = static_cast<double>(rng_() % 500) / 1000;
    }
    {
      std::lock_guard<std::mutex> lock(p->mu);
      p->pid = -1;
      p->up = false;
      if (ready) classifyDeath(p, status);
    }
    waitFor(restartDelay);
  }
}

// SIGKILLs a random model at random moments (seeded), unless paused.
void Soak::killer() {
  for (;;) {
    double wait;
    size_t which;
    {
      std::lock_guard<std::mutex> lock(rngMu_);
      wait = std::exponential_distribution<double>(1.0 / o_.killEverySec)(rng_);
      which = rng_() % enabled_.size();
    }
    if (!waitFor(wait)) return;
    if (killerPaused_) continue;
    Peer* p = peers_[enabled_[which]].get();
    std::lock_guard<std::mutex> lock(p->mu);
    if (p->pid > 0 && p->up) {
      p->killedByUs = true;
      kill(p->pid, SIGKILL);
    }
  }
}

bool Soak::allPeersUp(int waitMs) {
  auto t0 = Clock::now();
  for (;;) {
    bool all = true;
    for (Transport t : enabled_) {
      std::lock_guard<std::mutex> lock(peers_[t]->mu);
      all = all && peers_[t]->up;
    }
    if (all) return true;
    if (msSince(t0) > waitMs || stopAll_) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::unique_ptr<ModelRunner> Soak::connect(int index, Transport t, const std::vector<TensorSpec>& feats,
                                           const std::vector<TensorSpec>& advice, Status* error) {
  const Peer& p = *peers_[t];
  if (t == kGrpc) {
#ifdef MLBRIDGE_BENCH_WITH_GRPC
    GrpcRunnerOptions g;
    g.address = "127.0.0.1:" + std::to_string(p.port);
    g.deadlineMs = o_.timeoutMs;
    g.retry.maxAttempts = 1000;
    g.retry.maxBackoffMs = 500;
    g.retry.totalBudgetMs = o_.timeoutMs + 1000;
    g.clientName = "soak-" + std::to_string(index);
    // The channel is made here so that a quiet point can tell whether the
    // library let one outlive its runner (each keeps gRPC initialized).
    auto ch = GrpcChannel::create(g);
    if (!ch.ok()) {
      *error = ch.status();
      return nullptr;
    }
    grpcChannels_[static_cast<size_t>(index)] = *ch;
    auto r = GrpcModelRunner::create(feats, advice, std::move(*ch));
    if (!r.ok()) {
      *error = r.status();
      return nullptr;
    }
    return std::move(*r);
#else
    *error = unimplemented("gRPC is not built in");
    return nullptr;
#endif
  }
  size_t perTransport = p.bases.size();
  std::string base = p.bases[static_cast<size_t>(index) / enabled_.size() % perTransport];  // its own channel
  if (t == kShm) {
    ShmOptions s;
    s.base = base;
    s.format = formats_[index];
    s.timeoutMs = o_.timeoutMs;
    s.connectTimeoutMs = o_.timeoutMs + 1000;
    s.spinUs = 0;
    auto r = ShmModelRunner::create(feats, advice, s);
    if (!r.ok()) {
      *error = r.status();
      return nullptr;
    }
    return std::move(*r);
  }
  PipeOptions po;
  po.base = base;
  po.format = formats_[index];
  po.timeoutMs = o_.timeoutMs;
  po.connectTimeoutMs = o_.timeoutMs + 1000;
  auto r = PipeModelRunner::create(feats, advice, po);
  if (!r.ok()) {
    *error = r.status();
    return nullptr;
  }
  return std::move(*r);
}

void Soak::recordFailure(Transport t, bool connecting, double ms, const Status& s) {
  Counters& c = counters_[t];
  int bound = (connecting ? bounds_[t].connectMs : bounds_[t].evalMs) + o_.slackMs;
  std::lock_guard<std::mutex> lock(c.mu);
  (connecting ? c.connectFailures : c.evalFailures)++;
  double& worst = connecting ? c.maxConnectFailMs : c.maxEvalFailMs;
  worst = std::max(worst, ms);
  if (ms > bound) {
    ++c.overBound;
    if (c.firstOverBound.empty())
      c.firstOverBound = std::string(connecting ? "connect" : "evaluate") + " failed after " + std::to_string(ms) +
                         " ms (bound " + std::to_string(bound) + "): " + s.toString();
  }
  // A few distinct kinds of error (their first 60 characters), for the report.
  std::string kind = s.toString().substr(0, Counters::kSampleChars - 1);
  bool seen = false;
  for (int i = 0; i < c.samples && !seen; ++i) seen = kind == c.sampleErrors[i];
  if (!seen && c.samples < Counters::kSamples)
    std::memcpy(c.sampleErrors[c.samples++], kind.c_str(), kind.size() + 1);
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// One compiler: sessions of random length, one after another, until told to stop.
void Soak::session(int index) {
  const Transport t = enabled_[static_cast<size_t>(index) % enabled_.size()];
  const size_t n = static_cast<size_t>(payloads_[index]);
  std::mt19937_64 rng(o_.seed * 1000003u + static_cast<uint64_t>(index));
  std::vector<TensorSpec> feats = {TensorSpec::create<int64_t>("id", {2}),
                                   TensorSpec::create<int32_t>("x", {static_cast<int64_t>(n)})};
  std::vector<TensorSpec> advice = {TensorSpec::create<int64_t>("y", {2})};
  Counters& c = counters_[t];
  int64_t seq = 0;
  auto begin = [&](int boundMs) {
    callBound_[index] = boundMs + o_.slackMs;
    callStart_[index] = nowNs();
  };
  while (!stopSessions_) {
    Status error;
    auto t0 = Clock::now();
    begin(bounds_[t].connectMs);
    std::unique_ptr<ModelRunner> r = connect(index, t, feats, advice, &error);
    callStart_[index] = 0;
    if (!r) {
      recordFailure(t, true, msSince(t0), error);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(c.mu);
      ++c.sessions;
    }
    long length = 1 + static_cast<long>(rng() % 2000);
    for (long k = 0; k < length && !stopSessions_; ++k) {
      ++seq;
      int64_t* id = r->getTensor<int64_t>(0);
      int32_t* x = r->getTensor<int32_t>(1);
      id[0] = index;
      id[1] = seq;
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<int32_t>(rng() % (1u << 21)) - (1 << 20);
      int64_t want[2], got[2] = {0, 0};
      expectedAnswer(index, seq, x, n, want);
      t0 = Clock::now();
      begin(bounds_[t].evalMs);
      Status s = r->evaluate();
      double ms = msSince(t0);
      callStart_[index] = 0;
      if (s.ok()) s = r->outputInto<int64_t>(0, Span<int64_t>(got, 2));
      if (!s.ok()) {
        recordFailure(t, false, ms, s);
        break;
      }
      std::lock_guard<std::mutex> lock(c.mu);
      if (got[0] == want[0] && got[1] == want[1]) {
        ++c.decisions;
      } else {
        ++c.wrong;
        if (c.firstWrong.empty())
          c.firstWrong = "session " + std::to_string(index) + " request " + std::to_string(seq) + ": got [" +
                         std::to_string(got[0]) + ", " + std::to_string(got[1]) + "], want [" +
                         std::to_string(want[0]) + ", " + std::to_string(want[1]) + "]";
      }
    }
    // Ends the session (the runner's finish() is bounded by its timeouts too).
    t0 = Clock::now();
    begin(bounds_[t].evalMs);
    r.reset();
    callStart_[index] = 0;
  }
  --sessionsRunning_;
}

// Flags a call that runs past its bound while it still runs (a hang never returns).
void Soak::monitor() {
  std::vector<int64_t> flagged(static_cast<size_t>(o_.sessions), 0);
  while (waitFor(0.25)) {
    int64_t now = nowNs();
    for (int i = 0; i < o_.sessions; ++i) {
      int64_t start = callStart_[i];
      if (start == 0 || start == flagged[i]) continue;
      if ((now - start) / 1000000 > callBound_[i] + 5000) {  // well past: the return would say it otherwise
        flagged[i] = start;
        Counters& c = counters_[callTransport_[i]];
        std::lock_guard<std::mutex> lock(c.mu);
        ++c.hangs;
      }
    }
  }
}

void Soak::runSessions(double seconds) {
  static const Clock::time_point runStart = Clock::now();
  stopSessions_ = false;
  sessionsRunning_ = o_.sessions;
  std::vector<std::thread> threads;
  for (int i = 0; i < o_.sessions; ++i) threads.emplace_back([this, i] { session(i); });
  auto t0 = Clock::now();
  double nextReport = 60;
  while (msSince(t0) < seconds * 1000 && !stopAll_) {
    waitFor(std::min(1.0, seconds - msSince(t0) / 1000));
    double done = msSince(t0) / 1000;
    if (done >= nextReport) {
      long d = 0, k = 0;
      for (Transport t : enabled_) {
        std::lock_guard<std::mutex> lock(counters_[t].mu);
        d += counters_[t].decisions;
      }
      for (Transport t : enabled_) {
        std::lock_guard<std::mutex> lock(peers_[t]->mu);
        k += peers_[t]->killsExternal + peers_[t]->killsSelf;
      }
      std::fprintf(stderr, "soak: %.0f s, %ld decisions, %ld kills\n", msSince(runStart) / 1000, d, k);
      nextReport += 60;
    }
  }
  stopSessions_ = true;
  // Every call ends within its bound; one that does not is a hang we cannot join.
  int worst = 0;
  for (Transport t : enabled_) worst = std::max({worst, bounds_[t].connectMs, bounds_[t].evalMs});
  auto t1 = Clock::now();
  while (sessionsRunning_ > 0 && msSince(t1) < worst + o_.slackMs + 5000)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (sessionsRunning_ > 0) {
    std::printf("{\"bench\":\"soak\",\"ok\":false,\"hung_sessions\":%d}\n", sessionsRunning_.load());
    std::fflush(stdout);
    for (Transport t : enabled_) {
      std::lock_guard<std::mutex> lock(peers_[t]->mu);
      if (peers_[t]->pid > 0) kill(peers_[t]->pid, SIGKILL);
    }
    std::fprintf(stderr, "soak: %d sessions hang after the run (see %s/*.log)\n", sessionsRunning_.load(), dir_.c_str());
    _exit(1);
  }
  for (std::thread& th : threads) th.join();
}

int Soak::run() {
  for (const char* name : {"pipe", "shm", "grpc"}) {
    if (o_.transports.find(name) == std::string::npos) continue;
    Transport t = name[0] == 'p' ? kPipe : name[0] == 's' ? kShm : kGrpc;
#ifndef MLBRIDGE_BENCH_WITH_GRPC
    if (t == kGrpc) {
      std::fprintf(stderr, "mlbridge-bench soak: gRPC is not built in (MLBRIDGE_WITH_GRPC off): soaking the rest\n");
      continue;
    }
#endif
    enabled_.push_back(t);
  }
  if (enabled_.empty()) return 2;
  // The bounds each runner documents for reporting a failure.
  for (Transport t : {kPipe, kShm}) {
    bounds_[t].evalMs = 2 * o_.timeoutMs;                              // the write, then the reply
    bounds_[t].connectMs = (o_.timeoutMs + 1000) + 2 * o_.timeoutMs;  // the model, then header and acceptance
  }
  bounds_[kGrpc].evalMs = (o_.timeoutMs + 1000) + o_.timeoutMs;  // retry budget + the last attempt's deadline
  bounds_[kGrpc].connectMs = bounds_[kGrpc].evalMs;

  // Sessions: transports round robin; formats and payload sizes vary.
  std::mt19937_64 layout(o_.seed);
  const int sizes[] = {4, 64, 1024, 16384, 65536};
  for (int i = 0; i < o_.sessions; ++i) {
    WireFormat f = static_cast<WireFormat>(0);
    const char* names[] = {"bitstream", "protobuf", "json"};
    parseWireFormat(names[(i / enabled_.size()) % 3], &f);
    formats_.push_back(f);
    int n = sizes[layout() % 5];
    if (f == WireFormat::kJson) n = std::min(n, 1024);  // JSON of 64K ints: slow, not interesting
    payloads_.push_back(n);
  }
#ifdef MLBRIDGE_BENCH_WITH_GRPC
  grpcChannels_.resize(static_cast<size_t>(o_.sessions));
#endif
  callStart_.reset(new std::atomic<int64_t>[o_.sessions]);
  callBound_.reset(new std::atomic<int>[o_.sessions]);
  callTransport_.reset(new std::atomic<int>[o_.sessions]);
  for (int i = 0; i < o_.sessions; ++i) {
    callStart_[i] = 0;
    callBound_[i] = 0;
    callTransport_[i] = enabled_[static_cast<size_t>(i) % enabled_.size()];
  }
  // A channel per ~4 sessions (pipes and shm serve one session at a time per channel).
  for (Transport t : enabled_) {
    peers_[t].reset(new Peer);
    Peer& p = *peers_[t];
    p.transport = t;
    p.log = dir_ + "/" + kTransportNames[t] + ".log";
    int perTransport = 0;
    for (int i = 0; i < o_.sessions; ++i) perTransport += enabled_[static_cast<size_t>(i) % enabled_.size()] == t;
    // A channel per session: a named-pipe channel carries one compiler at a time.
    int channels = perTransport;
    if (t != kGrpc)
      for (int c = 0; c < channels; ++c) p.bases.push_back(dir_ + "/" + kTransportNames[t] + std::to_string(c));
  }

#ifdef MLBRIDGE_BENCH_WITH_GRPC
  // --keep-grpc 1 (the default): gRPC stays initialized for the whole run, as
  // in a long-lived compiler, and its pools count in every measure (bounded,
  // see kGrpcBound). With 0 the last runner's end shuts gRPC down at every
  // quiet point, which exercises gRPC's init and shutdown as well
  // (docs/reliability.md). A channel only connects when used; this one never is.
  std::shared_ptr<GrpcChannel> keepGrpc;
  if (o_.keepGrpc && std::find(enabled_.begin(), enabled_.end(), kGrpc) != enabled_.end()) {
    GrpcRunnerOptions g;
    g.address = "127.0.0.1:1";
    auto ch = GrpcChannel::create(g);
    if (ch.ok()) keepGrpc = *ch;
  }
#endif
  Footprint atStart = footprint();
  if (DIR* d = opendir("/proc/self/fd")) {
    int self = dirfd(d);
    while (dirent* e = readdir(d)) {
      int fd = std::atoi(e->d_name);
      if (e->d_name[0] != '.' && fd > 2 && fd != self) ownFds_ += (ownFds_.empty() ? "" : ",") + std::to_string(fd);
    }
    closedir(d);
  }
  std::vector<std::thread> supervisors;
  for (Transport t : enabled_) supervisors.emplace_back([this, t] { supervise(peers_[t].get()); });
  std::thread killerThread([this] { killer(); });
  std::thread monitorThread([this] { monitor(); });

  const double total = o_.minutes * 60;
  const double warmup = std::min(std::max(10.0, total * 0.1), total / 2);
  auto t0 = Clock::now();
  bool up = allPeersUp(60000);
  Footprint afterWarmup, atEnd;
  bool settled = false;
  std::string rssCheckpoints;  // kB at the end of each segment
  if (up) {
    runSessions(warmup);
    // Every session closed, every model up: the footprint to compare.
    killerPaused_ = true;
    allPeersUp(60000);
    afterWarmup = quietFootprint();
    for (auto t1 = Clock::now(); afterWarmup.sockets > 0 && msSince(t1) < 10000;) {  // gRPC still closing
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      afterWarmup = quietFootprint();
    }
    // The rest in segments of about a minute, each ending at the same quiet
    // point: the RSS at each shows a trend, not just two numbers.
    double rest = std::max(1.0, total - msSince(t0) / 1000);
    int segments = std::max(1, static_cast<int>(rest / 60 + 0.5));
    for (int i = 0; i < segments && !stopAll_; ++i) {
      killerPaused_ = false;
      runSessions(std::max(1.0, (total - msSince(t0) / 1000) / (segments - i)));
      killerPaused_ = true;
      allPeersUp(60000);
      // Threads a library parks (gRPC's pools) may take a moment to end, and
      // gRPC closes a destroyed channel's connections asynchronously: their
      // buffers are in the heap until then. Wait (bounded) for both, so the
      // heap is compared at like points.
      auto t1 = Clock::now();
      bool socketsBack = false;
      do {
        atEnd = quietFootprint();
        settled = atEnd.fds - atEnd.sockets <= afterWarmup.fds - afterWarmup.sockets &&
                  atEnd.sockets <= kGrpcBound &&
                  atEnd.threads - atEnd.grpcThreads <= afterWarmup.threads - afterWarmup.grpcThreads &&
                  atEnd.grpcThreads <= kGrpcBound;
        socketsBack = atEnd.sockets <= afterWarmup.sockets;
        if (!settled || !socketsBack) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      } while ((!settled && msSince(t1) < 30000) || (!socketsBack && msSince(t1) < 10000));
      rssCheckpoints += (rssCheckpoints.empty() ? "" : ",") + std::to_string(atEnd.rssKb);
      maxChannelsAlive_ = std::max(maxChannelsAlive_, channelsAlive());
      if (!settled)
        std::fprintf(stderr, "soak: threads at a quiet point: %s; gRPC channels alive: %d\n", threadNames().c_str(),
                     channelsAlive());
      if (segments > 1)
        std::fprintf(stderr,
                     "soak: segment %d/%d: %s (after warm-up: %s)\n", i + 1, segments,
                     footprintJson(atEnd).c_str(), footprintJson(afterWarmup).c_str());
    }
  }
  double seconds = msSince(t0) / 1000;
  {
    std::lock_guard<std::mutex> lock(stopMu_);
    stopAll_ = true;
  }
  stopCv_.notify_all();
  killerThread.join();
  monitorThread.join();
  for (std::thread& th : supervisors) th.join();

  // ---- report -----------------------------------------------------------------
  bool ok = up;
  long sessions = 0, decisions = 0, kills = 0, failures = 0, wrong = 0;
  double maxFailMs = 0;
  int maxBound = 0;
  for (Transport t : enabled_) {
    Counters& c = counters_[t];
    Peer& p = *peers_[t];
    bool good = c.wrong == 0 && c.overBound == 0 && c.hangs == 0 && p.crashes == 0 && p.inherited == 0 &&
                c.decisions > 0;
    ok = ok && good;
    sessions += c.sessions;
    decisions += c.decisions;
    wrong += c.wrong;
    kills += p.killsExternal + p.killsSelf;
    failures += c.connectFailures + c.evalFailures;
    maxFailMs = std::max({maxFailMs, c.maxConnectFailMs, c.maxEvalFailMs});
    maxBound = std::max({maxBound, bounds_[t].connectMs, bounds_[t].evalMs});
    std::string errors;
    for (int i = 0; i < c.samples; ++i) {
      const std::string e = c.sampleErrors[i];
      std::string q;
      for (char ch : e) q += ch == '"' || ch == '\\' ? '\'' : (static_cast<unsigned char>(ch) < 32 ? ' ' : ch);
      errors += (errors.empty() ? "\"" : ",\"") + q + "\"";
    }
    std::printf(
        "{\"bench\":\"soak\",\"transport\":\"%s\",\"ok\":%s,\"sessions\":%ld,\"decisions\":%ld,\"wrong_answers\":%ld,"
        "\"kills_external\":%ld,\"kills_self_mid_answer\":%ld,\"model_starts\":%ld,\"model_crashes\":%ld,"
        "\"model_start_failures\":%ld,\"inherited_fds\":%ld,\"inherited_grpc_tcp_sockets\":%ld,\"connect_failures\":%ld,\"evaluate_failures\":%ld,"
        "\"max_connect_failure_ms\":%.1f,\"connect_bound_ms\":%d,\"max_evaluate_failure_ms\":%.1f,"
        "\"evaluate_bound_ms\":%d,\"slack_ms\":%d,\"over_bound\":%ld,\"hangs\":%ld,\"errors\":[%s]}\n",
        kTransportNames[t], good ? "true" : "false", c.sessions, c.decisions, c.wrong, p.killsExternal, p.killsSelf,
        p.starts, p.crashes, p.startFailures, p.inherited, p.inheritedTcp, c.connectFailures, c.evalFailures, c.maxConnectFailMs,
        bounds_[t].connectMs, c.maxEvalFailMs, bounds_[t].evalMs, o_.slackMs, c.overBound, c.hangs, errors.c_str());
    if (p.inheritedTcp > 0)
      std::fprintf(stderr,
                   "soak: %s: %ld model start(s) inherited a gRPC TCP socket: gRPC sets close-on-exec after "
                   "socket(), a race with spawns in other threads (grpc/grpc#34634); not counted as a leak\n",
                   kTransportNames[t], p.inheritedTcp);
    if (!c.firstWrong.empty()) std::fprintf(stderr, "soak: %s: wrong answer: %s\n", kTransportNames[t], c.firstWrong.c_str());
    if (!c.firstOverBound.empty())
      std::fprintf(stderr, "soak: %s: late failure: %s\n", kTransportNames[t], c.firstOverBound.c_str());
    if (p.crashes) std::fprintf(stderr, "soak: %s: the model crashed (%s), see %s\n", kTransportNames[t], p.lastCrash.c_str(), p.log.c_str());
    if (c.decisions == 0) std::fprintf(stderr, "soak: %s: no decision answered, see %s\n", kTransportNames[t], p.log.c_str());
  }
  double rssGrowth = afterWarmup.rssKb > 0 ? 100.0 * (atEnd.rssKb - afterWarmup.rssKb) / afterWarmup.rssKb : 0;
  double heapGrowth =
      afterWarmup.heapKb > 0 ? 100.0 * (atEnd.heapKb - afterWarmup.heapKb) / afterWarmup.heapKb : 0;
  // The heap check is there to catch leaks of ours. What gRPC holds of its
  // own is taken out of it, as the descriptor and thread checks leave gRPC's
  // sockets and pool threads to their own bound: gRPC 1.51's unclosed sockets
  // (Footprint::unclosedSockets, identified one by one, about 12 kB each) and
  // the pool threads it started since the warm-up (about 1 kB of heap each).
  // Both are reported below.
  const int grpcLeaked = std::max(0, atEnd.unclosedSockets - afterWarmup.unclosedSockets);
  const int grpcNewThreads = std::max(0, atEnd.grpcThreads - afterWarmup.grpcThreads);
  const long grpcLeakKb = kGrpcUnclosedSocketKb * grpcLeaked + kGrpcPoolThreadKb * grpcNewThreads;
  double heapGrowthOurs =
      afterWarmup.heapKb > 0 ? 100.0 * (atEnd.heapKb - grpcLeakKb - afterWarmup.heapKb) / afterWarmup.heapKb : 0;
  double rssGrowthOurs =
      afterWarmup.rssKb > 0
          ? 100.0 * (atEnd.rssKb - kGrpcPoolThreadRssKb * grpcNewThreads - afterWarmup.rssKb) / afterWarmup.rssKb
          : 0;
  bool leakFree = settled && rssGrowthOurs < 5.0 && heapGrowthOurs < 5.0 && maxChannelsAlive_ == 0;
  ok = ok && leakFree;
  if (!up) std::fprintf(stderr, "soak: the model processes did not start (see %s/*.log)\n", dir_.c_str());
  if (!settled) std::fprintf(stderr, "soak: descriptors or threads leaked (see the JSON line)\n");
  if (rssGrowthOurs >= 5.0)
    std::fprintf(stderr, "soak: RSS grew %.1f %% after the warm-up (%.1f %% without gRPC's new pool threads)\n",
                 rssGrowth, rssGrowthOurs);
  if (heapGrowthOurs >= 5.0)
    std::fprintf(stderr,
                 "soak: the heap in use grew %.1f %% after the warm-up (%.1f %% without gRPC's unclosed sockets and "
                 "new pool threads)\n",
                 heapGrowth, heapGrowthOurs);
  if (grpcLeaked > 0)
    std::fprintf(stderr,
                 "soak: gRPC kept %d more connection(s) it shut down but never closed (TCP state CLOSE), about %ld kB "
                 "of heap each: gRPC 1.51 keeps one when a model dies as a connection attempt is abandoned "
                 "(docs/reliability.md); the heap grew %.1f %%, %.1f %% without them\n",
                 grpcLeaked, kGrpcUnclosedSocketKb, heapGrowth, heapGrowthOurs);
  std::string skipped;
#ifndef MLBRIDGE_BENCH_WITH_GRPC
  skipped = ",\"skipped\":[\"grpc (not built)\"]";
#endif
  std::printf("{\"bench\":\"soak\",\"ok\":%s,\"seed\":%llu,\"seconds\":%.1f,\"warmup_s\":%.1f,\"concurrent_sessions\":%d,"
              "\"sessions\":%ld,\"decisions\":%ld,\"wrong_answers\":%ld,\"kills\":%ld,\"failures_reported\":%ld,"
              "\"max_failure_ms\":%.1f,\"max_bound_ms\":%d,\"slack_ms\":%d,\"start\":%s,\"after_warmup\":%s,"
              "\"end\":%s,\"rss_kb_segments\":[%s],\"rss_growth_pct\":%.2f,\"heap_growth_pct\":%.2f,"
              "\"grpc_unclosed_sockets_added\":%d,\"grpc_pool_threads_added\":%d,\"heap_growth_without_them_pct\":%.2f,"
              "\"rss_growth_without_them_pct\":%.2f,"
              "\"malloc_arenas\":%d,\"malloc_mmap_threshold\":%d,\"malloc_tcache\":%s,\"keep_grpc\":%s,\"grpc_channels_alive\":%d%s}\n",
              ok ? "true" : "false", static_cast<unsigned long long>(o_.seed), seconds, warmup, o_.sessions, sessions,
              decisions, wrong, kills, failures, maxFailMs, maxBound, o_.slackMs, footprintJson(atStart).c_str(),
              footprintJson(afterWarmup).c_str(), footprintJson(atEnd).c_str(), rssCheckpoints.c_str(), rssGrowth,
              heapGrowth, grpcLeaked, grpcNewThreads, heapGrowthOurs, rssGrowthOurs, o_.mallocArenas, o_.mallocMmapThreshold, tcacheOn() ? "true" : "false", o_.keepGrpc ? "true" : "false", maxChannelsAlive_, skipped.c_str());
  std::fflush(stdout);
  return ok ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: mlbridge-bench soak [--minutes M] [--sessions S] [--seed N] [--transports pipe,shm,grpc]\n"
               "                           [--kill-every-s S] [--timeout-ms T] [--slack-ms MS] [--python PY]\n"
               "                           [--malloc-arenas N (2; 0: glibc's default)] [--keep-grpc 0|1 (1)]\n"
               "                           [--malloc-tcache 0|1 (0)] [--malloc-mmap-threshold BYTES (131072; 0: glibc's)]\n");
  return 2;
}

}  // namespace

int mlbridgeBenchSoak(int argc, char** argv) {
  Options o;
  for (int i = 2; i < argc; i += 2) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[i + 1];
    if (a == "--minutes") o.minutes = std::atof(v.c_str());
    else if (a == "--sessions") o.sessions = std::atoi(v.c_str());
    else if (a == "--seed") o.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--transports") o.transports = v;
    else if (a == "--kill-every-s") o.killEverySec = std::atof(v.c_str());
    else if (a == "--timeout-ms") o.timeoutMs = std::atoi(v.c_str());
    else if (a == "--slack-ms") o.slackMs = std::atoi(v.c_str());
    else if (a == "--python") o.python = v;
    else if (a == "--malloc-arenas") o.mallocArenas = std::atoi(v.c_str());
    else if (a == "--keep-grpc") o.keepGrpc = std::atoi(v.c_str()) != 0;
    else if (a == "--malloc-tcache") o.mallocTcache = std::atoi(v.c_str()) != 0;
    else if (a == "--malloc-mmap-threshold") o.mallocMmapThreshold = std::atoi(v.c_str());
    else return usage();
  }
  if (o.minutes <= 0 || o.sessions < 1 || o.sessions > 4096 || o.killEverySec <= 0 || o.timeoutMs < 100 ||
      o.slackMs < 0 || o.mallocArenas < 0 || o.mallocMmapThreshold < 0)
    return usage();
#ifdef __GLIBC__
  if (o.mallocArenas > 0) mallopt(M_ARENA_MAX, o.mallocArenas);
  if (o.mallocMmapThreshold > 0) mallopt(M_MMAP_THRESHOLD, o.mallocMmapThreshold);
  // The tcache is sized when the process starts (a tunable, no mallopt):
  // restart once with it off. The models get the environment as it was.
  const char* kOff = "glibc.malloc.tcache_count=0";
  const char* kSaved = "MLBRIDGE_SOAK_GLIBC_TUNABLES";  // the value before the restart ("-": none)
  if (!o.mallocTcache) {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    std::string have = tunables ? tunables : "";
    if (have.find(kOff) == std::string::npos) {
      setenv(kSaved, tunables ? tunables : "-", 1);
      setenv("GLIBC_TUNABLES", (have.empty() ? std::string(kOff) : have + ":" + kOff).c_str(), 1);
      char self[4096] = {};
      ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);  // not /proc/self/exe: threads keep our name
      if (len > 0) execv(self, argv);
      std::fprintf(stderr, "mlbridge-bench soak: cannot restart with glibc's tcache off (%s): heap figures include it\n",
                   std::strerror(errno));
    } else {
      gTcacheOn = false;
    }
    if (const char* saved = std::getenv(kSaved)) {
      if (std::strcmp(saved, "-") == 0) unsetenv("GLIBC_TUNABLES");
      else setenv("GLIBC_TUNABLES", saved, 1);
      unsetenv(kSaved);
    }
  }
#endif
  setenv("PYTHONPATH", bench::pythonPathEnv().c_str(), 1);
  signal(SIGPIPE, SIG_IGN);
  StatusOr<std::string> dir = makePrivateChannelDir();
  if (!dir.ok()) {
    std::fprintf(stderr, "mlbridge-bench soak: %s\n", dir.status().toString().c_str());
    return 1;
  }
  int rc;
  {
    Soak soak(o, *dir);
    rc = soak.run();
  }
  // The channel files the killed models left, their logs (kept on failure), the folder.
  if (DIR* d = opendir(dir->c_str())) {
    std::vector<std::string> names;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
    for (const std::string& n : names)
      if (rc != 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".log") == 0) continue;
      else unlink((*dir + "/" + n).c_str());
  }
  if (rc == 0) rmdir(dir->c_str());
  else std::fprintf(stderr, "mlbridge-bench soak: the models' logs are in %s\n", dir->c_str());
  return rc;
}
