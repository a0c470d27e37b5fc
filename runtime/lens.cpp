#include "runtime/lens.h"

#include <stdexcept>

#include "model/trace.h"

namespace lenscheck {

const char* lens_name(Lens lens) {
  switch (lens) {
    case Lens::attention: return "attention";
    case Lens::value_norm: return "value_norm";
    case Lens::transformed_norm: return "transformed_norm";
    case Lens::residual_layernorm: return "residual_layernorm";
  }
  return "?";
}

Lens lens_from_name(const std::string& name) {
  std::string known;
  for (Lens l : kLenses) {
    if (name == lens_name(l)) return l;
    known += (known.empty() ? "" : ", ") + std::string(lens_name(l));
  }
  throw std::invalid_argument("unknown lens \"" + name + "\" (known: " + known + ")");
}

bool lens_per_layer(Lens lens) { return lens == Lens::residual_layernorm; }

std::string lens_tensor(Lens lens, int layer) {
  switch (lens) {
    case Lens::attention: return trace_name(layer, LayerTensor::probs);
    case Lens::value_norm: return trace_name(layer, LayerTensor::lens_value_norm);
    case Lens::transformed_norm: return trace_name(layer, LayerTensor::lens_transformed_norm);
    case Lens::residual_layernorm: return trace_name(layer, LayerTensor::lens_residual_layernorm_norm);
  }
  throw std::invalid_argument("unknown lens");
}

}  // namespace lenscheck
