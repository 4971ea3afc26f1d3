// The gRPC runner in mlbridge-bench: `mlbridge-bench rtt|latency|throughput --runner grpc`.
//
// Entry point: mlbridgeBenchGrpc(argc, argv), called by bench/mlbridge_bench.cc
// for --runner grpc (see bench/grpc.cmake); built alone as mlbridge-bench-grpc.
// Same CLI and JSON summary as the pipe runner:
//   rtt        the paper's experiment (float32 vectors of 500..50,000, one FC layer in numpy)
//   latency    38 int64 features, one int64 advice, N iterations
//   throughput W compiler threads (own connection and session each, --workers, default 16)
//              against one Python model server for --seconds S: decisions/s
// The floor beside each result: the same gRPC calls answered by a handler
// that returns prebuilt reply bytes without decoding anything (what gRPC
// itself costs, Python side included). rtt and latency also measure gRPC
// alone: the same calls answered by a C++ server (bench/grpc_floor_server.cc),
// what no Python server on top of gRPC can go below.
// --rounds K alternates the three K times; medians are reported.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mlbridge/grpc_runner.h"
#include "bench_common.h"
#include "common/python_grpc_server.h"
#include "mlbridge/mlbridge.hpp"

using namespace mlbridge;
using namespace mlbridge::bench;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string mode, runner = "grpc", format = "protobuf", pin = "both", python = "python3";
  int repeats = 5;
  int rounds = 1;
  int iterations = 20000;
  int workers = 16;
  double seconds = 5;
};



using BenchOptions = Options;

// The model "cxx": gRPC alone, this binary's grpc-floor-server.
const char* const kCxxFloor = "cxx";

std::string selfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "mlbridge-bench";
}

// The model server (Python, or the C++ floor), pinned to `cpu`; its port from its ready line.
struct Peer : tools::PythonGrpcServer {
  Peer(const BenchOptions& o, const std::string& model, int cpu, int maxWorkers)
      : PythonGrpcServer(model == kCxxFloor ? std::vector<std::string>()
                                            : std::vector<std::string>{"--model", model, "--max-workers",
                                                                       std::to_string(maxWorkers)},
                         serverOptions(o, model, cpu)) {}
  static PythonGrpcServer::Options serverOptions(const BenchOptions& o, const std::string& model, int cpu) {
    PythonGrpcServer::Options so;
    so.python = o.python;
    so.cpu = cpu;
    so.readyTimeoutMs = 60000;
    if (model == kCxxFloor) so.command = {selfExe(), "grpc-floor-server"};
    return so;
  }
};

GrpcRunnerOptions runnerOptions(int port) {
  GrpcRunnerOptions o;
  o.address = "127.0.0.1:" + std::to_string(port);
  o.deadlineMs = 30000;
  return o;
}

std::vector<TensorSpec> latencyFeatures() {
  std::vector<TensorSpec> f;
  for (int i = 0; i < 38; ++i) f.push_back(TensorSpec::create<int64_t>("f" + std::to_string(i), {1}));
  return f;
}

