// mlbridge-bench: benchmarks only (tests never time anything).
//
//   mlbridge-bench rtt     --runner pipe --format bitstream|json|protobuf [--repeats R] [--rounds K] [--pin both|none|same|cross]
//                          [--values half|random]  (the vector: all 0.5, the default, or normal floats)
//   mlbridge-bench latency --runner pipe --format ...                     [--iterations N] [--pin ...]
//   mlbridge-bench rtt|latency --runner shm --format ... [--spin-us US] [--peer-spin-us US]  (shared memory)
//   mlbridge-bench rtt|latency --runner native|aot|onnxruntime|tfaot [--model mlp] [--threads 1,2]  (bench/inproc_bench.cc)
//   mlbridge-bench soak [--minutes N] [--seed S]   (bench/soak.cc: models killed and restarted)
//
// rtt: the paper's experiment (Sec. 5.3): float32 vectors of 500..50,000
// (step 500) to a one-layer fully-connected numpy model returning one float.
// latency: an LLVM-inliner-sized query (38 int64 features, one int64 advice)
// repeated N times. Each result is printed beside a floor measured in the same
// run: the same bytes exchanged raw over a FIFO pair with numpy, no format.
// On a 2-core VM a round trip between cores costs far more than within one,
// so both placements are measured (--pin both). The last line is JSON.
// Every run also reports the CPU time both sides spent per timed call
// (compiler side + model; start-up and warm-up left out), for mlbridge and
// the floor: what spinning on the shm channel costs, and where a gap
// between them lies.
// --rounds K repeats floor and mlbridge K times, alternating which goes
// first; the figures are medians over the rounds, the ratios medians of the
// per-round ratios (a shared VM's speed drifts more than the gap measured).
#include <fcntl.h>
#include <time.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_common.h"
#include "mlbridge/mlbridge.hpp"
#include "mlbridge/shm_runner.h"

int mlbridgeBenchInproc(int argc, char** argv);  // bench/inproc_bench.cc: --runner native|aot|onnxruntime

int mlbridgeBenchSoak(int argc, char** argv);  // bench/soak.cc: soak --minutes N

#ifdef MLBRIDGE_BENCH_WITH_GRPC
int mlbridgeBenchGrpc(int argc, char** argv);  // bench/grpc_bench.cc: --runner grpc
int mlbridgeGrpcFloorServer();                 // bench/grpc_floor_server.cc: gRPC alone, for --runner grpc
#endif

using namespace mlbridge;
using namespace mlbridge::bench;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string mode, runner = "pipe", format = "bitstream", pin = "both", python = "python3";
  int repeats = 5;
  int rounds = 1;  // floor and ours alternated this many times; medians reported
  int iterations = 100000;
  int spinUs = ShmOptions().spinUs;  // shm: the compiler side's spin budget
  std::string peerSpinUs = "50";     // shm: the Python model's (bench_model --spin-us)
  std::string values = "half";       // rtt: the vector's values, all 0.5 or random normal floats
};

// The rtt input vector. Text formats cost more for random floats (more digits)
// than for 0.5, so the figure depends on it; binary formats do not care.
std::vector<float> rttInput(const Options& o) {
  std::vector<float> x(50000, 0.5f);
  if (o.values == "random") {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
  }
  return x;
}

// The CPU both sides spend on the timed calls only (start-up, session set-up
// and warm-up left out): the calling thread's clock, and the peer's main
// thread from /proc/PID/schedstat (nanoseconds, where getrusage counts ticks).
class CpuMeter {
 public:
  explicit CpuMeter(pid_t peer) {
    fd_ = open(("/proc/" + std::to_string(peer) + "/schedstat").c_str(), O_RDONLY | O_CLOEXEC);
  }
  ~CpuMeter() {
    if (fd_ >= 0) close(fd_);
  }
  CpuMeter(const CpuMeter&) = delete;
  CpuMeter& operator=(const CpuMeter&) = delete;
  // Times call(), which returns false when it failed. A counted call (not
  // a warm-up) that succeeded adds its time (us) to `calls` and its CPU,
  // read before and after, outside the timing, to the meter's.
  template <class Call>
  bool time(bool counted, std::vector<double>& calls, Call&& call) {
    int64_t self0 = counted ? selfNs() : 0, peer0 = counted ? peerNs() : 0;
    auto t0 = Clock::now();
    bool ok = call();
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (ok && counted) {
      int64_t p = peerNs();
      selfNs_ += selfNs() - self0;
      if (p >= 0 && peer0 >= 0) peerNs_ += p - peer0;
      else peerKnown_ = false;
      ++calls_;
      calls.push_back(us);
    }
    return ok;
  }
  double selfUsPerCall() const { return calls_ ? selfNs_ / 1e3 / calls_ : 0; }
  double peerUsPerCall() const { return calls_ && peerKnown_ ? peerNs_ / 1e3 / calls_ : -1; }

