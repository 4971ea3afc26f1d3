// TfAotModelRunner (include/mlbridge/tfaot_runner.h). Needs nothing from
// TensorFlow: the generated descriptor hides XLA's class behind plain C.
#include "mlbridge/tfaot_runner.h"

#include <cstring>

#include "graph_binding.h"
#include "runner_specs.h"

namespace mlbridge {

namespace {

std::vector<TensorSpec> specsOf(const mlbridge_aot_tensor* t, size_t n) {
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < n; ++i)
    out.emplace_back(t[i].name ? t[i].name : "", static_cast<DType>(t[i].dtype),
                     std::vector<int64_t>(t[i].shape, t[i].shape + t[i].rank));
  return out;
}

std::string nameOf(const mlbridge_tfaot_model* m) { return m->name ? m->name : ""; }

}  // namespace

std::vector<TensorSpec> TfAotModelRunner::feedsOf(const mlbridge_tfaot_model* m) {
  return m ? specsOf(m->feeds, m->num_feeds) : std::vector<TensorSpec>();
}
std::vector<TensorSpec> TfAotModelRunner::fetchesOf(const mlbridge_tfaot_model* m) {
  return m ? specsOf(m->fetches, m->num_fetches) : std::vector<TensorSpec>();
}

TfAotModelRunner::TfAotModelRunner(const mlbridge_tfaot_model* model, std::vector<TensorSpec> features,
                                   std::vector<TensorSpec> advice)
    : ModelRunner(std::move(features), std::move(advice)), model_(model) {}

TfAotModelRunner::~TfAotModelRunner() {
  if (instance_) model_->destroy(instance_);
}

StatusOr<std::unique_ptr<TfAotModelRunner>> TfAotModelRunner::create(const mlbridge_tfaot_model* model,
                                                                    std::vector<TensorSpec> features,
                                                                    std::vector<TensorSpec> advice) {
  if (!model) return invalidArgument("TfAotModelRunner::create: no model");
  if (model->abi_version != MLBRIDGE_TFAOT_ABI_VERSION)
    return failedPrecondition("'" + nameOf(model) + "' is not a TensorFlow AOT model descriptor of this mlbridge (ABI " +
                              std::to_string(model->abi_version) + ", expected " +
                              std::to_string(MLBRIDGE_TFAOT_ABI_VERSION) +
                              "): an mlbridge-aot model goes to the aot runner; else regenerate it with "
                              "mlbridge_add_tf_aot_model");
  if (!model->create || !model->destroy || !model->feed_data || !model->fetch_data || !model->run ||
      (model->num_feeds && !model->feeds) || (model->num_fetches && !model->fetches))
    return invalidArgument("TfAotModelRunner::create: malformed model descriptor");
  MLBRIDGE_RETURN_IF_ERROR(checkRunnerSpecs(features, advice));

  const std::vector<TensorSpec> feeds = feedsOf(model), fetches = fetchesOf(model);
  for (size_t i = 0; i < feeds.size(); ++i)
    if (feeds[i].byteSize() != model->feeds[i].bytes)
      return invalidArgument("TfAotModelRunner::create: feed '" + feeds[i].name() + "' has inconsistent sizes");
  for (size_t i = 0; i < fetches.size(); ++i)
    if (fetches[i].byteSize() != model->fetches[i].bytes)
      return invalidArgument("TfAotModelRunner::create: fetch '" + fetches[i].name() + "' has inconsistent sizes");
  std::vector<GraphInput> graphInputs;
  for (const TensorSpec& in : feeds) graphInputs.push_back(GraphInput{&in, &in.shape(), nullptr});
  std::vector<size_t> featureOf, fetchOf;
  MLBRIDGE_RETURN_IF_ERROR(bindInputs(graphInputs, features, &featureOf));
  MLBRIDGE_RETURN_IF_ERROR(bindOutputs(fetches, advice, &fetchOf));

  std::unique_ptr<TfAotModelRunner> r(new TfAotModelRunner(model, std::move(features), std::move(advice)));
  MLBRIDGE_RETURN_IF_ERROR(r->initBuffers());
  if (const char* err = model->create(&r->instance_))
    return Status(StatusCode::kResourceExhausted, "TensorFlow AOT model '" + nameOf(model) + "': " + err);
  if (!r->instance_) return internalError("TensorFlow AOT model '" + nameOf(model) + "': no instance");
  for (size_t i = 0; i < feeds.size(); ++i) {
    void* dst = model->feed_data(r->instance_, i);
    if (!dst) return internalError("TensorFlow AOT model '" + nameOf(model) + "': no buffer for feed '" + feeds[i].name() + "'");
    r->in_.push_back(Copy{dst, r->inputRefs()[featureOf[i]].data, feeds[i].byteSize()});
  }
  // XLA fills its result table during Run(): fetch buffers are looked up after each run.
  for (size_t a = 0; a < fetchOf.size(); ++a)
    r->out_.push_back(Fetch{r->outputRefs()[a].data, fetchOf[a], fetches[fetchOf[a]].byteSize()});
  return r;
}

Status TfAotModelRunner::evaluateImpl() {
  for (const Copy& c : in_) std::memcpy(c.dst, c.src, c.bytes);
  if (const char* err = model_->run(instance_))
    return Status(StatusCode::kAborted, "TensorFlow AOT model '" + nameOf(model_) + "': " + err);
  for (const Fetch& f : out_) {
    const void* src = model_->fetch_data(instance_, f.index);
    if (!src)
      return internalError("TensorFlow AOT model '" + nameOf(model_) + "' gave no buffer for fetch '" +
                           std::string(model_->fetches[f.index].name ? model_->fetches[f.index].name : "") + "'");
    std::memcpy(f.dst, src, f.bytes);
  }
  return Status::OK();
}

}  // namespace mlbridge
