// LiteRtModelRunner (include/mlbridge/litert_runner.h): LiteRT's C API,
// dlopen'ed (src/litert/litert_api.h).
#include "mlbridge/litert_runner.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <sstream>

#include "graph_binding.h"
#include "json/json.h"
#include "litert/litert_api.h"
#include "runner_specs.h"

namespace mlbridge {

namespace la = litert_api;

namespace {

std::string statusText(la::Status s) {
  static const char* const kNames[] = {"ok", "invalid argument", "memory allocation failure", "runtime failure",
                                       "missing input tensor", "unsupported", "not found", "timeout expired",
                                       "wrong version", "unknown"};
  return "LiteRT status " + std::to_string(s) +
         (s >= 0 && s < int(sizeof(kNames) / sizeof(kNames[0])) ? std::string(" (") + kNames[s] + ")" : "");
}

// libLiteRt.so, loaded once per path and kept: its functions are process-wide.
StatusOr<const la::Api*> loadApi(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, la::Api>* apis = new std::map<std::string, la::Api>();  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  auto it = apis->find(path);
  if (it != apis->end()) return &it->second;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    return Status(StatusCode::kNotFound,
                  "litert runner: cannot load '" + path + "': " + (e ? e : "?") +
                      " (bash scripts/get-litert.sh installs libLiteRt.so; set MLBRIDGE_LITERT_LIB)");
  }
  la::Api api{};
  std::string missing;
  auto bind = [&](auto& fn, const char* name) {
    void* sym = dlsym(lib, name);
    if (!sym) missing += std::string(missing.empty() ? "" : ", ") + name;
    static_assert(sizeof(fn) == sizeof(sym), "function and data pointers differ in size");
    std::memcpy(&fn, &sym, sizeof(fn));  // POSIX: dlsym's result converts to a function pointer
  };
  bind(api.CreateEnvironment, "LiteRtCreateEnvironment");
  bind(api.DestroyEnvironment, "LiteRtDestroyEnvironment");
  bind(api.CreateModelFromFile, "LiteRtCreateModelFromFile");
  bind(api.DestroyModel, "LiteRtDestroyModel");
  bind(api.GetNumModelSignatures, "LiteRtGetNumModelSignatures");
  bind(api.GetModelSignature, "LiteRtGetModelSignature");
  bind(api.GetSignatureKey, "LiteRtGetSignatureKey");
  bind(api.GetNumSignatureInputs, "LiteRtGetNumSignatureInputs");
  bind(api.GetNumSignatureOutputs, "LiteRtGetNumSignatureOutputs");
  bind(api.GetSignatureInputName, "LiteRtGetSignatureInputName");
  bind(api.GetSignatureOutputName, "LiteRtGetSignatureOutputName");
  bind(api.GetSignatureInputTensorByIndex, "LiteRtGetSignatureInputTensorByIndex");
  bind(api.GetSignatureOutputTensorByIndex, "LiteRtGetSignatureOutputTensorByIndex");
  bind(api.GetTensorName, "LiteRtGetTensorName");
  bind(api.GetTensorTypeId, "LiteRtGetTensorTypeId");
  bind(api.GetRankedTensorType, "LiteRtGetRankedTensorType");
  bind(api.CreateOptions, "LiteRtCreateOptions");
  bind(api.DestroyOptions, "LiteRtDestroyOptions");
  bind(api.SetOptionsHardwareAccelerators, "LiteRtSetOptionsHardwareAccelerators");
  bind(api.CreateCompiledModel, "LiteRtCreateCompiledModel");
  bind(api.DestroyCompiledModel, "LiteRtDestroyCompiledModel");
  bind(api.CreateTensorBufferFromHostMemory, "LiteRtCreateTensorBufferFromHostMemory");
  bind(api.DestroyTensorBuffer, "LiteRtDestroyTensorBuffer");
  bind(api.RunCompiledModel, "LiteRtRunCompiledModel");
  if (!missing.empty()) {
    dlclose(lib);
    return Status(StatusCode::kFailedPrecondition,
                  "litert runner: '" + path + "' lacks " + missing + " (mlbridge declares ai-edge-litert " +
                      la::kPinnedVersion + "'s C API)");
  }
  return &apis->emplace(path, api).first->second;
}

// LiteRtElementType (TfLiteType's values) -> DType.
DType dtypeOf(int32_t t) {
  switch (t) {
    case 1: return DType::kFloat32;
    case 2: return DType::kInt32;
    case 3: return DType::kUInt8;
    case 4: return DType::kInt64;
    case 6: return DType::kBool;
    case 7: return DType::kInt16;
    case 9: return DType::kInt8;
    case 11: return DType::kFloat64;
    case 13: return DType::kUInt64;
    case 16: return DType::kUInt32;
    case 17: return DType::kUInt16;
    default: return DType::kInvalid;
  }
}

bool isDirectory(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

StatusOr<std::string> readSmallFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(StatusCode::kNotFound, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  if (s.size() > (size_t(1) << 20)) return invalidArgument("'" + path + "' is larger than 1 MiB");
  return s;
}

// A 64-byte aligned host buffer: LiteRT wraps it as a tensor buffer.
struct HostBuffer {
  std::unique_ptr<unsigned char[]> raw;
  unsigned char* data = nullptr;
  size_t bytes = 0;
  bool allocate(size_t n) {
    raw.reset(new (std::nothrow) unsigned char[n + 64]);
    if (!raw) return false;
    uintptr_t base = reinterpret_cast<uintptr_t>(raw.get());
    data = raw.get() + (64 - base % 64) % 64;
    bytes = n;
    std::memset(data, 0, n);
    return true;
  }
};

}  // namespace

struct LiteRtModelRunner::State {
  const la::Api* api = nullptr;
  la::Handle env = nullptr, model = nullptr, options = nullptr, compiled = nullptr;
  la::ParamIndex signature = 0;
  std::vector<HostBuffer> inHost, outHost;
  std::vector<la::Handle> inBuffers, outBuffers;
  struct Copy {
    unsigned char* model;  // host buffer
    size_t runnerIndex;    // feature / advice index
    size_t bytes;
  };
  std::vector<Copy> in, out;

