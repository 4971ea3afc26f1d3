// toyc: a toy optimizing compiler that asks a model, through mlbridge, how
// much to unroll each loop of a small IR, applies the answer and explains it.
//
//   toyc kernels.toy --channel BASE [--format bitstream|json|protobuf]
//
// The compiler side of mlbridge in a real program: fixed feature specs, one
// runner per compilation, zero-copy inputs, a checked answer, and a safe
// fallback (no unrolling) whenever the model is unreachable or answers
// something illegal. The compilation itself never fails because of the model.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mlbridge/mlbridge.hpp"

namespace {

struct Loop {
  std::string function, var;
  int64_t trip = 0, ops = 0, loads = 0, stores = 0, depth = 0;
  bool hasCall = false, innermost = true;
};

bool parseAttr(const std::string& word, const char* key, int64_t* out) {
  std::string prefix = std::string(key) + "=";
  if (word.compare(0, prefix.size(), prefix) != 0) return false;
  *out = std::strtoll(word.c_str() + prefix.size(), nullptr, 10);
  return true;
}

// Lines: "func NAME" and indented "loop VAR trip=N ops=N loads=N stores=N [call]".
bool parseToy(const std::string& path, std::vector<Loop>* loops, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::string line, function;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || line[indent] == '#') continue;
    std::istringstream words(line.substr(indent));
    std::string kind;
    words >> kind;
    if (kind == "func") {
      words >> function;
      continue;
    }
    if (kind != "loop" || function.empty()) {
      *error = path + ":" + std::to_string(lineNo) + ": expected 'func NAME' or 'loop VAR ...'";
      return false;
    }
    Loop l;
    l.function = function;
    l.depth = static_cast<int64_t>(indent / 2);
    words >> l.var;
    std::string w;
    while (words >> w) {
      if (w == "call") l.hasCall = true;
      else if (!parseAttr(w, "trip", &l.trip) && !parseAttr(w, "ops", &l.ops) && !parseAttr(w, "loads", &l.loads) &&
               !parseAttr(w, "stores", &l.stores)) {
        *error = path + ":" + std::to_string(lineNo) + ": unknown attribute '" + w + "'";
        return false;
      }
    }
    if (!loops->empty() && loops->back().function == function && loops->back().depth < l.depth)
      loops->back().innermost = false;
    loops->push_back(l);
  }
  return true;
}

