// OnnxRuntimeModel and OnnxRuntimeRunner (include/mlbridge/onnxruntime_runner.h)
// over the ONNX Runtime C API (error codes, no exceptions).
#include "mlbridge/onnxruntime_runner.h"

#include "graph_binding.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "ort/ort_api.h"
#include "runner_specs.h"

namespace mlbridge {

namespace {

// ---- owning handles for ONNX Runtime objects ------------------------------------
#define MLBRIDGE_ORT_HANDLE(Type)                                      \
  struct Type##Deleter {                                               \
    void operator()(Ort##Type* p) const {                              \
      if (p) ort::api()->Release##Type(p);                             \
    }                                                                  \
  };                                                                   \
  using Type##Ptr = std::unique_ptr<Ort##Type, Type##Deleter>;
MLBRIDGE_ORT_HANDLE(Session)
MLBRIDGE_ORT_HANDLE(SessionOptions)
MLBRIDGE_ORT_HANDLE(Value)
MLBRIDGE_ORT_HANDLE(IoBinding)
MLBRIDGE_ORT_HANDLE(RunOptions)
MLBRIDGE_ORT_HANDLE(MemoryInfo)
MLBRIDGE_ORT_HANDLE(TypeInfo)
MLBRIDGE_ORT_HANDLE(ModelMetadata)
#undef MLBRIDGE_ORT_HANDLE

// A string ONNX Runtime allocated with the default allocator, copied and freed.
std::string takeString(OrtAllocator* allocator, char* s) {
  std::string out = s ? s : "";
  if (s) ort::ignore(ort::api()->AllocatorFree(allocator, s));
  return out;
}

// ONNX element type -> mlbridge dtype (kInvalid when mlbridge cannot carry it).
DType toDType(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return DType::kFloat32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return DType::kFloat64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return DType::kInt8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return DType::kUInt8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: return DType::kInt16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return DType::kUInt16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return DType::kInt32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return DType::kUInt32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return DType::kInt64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return DType::kUInt64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return DType::kBool;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING: return DType::kString;
    default: return DType::kInvalid;
  }
}

ONNXTensorElementDataType toOnnx(DType t) {
  switch (t) {
    case DType::kFloat32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case DType::kFloat64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case DType::kInt8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case DType::kUInt8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case DType::kInt16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    case DType::kUInt16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
    case DType::kInt32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case DType::kUInt32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
    case DType::kInt64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case DType::kUInt64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
    case DType::kBool: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
    case DType::kString: return ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING;
    default: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
}

const char* onnxTypeName(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64: return "complex64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128: return "complex128";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN: return "float8e4m3fn";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2: return "float8e5m2";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4: return "uint4";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4: return "int4";
    default: {
      DType d = toDType(t);
      return d == DType::kInvalid ? "an unknown element type" : dtypeName(d);
    }
  }
}

// One graph input or output as ONNX Runtime reports it.
struct PortInfo {
  TensorSpec spec;                     // dtype kInvalid when not representable; -1: symbolic
  std::vector<std::string> dimNames;   // dim_param per dimension ("" when none)
  std::string typeName;
};