Stats run(const Options& o, const std::string& model, int peerCpu, Status* error) {
  int maxWorkers = o.mode == "throughput" ? o.workers + 4 : 4;  // a thread per streaming session
  Peer peer(o, model, peerCpu, maxWorkers);
  if (peer.port() <= 0) {
    *error = unavailable(model == kCxxFloor ? "the C++ floor server did not start (mlbridge-bench grpc-floor-server)"
                                            : "the Python model server did not start (python3 -m mlbridge.testing.grpc_models)");
    return Stats();
  }
  std::vector<std::vector<double>> groups;
  if (o.mode == "rtt") {
    auto ch = GrpcChannel::create(runnerOptions(peer.port()));
    if (!ch.ok()) {
      *error = ch.status();
      return Stats();
    }
    std::vector<float> x(50000, 0.5f);
    for (int64_t n = 500; n <= 50000 && error->ok(); n += 500) {
      auto r = GrpcModelRunner::create({TensorSpec::create<float>("x", {n})}, {TensorSpec::create<float>("y", {1})},
                                       *ch);
      if (!r.ok()) {
        *error = r.status();
        break;
      }
      std::vector<double> calls;
      for (int rep = 0; rep < o.repeats + 1; ++rep) {
        auto t0 = Clock::now();
        std::memcpy((*r)->getTensor<float>(0), x.data(), n * 4);
        StatusOr<float> y = (*r)->evaluate<float>();
        double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (!y.ok()) {
          *error = y.status();
          break;
        }
        if (rep) calls.push_back(us);
      }
      groups.push_back(calls);
    }
    return summarize(groups);
  }
  if (o.mode == "latency") {
    auto r = GrpcModelRunner::create(latencyFeatures(), {TensorSpec::create<int64_t>("inlining_decision", {1})},
                                     runnerOptions(peer.port()));
    if (!r.ok()) {
      *error = r.status();
      return Stats();
    }
    std::vector<double> calls;
    calls.reserve(o.iterations);
    for (int i = 0; i < o.iterations + 500; ++i) {
      auto t0 = Clock::now();
      for (int k = 0; k < 38; ++k) *(*r)->getTensor<int64_t>(k) = 3;
      StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
      double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (!y.ok()) {
        *error = y.status();
        break;
      }
      if (i >= 500) calls.push_back(us);
    }
    groups.push_back(calls);
    return summarize(groups);
  }
  // throughput: W threads, each its own channel (connection) and session.
  std::vector<std::vector<double>> perThread(o.workers);
  std::vector<Status> errors(o.workers);
  std::atomic<bool> go{false}, stop{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < o.workers; ++t)
    threads.emplace_back([&, t] {
      auto r = GrpcModelRunner::create(latencyFeatures(), {TensorSpec::create<int64_t>("inlining_decision", {1})},
                                       runnerOptions(peer.port()));
      ++ready;
      if (!r.ok()) {
        errors[t] = r.status();
        return;
      }
      while (!go) std::this_thread::yield();
      while (!stop) {
        auto t0 = Clock::now();
        for (int k = 0; k < 38; ++k) *(*r)->getTensor<int64_t>(k) = t;
        StatusOr<int64_t> y = (*r)->evaluate<int64_t>();
        if (!y.ok()) {
          errors[t] = y.status();
          return;
        }
        perThread[t].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  while (ready < o.workers) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto t0 = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& th : threads) th.join();
  for (const Status& s : errors)
    if (!s.ok() && error->ok()) *error = s;
  std::vector<double> all;
  for (auto& v : perThread) all.insert(all.end(), v.begin(), v.end());
  groups.push_back(all);
  Stats s = summarize(groups);
  s.decisionsPerSec = s.calls / secs;
  return s;
}


int usage() {
  std::fprintf(stderr,
               "usage: mlbridge-bench rtt|latency|throughput --runner grpc [--format protobuf]\n"
               "                      [--repeats R] [--iterations N] [--workers W] [--seconds S]\n"
               "                      [--pin both|none|same|cross] [--python PY] [--rounds K]\n");
  return 2;
}

}  // namespace

int mlbridgeBenchGrpc(int argc, char** argv) {
  if (argc < 2) return usage();
  Options o;
  o.mode = argv[1];
  if (o.mode != "rtt" && o.mode != "latency" && o.mode != "throughput") return usage();
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();  // an option without its value
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--runner") o.runner = v;
    else if (a == "--format") o.format = v;
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(v.c_str()));
    else if (a == "--iterations") o.iterations = std::max(1, std::atoi(v.c_str()));
    else if (a == "--workers") o.workers = std::max(1, std::atoi(v.c_str()));
    else if (a == "--seconds") o.seconds = std::max(0.5, std::atof(v.c_str()));
    else if (a == "--pin") o.pin = v;
    else if (a == "--python") o.python = v;
    else if (a == "--rounds") o.rounds = std::max(1, std::min(99, std::atoi(v.c_str())));
    else return usage();
  }
  if (o.runner != "grpc") return usage();
  if (o.format != "protobuf") {
    std::fprintf(stderr, "mlbridge-bench: the grpc runner carries protobuf messages only\n");
    return 2;
  }
  setenv("PYTHONPATH", pythonPathEnv().c_str(), 1);
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> placements;
  if (o.mode == "throughput") placements = {"none"};  // all cores for W workers
  else if (o.pin == "both") placements = {"cross", "same"};
  else placements = {o.pin};
  const std::string model = o.mode == "rtt" ? "fc" : "const";
  std::string summary;
  for (const std::string& place : placements) {
    int selfCpu = place == "none" ? -1 : 0;
    int peerCpu = place == "cross" ? 1 : place == "same" ? 0 : -1;
    pinTo(selfCpu);
    Status error;
    // Each round runs the grpcio floor, the model and (rtt, latency) gRPC
    // alone, starting with a different one (runRounds); ratios are taken
    // within a round, and medians reported.
    std::vector<std::string> kinds = {"raw", model};
    if (o.mode != "throughput") kinds.push_back(kCxxFloor);
    std::vector<std::vector<Stats>> got(kinds.size(), std::vector<Stats>(o.rounds));
    runRounds(o.rounds, kinds.size(), [&](int r, size_t k) {
      got[k][r] = run(o, kinds[k], peerCpu, &error);
      return error.ok();
    });
    if (!error.ok()) {
      std::fprintf(stderr, "mlbridge-bench: %s\n", error.toString().c_str());
      return 1;
    }
    RoundRatios roundRatios(got[0], got[1]);
    const std::vector<double>& ratiosTotal = roundRatios.total;
    const std::vector<double>& ratiosP50 = roundRatios.p50;
    Stats floor = medianOf(got[0]), ours = medianOf(got[1]);
    bool withCxx = kinds.size() > 2;
    Stats cxx = withCxx ? medianOf(got[2]) : Stats();
    double ratioTotal = percentile(ratiosTotal, 0.5);
    double ratioP50 = percentile(ratiosP50, 0.5);
    if (o.mode == "throughput")
      std::printf("%-10s %-6s grpc/protobuf  %d workers: %9.0f decisions/s  p50 %8.2f us  p99 %8.2f us   | "
                  "floor (gRPC, no decoding): %9.0f decisions/s\n",
                  o.mode.c_str(), place.c_str(), o.workers, ours.decisionsPerSec, ours.p50Us, ours.p99Us,
                  floor.decisionsPerSec);
    else
      std::printf("%-8s %-6s grpc/protobuf  total %9.3f ms  p50 %8.2f us  p99 %8.2f us   | floor (gRPC, no "
                  "decoding): total %9.3f ms  p50 %8.2f us   | ratio total %.2fx p50 %.2fx   | gRPC alone (C++ "
                  "server): total %9.3f ms  p50 %8.2f us\n",
                  o.mode.c_str(), place.c_str(), ours.totalMs, ours.p50Us, ours.p99Us, floor.totalMs, floor.p50Us,
                  ratioTotal, ratioP50, cxx.totalMs, cxx.p50Us);
    std::fflush(stdout);
    char ratios[128];
    std::snprintf(ratios, sizeof ratios, ",\"ratio_total\":%.3f,\"ratio_p50\":%.3f", ratioTotal, ratioP50);
    std::string entry = "\"" + place + "\":{\"result\":" + statsJson(ours) + ",\"floor\":" + statsJson(floor) +
                        (withCxx ? ",\"cxx_floor\":" + statsJson(cxx) : std::string()) + ratios +
                        (o.rounds > 1 ? ",\"rounds\":" + std::to_string(o.rounds) + ",\"ratio_total_per_round\":" +
                                            jsonList(ratiosTotal)
                                      : std::string()) +
                        "}";
    summary += (summary.empty() ? "" : ",") + entry;
    if (&place == &placements.front()) {
      std::string head = statsJson(ours);
      head.pop_back();
      summary = head.substr(1) + ",\"floor_total_ms\":" + std::to_string(floor.totalMs) +
                ",\"floor_p50_us\":" + std::to_string(floor.p50Us) +
                (withCxx ? ",\"cxx_floor_total_ms\":" + std::to_string(cxx.totalMs) +
                               ",\"cxx_floor_p50_us\":" + std::to_string(cxx.p50Us)
                         : std::string()) +
                ",\"placement\":\"" + place + "\"" +
                (o.mode == "throughput" ? ",\"workers\":" + std::to_string(o.workers) : std::string()) + "," +
                entry;
    }
  }
  std::printf("{\"bench\":\"%s\",\"runner\":\"grpc\",\"format\":\"protobuf\",%s}\n", o.mode.c_str(),
              summary.c_str());
  return 0;
}

#ifdef MLBRIDGE_GRPC_BENCH_MAIN
int mlbridgeGrpcFloorServer();  // bench/grpc_floor_server.cc

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "grpc-floor-server") return mlbridgeGrpcFloorServer();
  return mlbridgeBenchGrpc(argc, argv);
}
#endif