// A simple machine model: per-iteration loop overhead of 2 cycles, memory ops
// cost 3, others 1; unrolling by f divides overhead by f, adds a remainder loop
// when f does not divide the trip count, and multiplies code size.
struct Cost {
  int64_t cycles, size;
};
Cost estimate(const Loop& l, int64_t f) {
  int64_t perIter = (l.ops - l.loads - l.stores) + 3 * (l.loads + l.stores);
  int64_t main = l.trip / f, rest = l.trip % f;
  int64_t cycles = main * (f * perIter + 2) + rest * (perIter + 2);
  int64_t size = l.ops * f + (rest ? l.ops : 0) + 2;
  return Cost{cycles, size};
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, channel, format = "bitstream";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--channel" && i + 1 < argc) channel = argv[++i];
    else if (a == "--format" && i + 1 < argc) format = argv[++i];
    else input = a;
  }
  if (input.empty() || channel.empty()) {
    std::fprintf(stderr, "usage: toyc FILE.toy --channel BASE [--format bitstream|json|protobuf]\n");
    return 2;
  }
  std::vector<Loop> loops;
  std::string error;
  if (!parseToy(input, &loops, &error)) {
    std::fprintf(stderr, "toyc: %s\n", error.c_str());
    return 1;
  }

  using namespace mlbridge;
  // The features this compiler offers and the advice it asks for.
  const std::vector<TensorSpec> features = {
      TensorSpec::create<int64_t>("trip_count", {1}), TensorSpec::create<int64_t>("body_ops", {1}),
      TensorSpec::create<int64_t>("memory_ops", {1}), TensorSpec::create<int64_t>("depth", {1}),
      TensorSpec::create<bool>("innermost", {1}),     TensorSpec::create<bool>("has_call", {1}),
      TensorSpec::create<float>("op_mix", {3}),
  };
  const TensorSpec advice = TensorSpec::create<int64_t>("unroll_factor", {1});
  PipeOptions opts;
  opts.base = channel;
  opts.timeoutMs = 5000;
  opts.connectTimeoutMs = 2000;  // a missing model costs at most this much
  if (!parseWireFormat(format, &opts.format)) {
    std::fprintf(stderr, "toyc: unknown format '%s'\n", format.c_str());
    return 2;
  }
  StatusOr<std::unique_ptr<PipeModelRunner>> created = PipeModelRunner::create(features, {advice}, opts);
  if (!created.ok())
    std::printf("toyc: no model (%s); compiling with the default heuristic\n", created.status().toString().c_str());
  ModelRunner* model = created.ok() ? created->get() : nullptr;

  std::printf("%-18s %6s %4s %4s  %-8s %-28s %s\n", "loop", "trip", "ops", "mem", "unroll", "estimate (cycles, size)",
              "why");
  int64_t cyclesBefore = 0, cyclesAfter = 0, sizeBefore = 0, sizeAfter = 0;
  std::string currentFunction;
  for (const Loop& l : loops) {
    int64_t factor = 1;
    std::string why = "default: no model";
    if (model) {
      if (l.function != currentFunction) model->setContext(l.function);
      currentFunction = l.function;
      float total = static_cast<float>(l.ops ? l.ops : 1);
      Status s = model->populateFeatures(
          {"trip_count", l.trip}, {"body_ops", l.ops}, {"memory_ops", l.loads + l.stores}, {"depth", l.depth},
          {"innermost", l.innermost}, {"has_call", l.hasCall},
          {"op_mix", {(l.ops - l.loads - l.stores) / total, l.loads / total, l.stores / total}});
      StatusOr<int64_t> answer = s.ok() ? model->evaluate<int64_t>() : StatusOr<int64_t>(s);
      if (!answer.ok()) {
        why = "model error (" + answer.status().toString() + "): kept 1";
      } else if (*answer != 1 && *answer != 2 && *answer != 4 && *answer != 8) {
        why = "model said " + std::to_string(*answer) + ", not in {1,2,4,8}: kept 1";
      } else if (!l.innermost && *answer > 1) {
        why = "model said " + std::to_string(*answer) + " for an outer loop: kept 1";
      } else {
        factor = *answer;
        why = "model";
      }
    }
    Cost before = estimate(l, 1), after = estimate(l, factor);
    if (why == "model") {
      char buf[96];
      if (factor == 1)
        std::snprintf(buf, sizeof buf, "model: not worth it (%s)",
                      !l.innermost ? "outer loop" : l.trip < 4 ? "too few iterations" : "size cost");
      else
        std::snprintf(buf, sizeof buf, "model: -%.1f%% cycles for +%lld ops",
                      100.0 * (before.cycles - after.cycles) / before.cycles,
                      static_cast<long long>(after.size - before.size));
      why = buf;
    }
    cyclesBefore += before.cycles;
    cyclesAfter += after.cycles;
    sizeBefore += before.size;
    sizeAfter += after.size;
    std::string name = l.function + "/" + l.var;
    char est[64];
    std::snprintf(est, sizeof est, "%lld -> %lld, %lld -> %lld", static_cast<long long>(before.cycles),
                  static_cast<long long>(after.cycles), static_cast<long long>(before.size),
                  static_cast<long long>(after.size));
    std::printf("%-18s %6lld %4lld %4lld  x%-7lld %-28s %s\n", name.c_str(), static_cast<long long>(l.trip),
                static_cast<long long>(l.ops), static_cast<long long>(l.loads + l.stores),
                static_cast<long long>(factor), est, why.c_str());
  }
  std::printf("total: %lld -> %lld cycles (%.1f%% faster), code size %lld -> %lld ops\n",
              static_cast<long long>(cyclesBefore), static_cast<long long>(cyclesAfter),
              100.0 * (cyclesBefore - cyclesAfter) / (cyclesBefore ? cyclesBefore : 1),
              static_cast<long long>(sizeBefore), static_cast<long long>(sizeAfter));
  if (model) model->finish();
  return 0;
}