Status describe(const OrtTypeInfo* info, const std::string& name, PortInfo* out) {
  const OrtApi* a = ort::api();
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->GetOnnxTypeFromTypeInfo(info, &kind), "reading the type of '" + name + "'");
  if (kind != ONNX_TYPE_TENSOR) {
    const char* k = "an unknown kind of value";
    switch (kind) {
      case ONNX_TYPE_SEQUENCE: k = "a sequence"; break;
      case ONNX_TYPE_MAP: k = "a map"; break;
      case ONNX_TYPE_OPAQUE: k = "an opaque value"; break;
      case ONNX_TYPE_SPARSETENSOR: k = "a sparse tensor"; break;
      case ONNX_TYPE_OPTIONAL: k = "an optional value"; break;
      default: break;
    }
    out->spec = TensorSpec(name, DType::kInvalid, {});
    out->typeName = k;
    return Status::OK();
  }
  const OrtTensorTypeAndShapeInfo* t = nullptr;
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->CastTypeInfoToTensorInfo(info, &t), "reading the type of '" + name + "'");
  ONNXTensorElementDataType et = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->GetTensorElementType(t, &et), "reading the type of '" + name + "'");
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->GetDimensionsCount(t, &rank), "reading the shape of '" + name + "'");
  std::vector<int64_t> dims(rank);
  std::vector<const char*> symbols(rank, nullptr);
  if (rank) {
    MLBRIDGE_ORT_RETURN_IF_ERROR(a->GetDimensions(t, dims.data(), rank), "reading the shape of '" + name + "'");
    MLBRIDGE_ORT_RETURN_IF_ERROR(a->GetSymbolicDimensions(t, symbols.data(), rank),
                                 "reading the shape of '" + name + "'");
  }
  out->dimNames.clear();
  for (size_t k = 0; k < rank; ++k) {
    if (dims[k] < 0) dims[k] = -1;
    out->dimNames.push_back(dims[k] < 0 && symbols[k] ? symbols[k] : "");
  }
  out->spec = TensorSpec(name, toDType(et), std::move(dims));
  out->typeName = onnxTypeName(et);
  return Status::OK();
}


const char* const kSpinIntra = "session.intra_op.allow_spinning";
const char* const kSpinInter = "session.inter_op.allow_spinning";

}  // namespace

// ---- OnnxRuntimeModel ---------------------------------------------------------------

struct OnnxRuntimeModel::Impl {
  OnnxRuntimeOptions options;
  SessionPtr session;
  MemoryInfoPtr cpu;  // where runner buffers live
  std::vector<TensorSpec> inputs, outputs;
  std::vector<std::vector<std::string>> inputDimNames, outputDimNames;
  std::vector<std::string> inputTypeNames, outputTypeNames;
  std::string producer;
};

namespace {

Status makeSessionOptions(const OnnxRuntimeOptions& o, SessionOptionsPtr* out) {
  const OrtApi* a = ort::api();
  if (o.intraOpThreads < 0) return invalidArgument("intraOpThreads must be >= 0, got " + std::to_string(o.intraOpThreads));
  if (o.interOpThreads < 0) return invalidArgument("interOpThreads must be >= 0, got " + std::to_string(o.interOpThreads));
  if (o.logSeverity < 0 || o.logSeverity > 4)
    return invalidArgument("logSeverity must be 0 (verbose) to 4 (fatal), got " + std::to_string(o.logSeverity));
  OrtSessionOptions* raw = nullptr;
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->CreateSessionOptions(&raw), "creating session options");
  SessionOptionsPtr so(raw);
  const char* what = "setting session options";
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->SetIntraOpNumThreads(so.get(), o.intraOpThreads), what);
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->SetInterOpNumThreads(so.get(), o.interOpThreads), what);
  MLBRIDGE_ORT_RETURN_IF_ERROR(
      a->SetSessionExecutionMode(so.get(), o.interOpThreads == 1 ? ORT_SEQUENTIAL : ORT_PARALLEL), what);
  GraphOptimizationLevel level = ORT_ENABLE_ALL;
  switch (o.optimization) {
    case OnnxRuntimeOptions::Optimization::kNone: level = ORT_DISABLE_ALL; break;
    case OnnxRuntimeOptions::Optimization::kBasic: level = ORT_ENABLE_BASIC; break;
    case OnnxRuntimeOptions::Optimization::kExtended: level = ORT_ENABLE_EXTENDED; break;
    case OnnxRuntimeOptions::Optimization::kAll: level = ORT_ENABLE_ALL; break;
  }
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->SetSessionGraphOptimizationLevel(so.get(), level), what);
  const char* spin = o.allowSpinning ? "1" : "0";
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->AddSessionConfigEntry(so.get(), kSpinIntra, spin), what);
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->AddSessionConfigEntry(so.get(), kSpinInter, spin), what);
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->SetSessionLogSeverityLevel(so.get(), o.logSeverity), what);
  for (const auto& kv : o.dimValues) {
    if (kv.first.empty()) return invalidArgument("dimValues: empty dimension name");
    if (kv.second < 0)
      return invalidArgument("dimension '" + kv.first + "' bound to a negative value (" + std::to_string(kv.second) + ")");
    MLBRIDGE_ORT_RETURN_IF_ERROR(a->AddFreeDimensionOverrideByName(so.get(), kv.first.c_str(), kv.second),
                                 "binding dimension '" + kv.first + "'");
  }
  *out = std::move(so);
  return Status::OK();
}

