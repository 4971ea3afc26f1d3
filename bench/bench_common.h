// What every mlbridge-bench mode shares: latency statistics, their JSON form,
// CPU placement, and the PYTHONPATH that finds the in-tree Python package.
#ifndef MLBRIDGE_BENCH_BENCH_COMMON_H
#define MLBRIDGE_BENCH_BENCH_COMMON_H

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace mlbridge {
namespace bench {

struct Stats {
  double totalMs = 0, p50Us = 0, p99Us = 0, meanUs = 0;
  size_t calls = 0;
  double decisionsPerSec = 0;  // set by throughput modes only
};

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Per-call latencies (us). With several groups (rtt: one per size) the total
// is the sum of each group's median, as in the paper; with one group
// (latency) it is the sum of all calls.
inline Stats summarize(const std::vector<std::vector<double>>& groups) {
  Stats s;
  std::vector<double> all;
  for (const auto& calls : groups) {
    if (groups.size() > 1) {
      s.totalMs += percentile(calls, 0.5) / 1000.0;
    } else {
      for (double us : calls) s.totalMs += us / 1000.0;
    }
    all.insert(all.end(), calls.begin(), calls.end());
  }
  s.calls = all.size();
  s.p50Us = percentile(all, 0.5);
  s.p99Us = percentile(all, 0.99);
  double sum = 0;
  for (double x : all) sum += x;
  s.meanUs = all.empty() ? 0 : sum / all.size();
  return s;
}

// The median of one field over rounds of the same measurement (--rounds).
template <class T>
double medianField(const std::vector<T>& rounds, double T::*field) {
  std::vector<double> v;
  for (const T& r : rounds) v.push_back(r.*field);
  return percentile(v, 0.5);
}

// Each field's median over the rounds; the calls of all of them.
inline Stats medianOf(const std::vector<Stats>& rounds) {
  Stats m;
  m.totalMs = medianField(rounds, &Stats::totalMs);
  m.p50Us = medianField(rounds, &Stats::p50Us);
  m.p99Us = medianField(rounds, &Stats::p99Us);
  m.meanUs = medianField(rounds, &Stats::meanUs);
  m.decisionsPerSec = medianField(rounds, &Stats::decisionsPerSec);
  for (const Stats& r : rounds) m.calls += r.calls;
  return m;
}

// --rounds: runs measurements 0..n-1 once per round, starting each round
// one further along (round r: r % n first), so that a machine that speeds up
// or slows down during the benchmark weighs on all of them alike.
// run(round, k) returns false to stop; so does runRounds.
template <class Run>
bool runRounds(int rounds, size_t n, Run run) {
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < n; ++i)
      if (!run(r, (i + static_cast<size_t>(r)) % n)) return false;
  return true;
}

// Round by round, ours / floor for the total and for p50 (0 when the floor is 0).
struct RoundRatios {
  std::vector<double> total, p50;
  RoundRatios(const std::vector<Stats>& floor, const std::vector<Stats>& ours) {
    for (size_t r = 0; r < floor.size() && r < ours.size(); ++r) {
      total.push_back(floor[r].totalMs > 0 ? ours[r].totalMs / floor[r].totalMs : 0);
      p50.push_back(floor[r].p50Us > 0 ? ours[r].p50Us / floor[r].p50Us : 0);
    }
  }
};

// "[1.031,0.987]": per-round figures for the JSON line.
inline std::string jsonList(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.3f", i ? "," : "", v[i]);
    out += buf;
  }
  return out + "]";
}

inline std::string statsJson(const Stats& s) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "{\"total_ms\":%.3f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"mean_us\":%.2f,\"calls\":%zu",
                s.totalMs, s.p50Us, s.p99Us, s.meanUs, s.calls);
  std::string out = buf;
  if (s.decisionsPerSec > 0) {
    std::snprintf(buf, sizeof buf, ",\"decisions_per_s\":%.1f", s.decisionsPerSec);
    out += buf;
  }
  return out + "}";
}

// Pins the calling thread to one CPU; a negative cpu allows every CPU.
inline void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  sched_setaffinity(0, sizeof set, &set);
}

// The in-tree python/ first, so the benchmark measures this checkout.
inline std::string pythonPathEnv() {
  const char* old = std::getenv("PYTHONPATH");
#ifdef MLBRIDGE_SOURCE_DIR
  std::string src = std::string(MLBRIDGE_SOURCE_DIR) + "/python";
  return old && *old ? src + ":" + old : src;
#else
  return old ? old : "";
#endif
}

}  // namespace bench
}  // namespace mlbridge

#endif  // MLBRIDGE_BENCH_BENCH_COMMON_H