 private:
  static int64_t selfNs() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
  }
  int64_t peerNs() const {
    char buf[96];
    ssize_t n = fd_ >= 0 ? pread(fd_, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) return -1;
    buf[n] = '\0';
    return std::strtoll(buf, nullptr, 10);
  }
  int fd_ = -1;
  int64_t selfNs_ = 0, peerNs_ = 0;
  int64_t calls_ = 0;
  bool peerKnown_ = true;
};

// What a run's timed calls cost in CPU, per call, on each side (peer -1: unknown).
struct CpuCost {
  double selfUs = 0, peerUs = 0;
  static CpuCost of(const CpuMeter& m) { return {m.selfUsPerCall(), m.peerUsPerCall()}; }
};

pid_t spawn(const std::vector<std::string>& args, int cpu) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  pinTo(cpu);
  // No stdin; the peer's progress lines on stdout would garble our report.
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    dup2(devnull, 0);
    dup2(devnull, 1);
  }
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::perror("mlbridge-bench: exec");
  _exit(127);
}

void stop(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
}

struct Channel {
  std::string dir, base;
  // `parent`: where the private folder goes ("" = makePrivateChannelDir's default).
  explicit Channel(const std::string& parent = "") {
    StatusOr<std::string> d = makePrivateChannelDir(parent);
    dir = d.ok() ? *d : "/tmp";
    base = dir + "/bench";
    mkfifo((base + ".in").c_str(), 0600);
    mkfifo((base + ".out").c_str(), 0600);
  }
  ~Channel() {
    unlink((base + ".in").c_str());
    unlink((base + ".out").c_str());
    unlink((base + ".shm").c_str());  // left by a model that was killed
    rmdir(dir.c_str());
  }
};

std::vector<int64_t> rttSizes() {
  std::vector<int64_t> s;
  for (int64_t n = 500; n <= 50000; n += 500) s.push_back(n);
  return s;
}


std::string rawPeerPath() {
#ifdef MLBRIDGE_SOURCE_DIR
  return std::string(MLBRIDGE_SOURCE_DIR) + "/bench/raw_peer.py";
#else
  return "raw_peer.py";
#endif
}