  ~State() {
    if (!api) return;
    for (la::Handle b : inBuffers) if (b) api->DestroyTensorBuffer(b);
    for (la::Handle b : outBuffers) if (b) api->DestroyTensorBuffer(b);
    if (compiled) api->DestroyCompiledModel(compiled);
    if (options) api->DestroyOptions(options);
    if (model) api->DestroyModel(model);
    if (env) api->DestroyEnvironment(env);
  }
};

const char* LiteRtModelRunner::pinnedVersion() { return la::kPinnedVersion; }

LiteRtModelRunner::LiteRtModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice)
    : ModelRunner(std::move(features), std::move(advice)) {}

LiteRtModelRunner::~LiteRtModelRunner() = default;

namespace {

// The signature's tensors as specs, plus their TFLite tensor names and types.
Status readTensors(const la::Api& api, la::Handle sig, bool inputs, std::vector<TensorSpec>* specs,
                   std::vector<std::string>* tensorNames, std::vector<la::RankedTensorType>* types) {
  la::ParamIndex n = 0;
  la::Status s = inputs ? api.GetNumSignatureInputs(sig, &n) : api.GetNumSignatureOutputs(sig, &n);
  if (s) return internalError("litert runner: cannot count the signature's tensors: " + statusText(s));
  for (la::ParamIndex i = 0; i < n; ++i) {
    const char* name = nullptr;
    la::Handle t = nullptr;
    s = inputs ? api.GetSignatureInputName(sig, i, &name) : api.GetSignatureOutputName(sig, i, &name);
    if (!s) s = inputs ? api.GetSignatureInputTensorByIndex(sig, i, &t) : api.GetSignatureOutputTensorByIndex(sig, i, &t);
    if (s || !name || !t) return internalError("litert runner: cannot read signature tensor " + std::to_string(i));
    int typeId = 0;
    la::RankedTensorType rt{};
    if ((s = api.GetTensorTypeId(t, &typeId)) || typeId != la::kTensorTypeRanked)
      return unimplemented(std::string("litert runner: tensor '") + name + "' has no static rank");
    if ((s = api.GetRankedTensorType(t, &rt))) return internalError("litert runner: " + statusText(s));
    if (rt.layout.rank > la::kMaxRank)
      return internalError(std::string("litert runner: tensor '") + name + "' reports rank " +
                           std::to_string(rt.layout.rank) + " (not ai-edge-litert " + la::kPinnedVersion + "'s ABI?)");
    DType dt = dtypeOf(rt.elementType);
    if (dt == DType::kInvalid)
      return unimplemented(std::string("litert runner: tensor '") + name + "' has unsupported element type " +
                           std::to_string(rt.elementType));
    std::vector<int64_t> shape;
    for (unsigned k = 0; k < rt.layout.rank; ++k) {
      if (rt.layout.dimensions[k] < 0)
        return unimplemented(std::string("litert runner: tensor '") + name + "' has a dynamic dimension");
      shape.push_back(rt.layout.dimensions[k]);
    }
    const char* tname = nullptr;
    api.GetTensorName(t, &tname);
    specs->emplace_back(name, dt, shape);
    tensorNames->push_back(tname ? tname : "");
    types->push_back(rt);
  }
  return validateSpecs(*specs, inputs ? "LiteRT input" : "LiteRT output");
}

// LLVM's output_spec.json: each entry's tensor_spec names a model tensor
// ("name:port"); its logging_name becomes the output's name.
Status applyOutputSpec(const std::string& path, const std::vector<std::string>& tensorNames,
                       std::vector<TensorSpec>* outputs) {
  StatusOr<std::string> text = readSmallFile(path);
  if (!text.ok()) return text.status();
  StatusOr<json::Value> doc = json::parse(*text);
  if (!doc.ok()) return Status(StatusCode::kDataLoss, "'" + path + "': " + doc.status().message());
  if (!doc->isArray() || doc->items().empty())
    return invalidArgument("'" + path + "': expected a non-empty list of {logging_name, tensor_spec}");
  for (const json::Value& e : doc->items()) {
    const json::Value* spec = e.find("tensor_spec");
    const json::Value* logging = e.find("logging_name");
    if (!spec) return invalidArgument("'" + path + "': an entry has no tensor_spec");
    StatusOr<TensorSpec> ts = TensorSpec::fromJSONValue(*spec);
    if (!ts.ok()) return invalidArgument("'" + path + "': " + ts.status().message());
    const std::string want = ts->name() + ":" + std::to_string(ts->port());
    size_t found = tensorNames.size();
    for (size_t o = 0; o < tensorNames.size(); ++o)
      if (tensorNames[o] == want || (ts->port() == 0 && tensorNames[o] == ts->name())) found = o;
    if (found == tensorNames.size()) {
      std::string have;
      for (const std::string& n : tensorNames) have += (have.empty() ? "" : ", ") + n;
      return Status(StatusCode::kNotFound, "'" + path + "' names tensor '" + want +
                                               "', which is not an output of the model (outputs: " + have + ")");
    }
    TensorSpec& o = (*outputs)[found];
    if (o.type() != ts->type() || o.shape() != ts->shape())
      return invalidArgument("'" + path + "': tensor '" + want + "' is " + dtypeName(ts->type()) + " " +
                             shapeToString(ts->shape()) + " there but " + dtypeName(o.type()) + " " +
                             shapeToString(o.shape()) + " in the model");
    if (logging && logging->isString() && !logging->text().empty()) o = TensorSpec(logging->text(), o.type(), o.shape());
  }
  return validateSpecs(*outputs, "output_spec.json output");
}

}  // namespace

