// OnnxModel and NativeModelRunner (include/mlbridge/onnx_runner.h).
#include "mlbridge/onnx_runner.h"

#include "graph_binding.h"

#include <chrono>
#include <cstring>
#include <map>

#include "engine/graph.h"
#include "engine/import.h"
#include "engine/onnx_proto.h"
#include "engine/program.h"
#include "runner_specs.h"

namespace mlbridge {

struct OnnxModel::Impl {
  std::shared_ptr<const engine::onnx::ModelDesc> desc;  // kept to re-bind symbolic dims
  std::vector<engine::InputDecl> decls;
  OnnxLoadOptions options;
  engine::Graph graph;
  std::shared_ptr<const engine::Program> program;
  std::vector<TensorSpec> inputs, outputs;
  std::string producer;
};

namespace {

using Clock = std::chrono::steady_clock;

// When a load or specialization that starts now must give up.
Clock::time_point loadDeadline(const OnnxLoadOptions& options) {
  if (options.loadTimeoutMs <= 0) return Clock::time_point::max();
  return Clock::now() + std::chrono::milliseconds(options.loadTimeoutMs);
}

Status checkDeadline(Clock::time_point deadline, const OnnxLoadOptions& options, const char* phase) {
  if (Clock::now() <= deadline) return Status::OK();
  return deadlineExceeded(std::string("loading the model took longer than ") + std::to_string(options.loadTimeoutMs) +
                          " ms (OnnxLoadOptions::loadTimeoutMs), " + phase);
}

// Imports and plans `desc` with the given input shapes.
Status build(std::shared_ptr<const engine::onnx::ModelDesc> desc, std::vector<engine::InputDecl> decls,
             const std::vector<engine::Shape>& shapes, const OnnxLoadOptions& options, Clock::time_point deadline,
             std::unique_ptr<OnnxModel::Impl>* implOut) {
  engine::ImportOptions io;
  io.maxTensorBytes = options.maxTensorBytes;
  io.allowNewerOpsets = options.allowNewerOpsets;
  io.maxFoldedBytes = options.maxFoldedBytes;
  io.maxGraphDepth = options.maxGraphDepth;
  io.deadline = deadline;
  StatusOr<engine::Graph> graph = engine::importGraph(*desc, shapes, io);
  if (!graph.ok()) return graph.status();
  engine::CompileOptions co;
  co.portableKernels = options.portableKernels;
  co.maxArenaBytes = options.maxTensorBytes;
  StatusOr<std::shared_ptr<const engine::Program>> program = engine::compileProgram(*graph, co);
  if (!program.ok()) return program.status();
  MLBRIDGE_RETURN_IF_ERROR(checkDeadline(deadline, options, "while planning"));
  std::unique_ptr<OnnxModel::Impl> impl(new OnnxModel::Impl());
  impl->desc = std::move(desc);
  impl->decls = std::move(decls);
  impl->options = options;
  impl->graph = std::move(*graph);
  impl->program = std::move(*program);
  for (int v : impl->graph.inputs) {
    const engine::Value& val = impl->graph.value(v);
    impl->inputs.emplace_back(val.name, val.dtype, val.shape);
  }
  for (int v : impl->graph.outputs) {
    const engine::Value& val = impl->graph.value(v);
    impl->outputs.emplace_back(val.name, val.dtype, val.shape);
  }
  impl->producer = impl->desc->producerName;
  if (!impl->desc->producerVersion.empty()) impl->producer += " " + impl->desc->producerVersion;
  *implOut = std::move(impl);
  return Status::OK();
}

// Parses and plans a model; `dir` is the folder for external data ("" refuses it).
Status loadImpl(const void* data, size_t size, const OnnxLoadOptions& options, const std::string& dir,
                std::unique_ptr<OnnxModel::Impl>* implOut) {
  if (options.defaultDimValue < 0) return invalidArgument("defaultDimValue must be >= 0");
  if (size > options.maxFileBytes)
    return engine::resourceExhausted("the model has " + std::to_string(size) + " bytes, over the limit of " +
                             std::to_string(options.maxFileBytes) + " (OnnxLoadOptions::maxFileBytes)");
  const Clock::time_point deadline = loadDeadline(options);
  engine::onnx::ReadOptions ro;
  ro.maxTensorBytes = options.maxTensorBytes;
  ro.externalDataDir = dir;
  StatusOr<engine::onnx::ModelDesc> desc = engine::onnx::readModel(data, size, ro);
  if (!desc.ok()) return desc.status();
  auto shared = std::make_shared<const engine::onnx::ModelDesc>(std::move(*desc));
  StatusOr<std::vector<engine::InputDecl>> decls = engine::declaredInputs(*shared);
  if (!decls.ok()) return decls.status();
  std::vector<engine::Shape> shapes;
  for (const engine::InputDecl& d : *decls) {
    engine::Shape s = d.dims;
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] >= 0) continue;
      s[k] = options.defaultDimValue;
      for (const auto& kv : options.dimValues)
        if (!d.params[k].empty() && kv.first == d.params[k]) s[k] = kv.second;
      if (s[k] < 0) return invalidArgument("dimension '" + d.params[k] + "' bound to a negative value");
    }
    shapes.push_back(std::move(s));
  }
  MLBRIDGE_RETURN_IF_ERROR(checkDeadline(deadline, options, "while reading"));
  return build(shared, std::move(*decls), shapes, options, deadline, implOut);
}


}  // namespace