// ---- the floor: raw bytes, blocking I/O, no format -----------------------
bool writeFull(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
bool readFull(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

Stats floorRun(const Options& o, int peerCpu, CpuCost* cpu) {
  Channel ch;
  std::vector<std::string> args = {o.python, rawPeerPath(), ch.base, o.mode};
  std::vector<std::vector<double>> perSize;
  std::vector<int64_t> sizes = rttSizes();
  if (o.mode == "rtt") {
    for (int64_t n : sizes)
      for (int r = 0; r < o.repeats + 1; ++r) args.push_back(std::to_string(n));
  } else {
    args.push_back(std::to_string(38 * 8));
    args.push_back(std::to_string(o.iterations + 1000));
  }
  pid_t pid = spawn(args, peerCpu);
  CpuMeter meter(pid);
  int in = open((ch.base + ".in").c_str(), O_RDONLY);
  int out = open((ch.base + ".out").c_str(), O_WRONLY);
  // The same pipe capacity the runner asks for, so the floor is a fair one.
  fcntl(out, F_SETPIPE_SZ, 1 << 20);
  fcntl(in, F_SETPIPE_SZ, 1 << 20);
  if (o.mode == "rtt") {
    std::vector<float> x = rttInput(o);
    for (int64_t n : sizes) {
      std::vector<double> calls;
      float y;
      for (int r = 0; r < o.repeats + 1; ++r)  // the first is a warm-up
        if (!meter.time(r > 0, calls, [&] { return writeFull(out, x.data(), n * 4) && readFull(in, &y, 4); })) break;
      perSize.push_back(calls);
    }
  } else {
    std::vector<int64_t> feats(38, 3);
    std::vector<double> calls;
    int64_t y;
    for (int i = 0; i < o.iterations + 1000; ++i)
      if (!meter.time(i >= 1000, calls, [&] {
            return writeFull(out, feats.data(), feats.size() * 8) && readFull(in, &y, 8);
          }))
        break;
    perSize.push_back(calls);
  }
  *cpu = CpuCost::of(meter);
  close(out);
  close(in);
  stop(pid);
  return summarize(perSize);
}

// ---- mlbridge's pipe or shm runner against the Python package --------------
StatusOr<std::unique_ptr<ModelRunner>> connectRunner(const Options& o, const std::string& base,
                                                     std::vector<TensorSpec> features, std::vector<TensorSpec> advice) {
  WireFormat fmt;
  parseWireFormat(o.format, &fmt);
  const int timeoutMs = 30000, connectMs = 30000;  // Python + numpy start-up
  if (o.runner == "shm") {
    ShmOptions opts;
    opts.base = base;
    opts.format = fmt;
    opts.timeoutMs = timeoutMs;
    opts.connectTimeoutMs = connectMs;
    opts.spinUs = o.spinUs;
    auto r = ShmModelRunner::create(std::move(features), std::move(advice), opts);
    if (!r.ok()) return r.status();
    return std::unique_ptr<ModelRunner>(std::move(*r));
  }
  PipeOptions opts;
  opts.base = base;
  opts.format = fmt;
  opts.timeoutMs = timeoutMs;
  opts.connectTimeoutMs = connectMs;
  auto r = PipeModelRunner::create(std::move(features), std::move(advice), opts);
  if (!r.ok()) return r.status();
  return std::unique_ptr<ModelRunner>(std::move(*r));
}

Stats remoteRun(const Options& o, int peerCpu, Status* error, CpuCost* cpu) {
  // The shm region is best on tmpfs: on a disk file system its pages would be written back.
  Channel ch(o.runner == "shm" && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "");
  std::vector<std::string> args = {o.python, "-m", "mlbridge.testing.bench_model", "--base", ch.base, "--model",
                                   o.mode == "rtt" ? "fc" : "const", "--format", "auto"};
  if (o.runner == "shm") {
    for (const char* a : {"--transport", "shm", "--spin-us"}) args.push_back(a);
    args.push_back(o.peerSpinUs);
  }
  pid_t pid = spawn(args, peerCpu);
  CpuMeter meter(pid);
  std::vector<std::vector<double>> perSize;
  if (o.mode == "rtt") {
    std::vector<float> x = rttInput(o);
    for (int64_t n : rttSizes()) {
      auto r = connectRunner(o, ch.base, {TensorSpec::create<float>("x", {n})}, {TensorSpec::create<float>("y", {1})});
      if (!r.ok()) {
        *error = r.status();
        break;
      }
      std::vector<double> calls;
      // A compiler writes features straight into the runner's buffers
      // (zero copy), as the floor writes straight from its own vector.
      std::memcpy((*r)->getTensor<float>(0), x.data(), n * 4);
      for (int rep = 0; rep < o.repeats + 1; ++rep) {  // the first is a warm-up
        bool ok = meter.time(rep > 0, calls, [&] {
          StatusOr<float> y = (*r)->evaluate<float>();
          if (!y.ok()) *error = y.status();
          return y.ok();
        });
        if (!ok) break;
      }
      perSize.push_back(calls);
      if (!error->ok()) break;
    }
  } else {
    std::vector<TensorSpec> feats;
    for (int i = 0; i < 38; ++i) feats.push_back(TensorSpec::create<int64_t>("f" + std::to_string(i), {1}));
    auto r = connectRunner(o, ch.base, feats, {TensorSpec::create<int64_t>("inlining_decision", {1})});
    if (!r.ok()) {
      *error = r.status();
    } else {
      std::vector<double> calls;
      calls.reserve(o.iterations);
      for (int i = 0; i < o.iterations + 1000; ++i) {
        bool ok = meter.time(i >= 1000, calls, [&] {
          for (int k = 0; k < 38; ++k) *(*r)->getTensor<int64_t>(k) = 3;
          StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
          if (!y.ok()) *error = y.status();
          return y.ok();
        });
        if (!ok) break;
      }
      perSize.push_back(calls);
    }
  }
  *cpu = CpuCost::of(meter);
  stop(pid);
  return summarize(perSize);
}


int usage(FILE* out = stderr) {
  std::fprintf(out,
               "usage: mlbridge-bench rtt|latency --runner pipe|shm --format bitstream|json|protobuf\n"
               "                      [--spin-us US] [--peer-spin-us US]   (shm)\n"
               "       mlbridge-bench rtt|latency --runner native|aot|onnxruntime|tfaot [--model mlp] [--threads 1,2]\n"
               "                      [--repeats R] [--iterations N] [--pin both|none|same|cross] [--python PY]\n"
               "                      [--rounds K]   (pipe|shm: floor and mlbridge alternated K times, medians)\n"
               "                      [--values half|random]   (rtt: the vector's values)\n"
               "       mlbridge-bench rtt|latency|throughput --runner grpc [--workers W]   (built with gRPC)\n"
               "       mlbridge-bench soak [--minutes N] [--seed S] [--sessions 64] (see bench/soak.cc)\n"
               "Options take one value each; results go to stdout, the last line JSON.\n");
  return out == stderr ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") return usage(stdout);
  if (std::string(argv[1]) == "soak") return mlbridgeBenchSoak(argc, argv);
#ifdef MLBRIDGE_BENCH_WITH_GRPC
  if (std::string(argv[1]) == "grpc-floor-server") return mlbridgeGrpcFloorServer();
#endif
  for (int i = 2; i + 1 < argc; ++i) {
    std::string r = std::string(argv[i]) == "--runner" ? argv[i + 1] : "";
    if (r == "native" || r == "aot" || r == "onnxruntime" || r == "tfaot") return mlbridgeBenchInproc(argc, argv);
  }
#ifdef MLBRIDGE_BENCH_WITH_GRPC
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--runner" && std::string(argv[i + 1]) == "grpc") return mlbridgeBenchGrpc(argc, argv);
#endif
  Options o;
  o.mode = argv[1];
  if (o.mode != "rtt" && o.mode != "latency") return usage();
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();  // an option without its value
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--runner") o.runner = v;
    else if (a == "--format") o.format = v;
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(v.c_str()));
    else if (a == "--rounds") o.rounds = std::max(1, std::min(99, std::atoi(v.c_str())));
    else if (a == "--values") o.values = v;
    else if (a == "--iterations") o.iterations = std::max(1, std::atoi(v.c_str()));
    else if (a == "--pin") o.pin = v;
    else if (a == "--python") o.python = v;
    else if (a == "--spin-us") o.spinUs = std::max(0, std::atoi(v.c_str()));
    else if (a == "--peer-spin-us") o.peerSpinUs = v;
    else return usage();
  }
  if (o.values != "half" && o.values != "random") return usage();
  WireFormat fmt;
  if (o.runner != "pipe" && o.runner != "shm") {
    std::fprintf(stderr, "mlbridge-bench: runner '%s' is not built in this version\n", o.runner.c_str());
    return 2;
  }
  if (!parseWireFormat(o.format, &fmt)) return usage();
  setenv("PYTHONPATH", pythonPathEnv().c_str(), 1);
  signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> placements;
  if (o.pin == "both") placements = {"cross", "same"};
  else placements = {o.pin};
  std::string summary;
  for (const std::string& place : placements) {
    int selfCpu = place == "none" ? -1 : 0;
    int peerCpu = place == "cross" ? 1 : place == "same" ? 0 : -1;
    pinTo(selfCpu);
    Status error;
    // Rounds alternate which side runs first (runRounds); each ratio is
    // taken within its round, and the medians are reported.
    std::vector<Stats> floors(o.rounds), oursAll(o.rounds);
    std::vector<CpuCost> cpuFloor(o.rounds), cpuOurs(o.rounds);
    runRounds(o.rounds, 2, [&](int r, size_t k) {
      if (k == 0) floors[r] = floorRun(o, peerCpu, &cpuFloor[r]);
      else oursAll[r] = remoteRun(o, peerCpu, &error, &cpuOurs[r]);
      return error.ok();
    });
    if (!error.ok()) {
      std::fprintf(stderr, "mlbridge-bench: %s\n", error.toString().c_str());
      return 1;
    }
    RoundRatios roundRatios(floors, oursAll);
    const std::vector<double>& ratiosTotal = roundRatios.total;
    const std::vector<double>& ratiosP50 = roundRatios.p50;
    Stats floor = medianOf(floors), ours = medianOf(oursAll);
    double ratioTotal = percentile(ratiosTotal, 0.5);
    double ratioP50 = percentile(ratiosP50, 0.5);
    CpuCost cpu{medianField(cpuOurs, &CpuCost::selfUs), medianField(cpuOurs, &CpuCost::peerUs)};
    CpuCost cpuF{medianField(cpuFloor, &CpuCost::selfUs), medianField(cpuFloor, &CpuCost::peerUs)};
    std::printf("%-8s %-6s %s/%-9s  total %9.3f ms  p50 %8.2f us  p99 %8.2f us  cpu/call %6.1f + %6.1f us   | floor (raw FIFO + numpy): total %9.3f ms  p50 %8.2f us  cpu/call %6.1f + %6.1f us   | ratio total %.2fx p50 %.2fx\n",
                o.mode.c_str(), place.c_str(), o.runner.c_str(), o.format.c_str(), ours.totalMs, ours.p50Us, ours.p99Us,
                cpu.selfUs, cpu.peerUs, floor.totalMs, floor.p50Us, cpuF.selfUs, cpuF.peerUs, ratioTotal, ratioP50);
    std::fflush(stdout);
    char ratios[320];
    std::snprintf(ratios, sizeof ratios,
                  ",\"ratio_total\":%.3f,\"ratio_p50\":%.3f,\"cpu_self_us_per_call\":%.2f,\"cpu_peer_us_per_call\":%.2f,"
                  "\"floor_cpu_self_us_per_call\":%.2f,\"floor_cpu_peer_us_per_call\":%.2f",
                  ratioTotal, ratioP50, cpu.selfUs, cpu.peerUs, cpuF.selfUs, cpuF.peerUs);
    std::string perRound = o.rounds > 1 ? ",\"rounds\":" + std::to_string(o.rounds) + ",\"ratio_total_per_round\":" +
                                              jsonList(ratiosTotal) + ",\"ratio_p50_per_round\":" + jsonList(ratiosP50)
                                        : "";
    std::string entry = "\"" + place + "\":{\"result\":" + statsJson(ours) + ",\"floor\":" + statsJson(floor) + ratios +
                        perRound + "}";
    summary += (summary.empty() ? "" : ",") + entry;
    if (&place == &placements.front()) {
      // Headline numbers: the first placement (cross-core unless --pin says otherwise).
      std::string head = statsJson(ours);
      head.pop_back();
      summary = head.substr(1) + ",\"floor_total_ms\":" + std::to_string(floor.totalMs) + ",\"floor_p50_us\":" +
                std::to_string(floor.p50Us) + ",\"placement\":\"" + place + "\"," + entry;
    }
  }
  std::string spin;
  if (o.runner == "shm") spin = ",\"spin_us\":" + std::to_string(o.spinUs) + ",\"peer_spin_us\":" + o.peerSpinUs;
  if (o.mode == "rtt") spin += ",\"values\":\"" + o.values + "\"";
  std::printf("{\"bench\":\"%s\",\"runner\":\"%s\",\"format\":\"%s\"%s,%s}\n", o.mode.c_str(), o.runner.c_str(),
              o.format.c_str(), spin.c_str(), summary.c_str());
  return 0;
}