// Reads names, types and shapes once; the runners use them on every call.
Status inspect(OnnxRuntimeModel::Impl* m) {
  const OrtApi* a = ort::api();
  OrtAllocator* alloc = nullptr;
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->GetAllocatorWithDefaultOptions(&alloc), "getting the default allocator");
  for (int pass = 0; pass < 2; ++pass) {
    const bool in = pass == 0;
    size_t n = 0;
    MLBRIDGE_ORT_RETURN_IF_ERROR(in ? a->SessionGetInputCount(m->session.get(), &n)
                                    : a->SessionGetOutputCount(m->session.get(), &n),
                                 "counting the model's inputs and outputs");
    for (size_t i = 0; i < n; ++i) {
      char* raw = nullptr;
      MLBRIDGE_ORT_RETURN_IF_ERROR(in ? a->SessionGetInputName(m->session.get(), i, alloc, &raw)
                                      : a->SessionGetOutputName(m->session.get(), i, alloc, &raw),
                                   "reading the model's input and output names");
      std::string name = takeString(alloc, raw);
      OrtTypeInfo* ti = nullptr;
      MLBRIDGE_ORT_RETURN_IF_ERROR(in ? a->SessionGetInputTypeInfo(m->session.get(), i, &ti)
                                      : a->SessionGetOutputTypeInfo(m->session.get(), i, &ti),
                                   "reading the type of '" + name + "'");
      TypeInfoPtr owned(ti);
      PortInfo p;
      MLBRIDGE_RETURN_IF_ERROR(describe(ti, name, &p));
      (in ? m->inputs : m->outputs).push_back(std::move(p.spec));
      (in ? m->inputDimNames : m->outputDimNames).push_back(std::move(p.dimNames));
      (in ? m->inputTypeNames : m->outputTypeNames).push_back(std::move(p.typeName));
    }
  }
  OrtModelMetadata* md = nullptr;
  OrtStatus* ms = a->SessionGetModelMetadata(m->session.get(), &md);
  if (ms) {
    ort::ignore(ms);  // no metadata: no producer name
  } else if (md) {
    ModelMetadataPtr owned(md);
    char* producer = nullptr;
    OrtStatus* s = a->ModelMetadataGetProducerName(md, alloc, &producer);
    if (s) ort::ignore(s);
    else m->producer = takeString(alloc, producer);
  }
  OrtMemoryInfo* cpu = nullptr;
  MLBRIDGE_ORT_RETURN_IF_ERROR(a->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &cpu),
                               "describing CPU memory");
  m->cpu.reset(cpu);
  return Status::OK();
}

// path == nullptr: from memory.
Status loadImpl(const char* path, const void* data, size_t size, const OnnxRuntimeOptions& options,
                std::unique_ptr<OnnxRuntimeModel::Impl>* out) {
  MLBRIDGE_RETURN_IF_ERROR(ort::apiStatus());
  StatusOr<OrtEnv*> env = ort::env();
  if (!env.ok()) return env.status();
  std::unique_ptr<OnnxRuntimeModel::Impl> m(new OnnxRuntimeModel::Impl());
  m->options = options;
  SessionOptionsPtr so;
  MLBRIDGE_RETURN_IF_ERROR(makeSessionOptions(options, &so));
  OrtSession* session = nullptr;
  const OrtApi* a = ort::api();
  if (path) {
    MLBRIDGE_RETURN_IF_ERROR(
        ort::toStatus(a->CreateSession(*env, path, so.get(), &session), "", StatusCode::kInvalidArgument));
  } else {
    if (!data || size == 0) return dataLoss("an empty buffer is not an ONNX model");
    MLBRIDGE_RETURN_IF_ERROR(ort::toStatus(a->CreateSessionFromArray(*env, data, size, so.get(), &session), "",
                                           StatusCode::kInvalidArgument));
  }
  m->session.reset(session);
  MLBRIDGE_RETURN_IF_ERROR(inspect(m.get()));
  *out = std::move(m);
  return Status::OK();
}

}  // namespace