OnnxModel::OnnxModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnnxModel::~OnnxModel() = default;

StatusOr<std::shared_ptr<const OnnxModel>> OnnxModel::loadFromMemory(const void* data, size_t size,
                                                                     const OnnxLoadOptions& options) {
  std::unique_ptr<Impl> impl;
  MLBRIDGE_RETURN_IF_ERROR(loadImpl(data, size, options, "", &impl));
  return std::shared_ptr<const OnnxModel>(new OnnxModel(std::move(impl)));
}

StatusOr<std::shared_ptr<const OnnxModel>> OnnxModel::load(const std::string& path, const OnnxLoadOptions& options) {
  std::string bytes;
  MLBRIDGE_RETURN_IF_ERROR(engine::onnx::readFile(path, options.maxFileBytes, &bytes));
  std::string dir = ".";
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  std::unique_ptr<Impl> impl;
  Status s = loadImpl(bytes.data(), bytes.size(), options, dir, &impl);
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return std::shared_ptr<const OnnxModel>(new OnnxModel(std::move(impl)));
}

StatusOr<std::shared_ptr<const OnnxModel>> OnnxModel::specialize(
    const std::vector<std::vector<int64_t>>& inputShapes) const {
  if (inputShapes.size() != impl_->decls.size())
    return invalidArgument("specialize: " + std::to_string(inputShapes.size()) + " shapes for " +
                           std::to_string(impl_->decls.size()) + " inputs");
  std::unique_ptr<Impl> impl;
  MLBRIDGE_RETURN_IF_ERROR(
      build(impl_->desc, impl_->decls, inputShapes, impl_->options, loadDeadline(impl_->options), &impl));
  return std::shared_ptr<const OnnxModel>(new OnnxModel(std::move(impl)));
}

const std::vector<TensorSpec>& OnnxModel::inputs() const { return impl_->inputs; }
const std::vector<TensorSpec>& OnnxModel::outputs() const { return impl_->outputs; }
const std::vector<int64_t>& OnnxModel::declaredInputDims(size_t i) const { return impl_->decls[i].dims; }
const std::vector<std::string>& OnnxModel::declaredInputDimNames(size_t i) const { return impl_->decls[i].params; }
int64_t OnnxModel::opsetVersion() const { return impl_->graph.opset; }
const std::string& OnnxModel::producer() const { return impl_->producer; }
size_t OnnxModel::workingBytes() const { return impl_->program->arenaBytes; }
const char* OnnxModel::kernelIsa() const { return impl_->program->isa; }
std::string OnnxModel::dumpGraph() const { return impl_->graph.dump(); }
std::string OnnxModel::dumpProgram() const { return impl_->program->dump(impl_->graph); }
const engine::Graph& OnnxModel::graph() const { return impl_->graph; }
const engine::Program& OnnxModel::program() const { return *impl_->program; }

// ---- NativeModelRunner ------------------------------------------------------------

struct NativeModelRunner::Impl {
  std::shared_ptr<const OnnxModel> model;
  std::shared_ptr<engine::Buffer> arena;
  std::vector<void*> table;
  struct OutputCopy {
    int slot;
    void* dst;
    size_t bytes;
  };
  std::vector<OutputCopy> outputs;
  std::vector<std::string> boundNames;
};

NativeModelRunner::NativeModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice)
    : ModelRunner(std::move(features), std::move(advice)), impl_(new Impl()) {}