StatusOr<std::unique_ptr<LiteRtModelRunner>> LiteRtModelRunner::create(const std::string& model,
                                                                      std::vector<TensorSpec> features,
                                                                      std::vector<TensorSpec> advice,
                                                                      const LiteRtRunnerOptions& options) {
  MLBRIDGE_RETURN_IF_ERROR(checkRunnerSpecs(features, advice));
  std::string file = model, outputSpec;
  if (isDirectory(model)) {
    file = model + "/model.tflite";
    outputSpec = model + "/output_spec.json";
  }
  std::string libPath = options.library;
  if (libPath.empty()) {
    const char* env = std::getenv("MLBRIDGE_LITERT_LIB");
    libPath = env && *env ? env : "libLiteRt.so";
  }
  StatusOr<const la::Api*> api = loadApi(libPath);
  if (!api.ok()) return api.status();
  const la::Api& A = **api;

  std::unique_ptr<LiteRtModelRunner> r(new LiteRtModelRunner(std::move(features), std::move(advice)));
  r->state_.reset(new State());
  State& st = *r->state_;
  st.api = *api;
  la::Status s;
  if ((s = A.CreateEnvironment(0, nullptr, &st.env)))
    return internalError("litert runner: cannot create an environment: " + statusText(s));
  struct stat fst;
  if (stat(file.c_str(), &fst) != 0) return Status(StatusCode::kNotFound, "litert runner: no model file '" + file + "'");
  if ((s = A.CreateModelFromFile(st.env, file.c_str(), &st.model)) || !st.model)
    return invalidArgument("litert runner: cannot load '" + file + "' as a .tflite model: " + statusText(s));

  la::ParamIndex numSigs = 0;
  if ((s = A.GetNumModelSignatures(st.model, &numSigs)) || numSigs == 0)
    return unimplemented("litert runner: '" + file + "' has no signature (convert it from a SavedModel with one)");
  std::string keys;
  la::Handle sig = nullptr;
  for (la::ParamIndex i = 0; i < numSigs; ++i) {
    la::Handle h = nullptr;
    const char* key = nullptr;
    if (A.GetModelSignature(st.model, i, &h) || A.GetSignatureKey(h, &key) || !key) continue;
    keys += (keys.empty() ? "" : ", ") + std::string(key);
    const std::string k = key;
    if ((!options.signature.empty() && k == options.signature) ||
        (options.signature.empty() && (k == "serving_default" || numSigs == 1))) {
      sig = h;
      st.signature = i;
    }
  }
  if (!sig)
    return Status(StatusCode::kNotFound, "litert runner: '" + file + "' has no signature '" +
                                             (options.signature.empty() ? "serving_default" : options.signature) +
                                             "' (has: " + keys + ")");
  std::vector<std::string> inNames, outNames;
  std::vector<la::RankedTensorType> inTypes, outTypes;
  MLBRIDGE_RETURN_IF_ERROR(readTensors(A, sig, true, &r->modelInputs_, &inNames, &inTypes));
  MLBRIDGE_RETURN_IF_ERROR(readTensors(A, sig, false, &r->modelOutputs_, &outNames, &outTypes));
  if (!outputSpec.empty()) {
    struct stat ost;
    if (stat(outputSpec.c_str(), &ost) == 0)
      MLBRIDGE_RETURN_IF_ERROR(applyOutputSpec(outputSpec, outNames, &r->modelOutputs_));
  }

  std::vector<GraphInput> graphInputs;
  for (const TensorSpec& in : r->modelInputs_) graphInputs.push_back(GraphInput{&in, &in.shape(), nullptr});
  std::vector<size_t> featureOf, outputOf;
  MLBRIDGE_RETURN_IF_ERROR(bindInputs(graphInputs, r->inputSpecs(), &featureOf));
  MLBRIDGE_RETURN_IF_ERROR(bindOutputs(r->modelOutputs_, r->outputSpecs(), &outputOf));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());

  if ((s = A.CreateOptions(&st.options)) || (s = A.SetOptionsHardwareAccelerators(st.options, la::kHwAcceleratorCpu)))
    return internalError("litert runner: cannot set CPU options: " + statusText(s));
  if ((s = A.CreateCompiledModel(st.env, st.model, st.options, &st.compiled)) || !st.compiled)
    return internalError("litert runner: cannot compile '" + file + "' for the CPU: " + statusText(s));

  auto wrap = [&](const std::vector<TensorSpec>& specs, std::vector<la::RankedTensorType>& types,
                  std::vector<HostBuffer>* host, std::vector<la::Handle>* buffers) -> Status {
    host->resize(specs.size());
    buffers->assign(specs.size(), nullptr);
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!(*host)[i].allocate(specs[i].byteSize()))
        return Status(StatusCode::kResourceExhausted, "litert runner: cannot allocate tensor buffers");
      if ((s = A.CreateTensorBufferFromHostMemory(&types[i], (*host)[i].data, specs[i].byteSize(), nullptr,
                                                  &(*buffers)[i])))
        return internalError("litert runner: cannot wrap the buffer of '" + specs[i].name() + "': " + statusText(s));
    }
    return Status::OK();
  };
  MLBRIDGE_RETURN_IF_ERROR(wrap(r->modelInputs_, inTypes, &st.inHost, &st.inBuffers));
  MLBRIDGE_RETURN_IF_ERROR(wrap(r->modelOutputs_, outTypes, &st.outHost, &st.outBuffers));
  for (size_t i = 0; i < r->modelInputs_.size(); ++i)
    st.in.push_back(State::Copy{st.inHost[i].data, featureOf[i], r->modelInputs_[i].byteSize()});
  for (size_t a = 0; a < outputOf.size(); ++a)
    st.out.push_back(State::Copy{st.outHost[outputOf[a]].data, a, r->modelOutputs_[outputOf[a]].byteSize()});
  return r;
}

Status LiteRtModelRunner::evaluateImpl() {
  State& st = *state_;
  for (const State::Copy& c : st.in) std::memcpy(c.model, inputRefs()[c.runnerIndex].data, c.bytes);
  if (la::Status s = st.api->RunCompiledModel(st.compiled, st.signature, st.inBuffers.size(), st.inBuffers.data(),
                                              st.outBuffers.size(), st.outBuffers.data()))
    return Status(StatusCode::kAborted, "litert runner: the run failed: " + statusText(s));
  for (const State::Copy& c : st.out) std::memcpy(outputRefs()[c.runnerIndex].data, c.model, c.bytes);
  return Status::OK();
}

}  // namespace mlbridge
