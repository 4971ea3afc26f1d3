// mlbridge-testpeer: a scripted compiler for cross-language tests. Connects
// to a model over pipes, sends the script's observations and prints one JSON
// line per answer:
//   {"id":0,"advice":[{"name":"d","type":"int64_t","shape":[1],"data":[1]}]}
//   {"error":{"code":"DEADLINE_EXCEEDED","message":"..."}}   (then exits 1)
// Script: {"features":[SPEC..],"advice":[SPEC..],
//          "steps":[{"context":"f"},{"observation":{"a":[1,2]}},{"end":true}]}
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "json/json.h"
#include "json/json_tensor.h"
#include "mlbridge/pipe_runner.h"

using namespace mlbridge;

namespace {

int printError(const Status& s) {
  std::string line = "{\"error\":{\"code\":\"";
  line += statusCodeName(s.code());
  line += "\",\"message\":";
  json::appendString(line, s.message());
  line += "}}\n";
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  return 1;
}

Status readSpecs(const json::Value* list, const char* key, std::vector<TensorSpec>& out) {
  if (!list || !list->isArray()) return invalidArgument(std::string("script has no \"") + key + "\" list");
  for (const json::Value& v : list->items()) {
    StatusOr<TensorSpec> s = TensorSpec::fromJSONValue(v);
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  return Status::OK();
}

int usage() {
  std::fputs("usage: mlbridge-testpeer --base BASE [--format bitstream|json|protobuf] [--timeout-ms MS] --script FILE\n",
             stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  PipeOptions opts;
  std::string scriptPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return usage();
    if (a == "--base") opts.base = v;
    else if (a == "--format") {
      if (!parseWireFormat(v, &opts.format)) return usage();
    } else if (a == "--timeout-ms") opts.timeoutMs = opts.connectTimeoutMs = std::atoi(v);
    else if (a == "--script") scriptPath = v;
    else return usage();
    ++i;
  }
  if (opts.base.empty() || scriptPath.empty()) return usage();
  std::ifstream in(scriptPath);
  std::stringstream ss;
  ss << in.rdbuf();
  StatusOr<json::Value> script = json::parse(ss.str());
  if (!script.ok()) return printError(script.status());
  std::vector<TensorSpec> features, advice;
  Status s = readSpecs(script->find("features"), "features", features);
  if (s.ok()) s = readSpecs(script->find("advice"), "advice", advice);
  if (!s.ok()) return printError(s);
  auto runner = PipeModelRunner::create(features, advice, opts);
  if (!runner.ok()) return printError(runner.status());
  ModelRunner& r = **runner;
  const json::Value* steps = script->find("steps");
  if (!steps || !steps->isArray()) return printError(invalidArgument("script has no \"steps\" list"));
  int64_t id = 0;
  for (const json::Value& step : steps->items()) {
    if (const json::Value* c = step.find("context")) {
      s = r.setContext(c->text());
      id = 0;
    } else if (const json::Value* o = step.find("observation")) {
      for (size_t i = 0; s.ok() && i < features.size(); ++i) {
        const json::Value* vals = o->find(features[i].name());
        if (!vals) {
          s = invalidArgument("observation has no values for '" + features[i].name() + "'");
          break;
        }
        s = json::readTensorData(*vals, features[i], r.inputData(i));
      }
      if (s.ok()) s = r.evaluate();
      if (s.ok()) {
        std::string line = "{\"id\":" + std::to_string(id++) + ",\"advice\":[";
        for (size_t i = 0; i < advice.size(); ++i) {
          if (i) line += ',';
          json::appendTensor(line, r.outputRef(i));
        }
        line += "]}\n";
        std::fputs(line.c_str(), stdout);
        std::fflush(stdout);
      }
    } else if (step.find("end")) {
      s = r.finish();
    }
    if (!s.ok()) return printError(s);
  }
  s = r.finish();
  if (!s.ok()) return printError(s);
  return 0;
}