OnnxRuntimeModel::OnnxRuntimeModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnnxRuntimeModel::~OnnxRuntimeModel() = default;

StatusOr<std::shared_ptr<const OnnxRuntimeModel>> OnnxRuntimeModel::load(const std::string& path,
                                                                         const OnnxRuntimeOptions& options) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status(StatusCode::kNotFound, path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return invalidArgument(path + ": is a directory, not an ONNX model");
  std::unique_ptr<Impl> impl;
  Status s = loadImpl(path.c_str(), nullptr, 0, options, &impl);
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return std::shared_ptr<const OnnxRuntimeModel>(new OnnxRuntimeModel(std::move(impl)));
}

StatusOr<std::shared_ptr<const OnnxRuntimeModel>> OnnxRuntimeModel::loadFromMemory(const void* data, size_t size,
                                                                                   const OnnxRuntimeOptions& options) {
  std::unique_ptr<Impl> impl;
  MLBRIDGE_RETURN_IF_ERROR(loadImpl(nullptr, data, size, options, &impl));
  return std::shared_ptr<const OnnxRuntimeModel>(new OnnxRuntimeModel(std::move(impl)));
}

const std::vector<TensorSpec>& OnnxRuntimeModel::inputs() const { return impl_->inputs; }
const std::vector<TensorSpec>& OnnxRuntimeModel::outputs() const { return impl_->outputs; }
const std::vector<std::string>& OnnxRuntimeModel::declaredInputDimNames(size_t i) const {
  return impl_->inputDimNames[i];
}
const std::vector<std::string>& OnnxRuntimeModel::declaredOutputDimNames(size_t i) const {
  return impl_->outputDimNames[i];
}
const std::string& OnnxRuntimeModel::inputTypeName(size_t i) const { return impl_->inputTypeNames[i]; }
const std::string& OnnxRuntimeModel::outputTypeName(size_t i) const { return impl_->outputTypeNames[i]; }
const std::string& OnnxRuntimeModel::producer() const { return impl_->producer; }
const OnnxRuntimeOptions& OnnxRuntimeModel::options() const { return impl_->options; }

std::string OnnxRuntimeModel::runtimeVersion() {
  const OrtApiBase* base = OrtGetApiBase();
  return base && base->GetVersionString ? base->GetVersionString() : "";
}

int OnnxRuntimeModel::apiVersion() { return ORT_API_VERSION; }

// ---- OnnxRuntimeRunner --------------------------------------------------------------

struct OnnxRuntimeRunner::Impl {
  std::shared_ptr<const OnnxRuntimeModel> model;
  std::vector<std::string> boundNames;
  std::vector<ValuePtr> values;  // over this runner's buffers: inputs, then outputs
  IoBindingPtr binding;
  RunOptionsPtr runOptions;
  // Outputs ONNX Runtime does not write into the bound buffer (a graph output
  // that is a graph input or a constant): found on the first evaluate(), then
  // copied after each call.
  bool checked = false;
  std::vector<char> copyOutput;
  bool anyCopy = false;

  Status collectOutputs(const OnnxRuntimeRunner& runner);
};

OnnxRuntimeRunner::OnnxRuntimeRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice)
    : ModelRunner(std::move(features), std::move(advice)), impl_(new Impl()) {}

OnnxRuntimeRunner::~OnnxRuntimeRunner() {
  // The binding refers to the values, the values to this runner's buffers.
  impl_->binding.reset();
  impl_->values.clear();
}

const std::shared_ptr<const OnnxRuntimeModel>& OnnxRuntimeRunner::model() const { return impl_->model; }
const std::string& OnnxRuntimeRunner::boundOutputName(size_t i) const { return impl_->boundNames[i]; }

