#include "runtime/lens.h"

#include <stdexcept>

namespace lenscheck {

const char* lens_name(Lens lens) {
  switch (lens) {
    case Lens::attention: return "attention";
    case Lens::value_norm: return "value_norm";
    case Lens::transformed_norm: return "transformed_norm";
  }
  return "?";
}

Lens lens_from_name(const std::string& name) {
  for (Lens l : kLenses)
    if (name == lens_name(l)) return l;
  throw std::invalid_argument("unknown lens \"" + name + "\" (known: attention, value_norm, transformed_norm)");
}

std::string lens_tensor(Lens lens, int layer) {
  const std::string p = "layer." + std::to_string(layer) + ".";
  return lens == Lens::attention ? p + "attention.probs" : p + "lens." + lens_name(lens);
}

}  // namespace lenscheck
