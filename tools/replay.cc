// mlbridge-replay: replays a recorded compiler -> model stream (a bitstream
// transcript written by stock LLVM, or recorded by mlbridge) through a
// PipeModelRunner to a live model, and compares the decisions with the
// recorded replies when given. This proves that our runner and LLVM ask the
// same questions and get the same answers.
//
//   mlbridge-replay --log NAME.out --base BASE [--format F] [--replies NAME.in] [--timeout-ms MS]
//
// Prints one JSON line per observation, then {"observations":N,"mismatches":M}.
// Exit status: 0 all matched (or no replies given), 1 mismatches, 2 errors.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "json/json.h"
#include "json/json_tensor.h"
#include "mlbridge/pipe_runner.h"
#include "wire/codec.h"

using namespace mlbridge;

namespace {

std::string slurp(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Span<const uint8_t> bytesOf(const std::string& s) {
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

int fail(const Status& s) {
  std::fprintf(stderr, "mlbridge-replay: %s\n", s.toString().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  PipeOptions opts;
  std::string logPath, repliesPath;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--log") logPath = v;
    else if (a == "--replies") repliesPath = v;
    else if (a == "--base") opts.base = v;
    else if (a == "--format") {
      if (!parseWireFormat(v, &opts.format)) return fail(invalidArgument(std::string("unknown format ") + v));
    } else if (a == "--timeout-ms") opts.timeoutMs = opts.connectTimeoutMs = std::atoi(v);
    else return fail(invalidArgument("unknown option " + a));
  }
  if (logPath.empty() || opts.base.empty())
    return fail(invalidArgument("usage: mlbridge-replay --log NAME.out --base BASE [--format F] [--replies NAME.in]"));
  bool ok = false;
  std::string log = slurp(logPath, &ok);
  if (!ok) return fail(Status(StatusCode::kNotFound, "cannot read " + logPath));
  auto bitstream = wire::makeBitstreamCodec();
  std::vector<wire::DecodedMessage> msgs;
  Status s = bitstream->decodeToModelStream(bytesOf(log), msgs);
  if (!s.ok()) return fail(s);
  if (msgs.empty() || msgs[0].kind != wire::DecodedMessage::Kind::kHeader)
    return fail(dataLoss(logPath + " does not start with a header"));
  const wire::SessionSpecs specs = msgs[0].specs;
  std::vector<wire::DecodedMessage> recorded;
  if (!repliesPath.empty()) {
    std::string replies = slurp(repliesPath, &ok);
    if (!ok) return fail(Status(StatusCode::kNotFound, "cannot read " + repliesPath));
    s = bitstream->decodeToCompilerStream(bytesOf(replies), specs, recorded);
    if (!s.ok()) return fail(s);
  }
  auto runner = PipeModelRunner::create(specs.features, specs.advice, opts);
  if (!runner.ok()) return fail(runner.status());
  ModelRunner& r = **runner;
  size_t observations = 0, mismatches = 0;
  for (const wire::DecodedMessage& m : msgs) {
    if (m.kind == wire::DecodedMessage::Kind::kContext) {
      s = r.setContext(m.name);
    } else if (m.kind == wire::DecodedMessage::Kind::kObservation) {
      for (size_t i = 0; i < m.tensors.size(); ++i)
        std::memcpy(r.inputData(i), m.tensors[i].bytes.data(), m.tensors[i].bytes.size());
      s = r.evaluate();
      if (s.ok()) {
        bool same = true;
        if (observations < recorded.size()) {
          for (size_t i = 0; i < specs.advice.size(); ++i)
            same = same && std::memcmp(r.outputRef(i).data, recorded[observations].tensors[i].bytes.data(),
                                       specs.advice[i].byteSize()) == 0;
        } else if (!recorded.empty()) {
          same = false;
        }
        mismatches += same ? 0 : 1;
        std::string line = "{\"observation\":" + std::to_string(observations) + ",\"advice\":[";
        for (size_t i = 0; i < specs.advice.size(); ++i) {
          if (i) line += ',';
          json::appendTensorData(line, r.outputRef(i));
        }
        line += same ? "]}\n" : "],\"mismatch\":true}\n";
        std::fputs(line.c_str(), stdout);
        ++observations;
      }
    }
    if (!s.ok()) return fail(s);
  }
  s = r.finish();
  if (!s.ok()) return fail(s);
  if (!recorded.empty() && recorded.size() != observations) ++mismatches;
  std::printf("{\"observations\":%zu,\"mismatches\":%zu}\n", observations, mismatches);
  return mismatches ? 1 : 0;
}