StatusOr<std::unique_ptr<OnnxRuntimeRunner>> OnnxRuntimeRunner::create(const std::string& onnxPath,
                                                                       std::vector<TensorSpec> features,
                                                                       std::vector<TensorSpec> advice,
                                                                       const OnnxRuntimeOptions& options) {
  StatusOr<std::shared_ptr<const OnnxRuntimeModel>> m = OnnxRuntimeModel::load(onnxPath, options);
  if (!m.ok()) return m.status();
  return create(std::move(*m), std::move(features), std::move(advice));
}

StatusOr<std::unique_ptr<OnnxRuntimeRunner>> OnnxRuntimeRunner::create(std::shared_ptr<const OnnxRuntimeModel> model,
                                                                       std::vector<TensorSpec> features,
                                                                       std::vector<TensorSpec> advice) {
  if (!model) return invalidArgument("OnnxRuntimeRunner::create: no model");
  MLBRIDGE_RETURN_IF_ERROR(checkRunnerSpecs(features, advice));
  const OnnxRuntimeModel::Impl& mi = *model->impl_;

  // The rules every in-process runner shares; ONNX Runtime passes numbers only.
  const std::vector<TensorSpec>& ins = mi.inputs;
  const std::vector<TensorSpec>& outs = mi.outputs;
  std::vector<GraphInput> graphInputs;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].type() == DType::kInvalid || ins[i].type() == DType::kString)
      return unimplemented("the model's input '" + ins[i].name() + "' is " + mi.inputTypeNames[i] +
                           ", which the ONNX Runtime runner cannot pass");
    graphInputs.push_back(GraphInput{&ins[i], &ins[i].shape(), &mi.inputDimNames[i]});
  }
  for (size_t o = 0; o < outs.size(); ++o)
    if (outs[o].type() == DType::kInvalid || outs[o].type() == DType::kString)
      for (const TensorSpec& a : advice)
        if (a.name() == outs[o].name())
          return unimplemented("the model's output '" + outs[o].name() + "' is " + mi.outputTypeNames[o] +
                               ", which the ONNX Runtime runner cannot pass");
  std::vector<size_t> featureOf, outputOf;
  MLBRIDGE_RETURN_IF_ERROR(bindInputs(graphInputs, features, &featureOf));
  MLBRIDGE_RETURN_IF_ERROR(bindOutputs(outs, advice, &outputOf));
  std::vector<std::string> boundNames;
  for (size_t a = 0; a < advice.size(); ++a) boundNames.push_back(outs[outputOf[a]].name());

  std::unique_ptr<OnnxRuntimeRunner> r(new OnnxRuntimeRunner(std::move(features), std::move(advice)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  Impl& impl = *r->impl_;
  impl.model = model;
  impl.boundNames = std::move(boundNames);
  impl.copyOutput.assign(r->outputSpecs().size(), 0);
  const OrtApi* api = ort::api();
  OrtRunOptions* ro = nullptr;
  MLBRIDGE_ORT_RETURN_IF_ERROR(api->CreateRunOptions(&ro), "creating run options");
  impl.runOptions.reset(ro);
  OrtIoBinding* binding = nullptr;
  MLBRIDGE_ORT_RETURN_IF_ERROR(api->CreateIoBinding(mi.session.get(), &binding), "creating an I/O binding");
  impl.binding.reset(binding);

  // Tensors over the runner's own buffers (no copy), bound once.
  auto wrap = [&](const TensorSpec& spec, void* data) -> Status {
    OrtValue* v = nullptr;
    MLBRIDGE_ORT_RETURN_IF_ERROR(
        api->CreateTensorWithDataAsOrtValue(mi.cpu.get(), data, spec.byteSize(), spec.shape().data(),
                                            spec.shape().size(), toOnnx(spec.type()), &v),
        "wrapping the buffer of '" + spec.name() + "'");
    impl.values.emplace_back(v);
    return Status::OK();
  };
  for (size_t i = 0; i < ins.size(); ++i) {
    const TensorRef& ref = r->inputRefs()[featureOf[i]];
    MLBRIDGE_RETURN_IF_ERROR(wrap(*ref.spec, const_cast<void*>(ref.data)));
    MLBRIDGE_ORT_RETURN_IF_ERROR(api->BindInput(binding, ins[i].name().c_str(), impl.values.back().get()),
                                 "binding input '" + ins[i].name() + "'");
  }
  for (size_t a = 0; a < r->outputRefs().size(); ++a) {
    const MutableTensorRef& ref = r->outputRefs()[a];
    MLBRIDGE_RETURN_IF_ERROR(wrap(*ref.spec, ref.data));
    MLBRIDGE_ORT_RETURN_IF_ERROR(api->BindOutput(binding, impl.boundNames[a].c_str(), impl.values.back().get()),
                                 "binding output '" + impl.boundNames[a] + "'");
  }
  return r;
}

// Checks where ONNX Runtime left each output; copies the ones not written in
// place (type and shape checked: never a reinterpretation).
Status OnnxRuntimeRunner::Impl::collectOutputs(const OnnxRuntimeRunner& runner) {
  const OrtApi* api = ort::api();
  OrtAllocator* alloc = nullptr;
  MLBRIDGE_ORT_RETURN_IF_ERROR(api->GetAllocatorWithDefaultOptions(&alloc), "getting the default allocator");
  OrtValue** vals = nullptr;
  size_t n = 0;
  MLBRIDGE_ORT_RETURN_IF_ERROR(api->GetBoundOutputValues(binding.get(), alloc, &vals, &n), "reading the outputs");
  std::vector<ValuePtr> owned;
  for (size_t k = 0; k < n; ++k) owned.emplace_back(vals[k]);
  if (vals) ort::ignore(api->AllocatorFree(alloc, vals));
  Span<const MutableTensorRef> outs = runner.outputRefs();
  if (n != outs.size())
    return internalError("ONNX Runtime returned " + std::to_string(n) + " outputs for " + std::to_string(outs.size()) +
                         " bound");
  for (size_t a = 0; a < n; ++a) {
    if (checked && !copyOutput[a]) continue;
    const TensorSpec& spec = *outs[a].spec;
    void* data = nullptr;
    MLBRIDGE_ORT_RETURN_IF_ERROR(api->GetTensorMutableData(owned[a].get(), &data),
                                 "reading output '" + boundNames[a] + "'");
    if (data == outs[a].data) continue;
    OrtTensorTypeAndShapeInfo* info = nullptr;
    MLBRIDGE_ORT_RETURN_IF_ERROR(api->GetTensorTypeAndShape(owned[a].get(), &info),
                                 "reading output '" + boundNames[a] + "'");
    ONNXTensorElementDataType et = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    size_t rank = 0;
    OrtStatus* s = api->GetTensorElementType(info, &et);
    if (!s) s = api->GetDimensionsCount(info, &rank);
    std::vector<int64_t> dims(rank);
    if (!s && rank) s = api->GetDimensions(info, dims.data(), rank);
    api->ReleaseTensorTypeAndShapeInfo(info);
    MLBRIDGE_RETURN_IF_ERROR(ort::toStatus(s, "reading output '" + boundNames[a] + "'", StatusCode::kAborted));
    if (toDType(et) != spec.type())
      return Status(StatusCode::kAborted, "model output '" + boundNames[a] + "' is " + onnxTypeName(et) + ", advice '" +
                                              spec.name() + "' is " + dtypeName(spec.type()));
    if (dims != spec.shape())
      return Status(StatusCode::kAborted, "model output '" + boundNames[a] + "' has shape " + shapeToString(dims) +
                                              ", advice '" + spec.name() + "' has shape " +
                                              shapeToString(spec.shape()));
    if (spec.byteSize()) std::memcpy(outs[a].data, data, spec.byteSize());
    copyOutput[a] = 1;
    anyCopy = true;
  }
  checked = true;
  return Status::OK();
}

Status OnnxRuntimeRunner::evaluateImpl() {
  const OrtApi* api = ort::api();
  OrtStatus* s = api->RunWithBinding(impl_->model->impl_->session.get(), impl_->runOptions.get(), impl_->binding.get());
  if (s) return ort::toStatus(s, "ONNX Runtime", StatusCode::kAborted);
  if (!impl_->checked || impl_->anyCopy) return impl_->collectOutputs(*this);
  return Status::OK();
}

}  // namespace mlbridge
