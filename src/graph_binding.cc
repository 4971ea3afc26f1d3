#include "graph_binding.h"

#include <map>
#include <utility>

namespace mlbridge {

std::string specList(const std::vector<TensorSpec>& specs) {
  std::string s;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (i) s += ", ";
    s += "'" + specs[i].name() + "' (" + dtypeName(specs[i].type()) + " " + shapeToString(specs[i].shape()) + ")";
  }
  return s.empty() ? "none" : s;
}

Status bindInputs(const std::vector<GraphInput>& inputs, const std::vector<TensorSpec>& features,
                  std::vector<size_t>* featureOf) {
  featureOf->assign(inputs.size(), 0);
  std::map<std::string, std::pair<int64_t, std::string>> params;  // dim_param -> (value, feature)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& in = *inputs[i].spec;
    int found = -1;
    for (size_t f = 0; f < features.size(); ++f)
      if (features[f].name() == in.name()) found = static_cast<int>(f);
    if (found < 0)
      return Status(StatusCode::kNotFound, "the model needs input '" + in.name() + "' (" + dtypeName(in.type()) + " " +
                                               shapeToString(in.shape()) + ") but no feature has that name; features: " +
                                               specList(features));
    (*featureOf)[i] = static_cast<size_t>(found);
    const TensorSpec& f = features[static_cast<size_t>(found)];
    if (f.type() != in.type())
      return invalidArgument("feature '" + f.name() + "' is " + dtypeName(f.type()) + " but the model's input is " +
                             dtypeName(in.type()));
    const std::vector<int64_t>& declared = *inputs[i].declared;
    bool ok = f.shape().size() == declared.size();
    for (size_t k = 0; ok && k < declared.size(); ++k)
      if (declared[k] >= 0 && declared[k] != f.shape()[k]) ok = false;
    if (!ok)
      return invalidArgument("feature '" + f.name() + "' has shape " + shapeToString(f.shape()) +
                             " but the model's input has shape " + shapeToString(declared) + " (-1: any)");
    if (!inputs[i].dimNames) continue;
    const std::vector<std::string>& names = *inputs[i].dimNames;
    for (size_t k = 0; k < declared.size() && k < names.size(); ++k) {
      if (declared[k] >= 0 || names[k].empty()) continue;
      auto it = params.find(names[k]);
      if (it == params.end()) {
        params[names[k]] = {f.shape()[k], f.name()};
      } else if (it->second.first != f.shape()[k]) {
        return invalidArgument("dimension '" + names[k] + "' is " + std::to_string(it->second.first) + " in feature '" +
                               it->second.second + "' but " + std::to_string(f.shape()[k]) + " in feature '" +
                               f.name() + "'");
      }
    }
  }
  return Status::OK();
}

Status bindOutputs(const std::vector<TensorSpec>& outputs, const std::vector<TensorSpec>& advice,
                   std::vector<size_t>* outputOf) {
  std::vector<int> found(advice.size(), -1);
  size_t matched = 0;
  for (size_t a = 0; a < advice.size(); ++a)
    for (size_t o = 0; o < outputs.size(); ++o)
      if (outputs[o].name() == advice[a].name()) {
        found[a] = static_cast<int>(o);
        ++matched;
      }
  if (matched == 0 && advice.size() == outputs.size()) {
    for (size_t a = 0; a < advice.size(); ++a) found[a] = static_cast<int>(a);
  } else {
    for (size_t a = 0; a < advice.size(); ++a)
      if (found[a] < 0)
        return Status(StatusCode::kNotFound, "advice '" + advice[a].name() + "' matches no model output; outputs: " +
                                                 specList(outputs));
  }
  outputOf->assign(advice.size(), 0);
  for (size_t a = 0; a < advice.size(); ++a) {
    const TensorSpec& o = outputs[static_cast<size_t>(found[a])];
    (*outputOf)[a] = static_cast<size_t>(found[a]);
    if (o.type() != advice[a].type())
      return invalidArgument("advice '" + advice[a].name() + "' is " + dtypeName(advice[a].type()) +
                             " but model output '" + o.name() + "' is " + dtypeName(o.type()));
    // An output dimension of -1 (symbolic, e.g. ONNX Runtime before the run)
    // accepts the advice's value.
    bool ok = o.shape().size() == advice[a].shape().size(), symbolic = false;
    for (size_t k = 0; ok && k < o.shape().size(); ++k) {
      symbolic = symbolic || o.shape()[k] < 0;
      if (o.shape()[k] >= 0 && o.shape()[k] != advice[a].shape()[k]) ok = false;
    }
    if (!ok)
      return invalidArgument("advice '" + advice[a].name() + "' has shape " + shapeToString(advice[a].shape()) +
                             " but model output '" + o.name() + "' has shape " + shapeToString(o.shape()) +
                             (symbolic ? " (-1: any)" : ""));
  }
  return Status::OK();
}

}  // namespace mlbridge
