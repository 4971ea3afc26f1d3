// AotModelRunner (include/mlbridge/aot_runner.h): spec matching identical to
// NativeModelRunner's; inputs are read in place from the feature buffers and
// bound outputs are written straight into the advice buffers.
#include "mlbridge/aot_runner.h"

#include "graph_binding.h"
#include "runner_specs.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

namespace mlbridge {

namespace {


std::vector<TensorSpec> specsOf(const mlbridge_aot_tensor* t, size_t n) {
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < n; ++i)
    out.emplace_back(t[i].name ? t[i].name : "", static_cast<DType>(t[i].dtype),
                     std::vector<int64_t>(t[i].shape, t[i].shape + t[i].rank));
  return out;
}

}  // namespace

std::vector<TensorSpec> AotModelRunner::inputsOf(const mlbridge_aot_model* m) {
  return m ? specsOf(m->inputs, m->num_inputs) : std::vector<TensorSpec>();
}
std::vector<TensorSpec> AotModelRunner::outputsOf(const mlbridge_aot_model* m) {
  return m ? specsOf(m->outputs, m->num_outputs) : std::vector<TensorSpec>();
}

AotModelRunner::AotModelRunner(const mlbridge_aot_model* model, std::vector<TensorSpec> features,
                               std::vector<TensorSpec> advice)
    : ModelRunner(std::move(features), std::move(advice)), model_(model) {}

AotModelRunner::~AotModelRunner() = default;

StatusOr<std::unique_ptr<AotModelRunner>> AotModelRunner::create(const mlbridge_aot_model* model,
                                                                std::vector<TensorSpec> features,
                                                                std::vector<TensorSpec> advice) {
  if (!model) return invalidArgument("AotModelRunner::create: no model");
  if (model->abi_version != MLBRIDGE_AOT_ABI_VERSION)
    return Status(StatusCode::kFailedPrecondition,
                  "AOT model '" + std::string(model->name ? model->name : "") + "' has ABI version " +
                      std::to_string(model->abi_version) + "; this library expects " +
                      std::to_string(MLBRIDGE_AOT_ABI_VERSION) + " (regenerate it with this mlbridge-aot)");
  if (!model->run || (model->num_inputs && !model->inputs) || (model->num_outputs && !model->outputs))
    return invalidArgument("AotModelRunner::create: malformed model descriptor");
  MLBRIDGE_RETURN_IF_ERROR(checkRunnerSpecs(features, advice));

  const std::vector<TensorSpec> ins = inputsOf(model), outs = outputsOf(model);
  // The rules every in-process runner shares; AOT shapes are all static.
  std::vector<GraphInput> graphInputs;
  for (const TensorSpec& in : ins) graphInputs.push_back(GraphInput{&in, &in.shape(), nullptr});
  std::vector<size_t> featureOf, outputOf;
  MLBRIDGE_RETURN_IF_ERROR(bindInputs(graphInputs, features, &featureOf));
  MLBRIDGE_RETURN_IF_ERROR(bindOutputs(outs, advice, &outputOf));

  std::unique_ptr<AotModelRunner> r(new AotModelRunner(model, std::move(features), std::move(advice)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  const size_t align = 64;
  r->scratch_.reset(new (std::nothrow) unsigned char[model->scratch_bytes + align]);
  if (!r->scratch_) return Status(StatusCode::kResourceExhausted, "cannot allocate the model's scratch memory");
  uintptr_t base = reinterpret_cast<uintptr_t>(r->scratch_.get());
  r->alignedScratch_ = r->scratch_.get() + ((align - base % align) % align);
  for (size_t i = 0; i < ins.size(); ++i)
    r->inputs_.push_back(r->inputRefs()[static_cast<size_t>(featureOf[i])].data);
  r->outputs_.assign(outs.size(), nullptr);
  for (size_t a = 0; a < r->outputRefs().size(); ++a)
    r->outputs_[static_cast<size_t>(outputOf[a])] = r->outputRefs()[a].data;
  size_t sinkBytes = 0;
  for (size_t o = 0; o < outs.size(); ++o)
    if (!r->outputs_[o]) sinkBytes = std::max(sinkBytes, model->outputs[o].bytes);
  if (sinkBytes) {
    r->sink_.reset(new (std::nothrow) unsigned char[sinkBytes]);
    if (!r->sink_) return Status(StatusCode::kResourceExhausted, "cannot allocate output memory");
    for (size_t o = 0; o < outs.size(); ++o)
      if (!r->outputs_[o]) r->outputs_[o] = r->sink_.get();
  }
  return r;
}

Status AotModelRunner::evaluateImpl() {
  if (const char* err = model_->run(inputs_.data(), outputs_.data(), alignedScratch_))
    return Status(StatusCode::kAborted, std::string("AOT model '") + (model_->name ? model_->name : "") +
                                            "' rejected its input: " + err);
  return Status::OK();
}

}  // namespace mlbridge