NativeModelRunner::~NativeModelRunner() = default;

const std::shared_ptr<const OnnxModel>& NativeModelRunner::model() const { return impl_->model; }
const std::string& NativeModelRunner::boundOutputName(size_t i) const { return impl_->boundNames[i]; }

StatusOr<std::unique_ptr<NativeModelRunner>> NativeModelRunner::create(const std::string& onnxPath,
                                                                        std::vector<TensorSpec> features,
                                                                        std::vector<TensorSpec> advice,
                                                                        const OnnxLoadOptions& options) {
  StatusOr<std::shared_ptr<const OnnxModel>> m = OnnxModel::load(onnxPath, options);
  if (!m.ok()) return m.status();
  return create(std::move(*m), std::move(features), std::move(advice));
}

StatusOr<std::unique_ptr<NativeModelRunner>> NativeModelRunner::create(std::shared_ptr<const OnnxModel> model,
                                                                        std::vector<TensorSpec> features,
                                                                        std::vector<TensorSpec> advice) {
  if (!model) return invalidArgument("NativeModelRunner::create: no model");
  MLBRIDGE_RETURN_IF_ERROR(checkRunnerSpecs(features, advice));

  // Inputs and outputs bind by the rules every in-process runner shares.
  const std::vector<TensorSpec>& ins = model->inputs();
  std::vector<GraphInput> graphInputs;
  for (size_t i = 0; i < ins.size(); ++i)
    graphInputs.push_back(GraphInput{&ins[i], &model->declaredInputDims(i), &model->declaredInputDimNames(i)});
  std::vector<size_t> featureOf;
  MLBRIDGE_RETURN_IF_ERROR(bindInputs(graphInputs, features, &featureOf));
  // Symbolic dimensions take the features' values: specialize once.
  std::vector<std::vector<int64_t>> bound(ins.size());
  bool rebind = false;
  for (size_t i = 0; i < ins.size(); ++i) {
    bound[i] = features[featureOf[i]].shape();
    if (bound[i] != ins[i].shape()) rebind = true;
  }
  std::shared_ptr<const OnnxModel> m = model;
  if (rebind) {
    StatusOr<std::shared_ptr<const OnnxModel>> s = model->specialize(bound);
    if (!s.ok()) return Status(s.status().code(), "binding the features' shapes: " + s.status().message());
    m = std::move(*s);
  }

  const std::vector<TensorSpec>& outs = m->outputs();
  std::vector<size_t> outputOf;
  MLBRIDGE_RETURN_IF_ERROR(bindOutputs(outs, advice, &outputOf));
  std::vector<std::string> boundNames;
  for (size_t a = 0; a < advice.size(); ++a) boundNames.push_back(outs[outputOf[a]].name());

  std::unique_ptr<NativeModelRunner> r(new NativeModelRunner(std::move(features), std::move(advice)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  Impl& impl = *r->impl_;
  impl.model = m;
  impl.boundNames = std::move(boundNames);
  const engine::Program& prog = m->program();
  impl.arena = engine::Buffer::allocate(prog.arenaBytes);
  if (!impl.arena) return Status(StatusCode::kResourceExhausted, "cannot allocate " + std::to_string(prog.arenaBytes) +
                                                                     " bytes of working memory");
  std::vector<const void*> inputPtrs(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) inputPtrs[i] = r->inputRefs()[static_cast<size_t>(featureOf[i])].data;
  impl.table.assign(prog.slots.size(), nullptr);
  prog.bind(impl.arena->as<unsigned char>(), inputPtrs.data(), impl.table.data());
  for (size_t a = 0; a < r->outputRefs().size(); ++a) {
    size_t o = static_cast<size_t>(outputOf[a]);
    impl.outputs.push_back(Impl::OutputCopy{prog.outputSlots[o], r->outputRefs()[a].data, prog.outputBytes[o]});
  }
  return r;
}

Status NativeModelRunner::evaluateImpl() {
  const engine::Program& prog = impl_->model->program();
  size_t failed = 0;
  if (const char* err = prog.run(impl_->table.data(), &failed))
    return Status(StatusCode::kAborted, "model evaluation failed in " + prog.stepWhat[failed] + ": " + err);
  for (const Impl::OutputCopy& c : impl_->outputs)
    if (c.bytes) std::memcpy(c.dst, impl_->table[static_cast<size_t>(c.slot)], c.bytes);
  return Status::OK();
}

}  // namespace mlbridge
