#pragma once
// The three lenses of the instrument, per layer l, head h, query token i, key token j:
//   attention         w_ij = α_ij
//   value_norm        w_ij = α_ij · ‖v_j‖          (Kobayashi et al. 2020, ‖α·v‖)
//   transformed_norm  w_ij = α_ij · ‖f(x_j)‖,  f(x_j) = v_j · W_O[h], b_O excluded  (‖α·f(x)‖)
// All three are one computation, kernels.h weight_by_key, over a per-key weight n_j (1, ‖v_j‖,
// ‖f(x_j)‖). Because x · 1.0 == x exactly in IEEE arithmetic, forcing every n_j to 1.0 reproduces
// the attention lens bit for bit by construction; the unit-norms mutation holds us to that.
#include <string>

namespace lenscheck {

enum class Lens { attention, value_norm, transformed_norm };

inline constexpr Lens kLenses[] = {Lens::attention, Lens::value_norm, Lens::transformed_norm};

const char* lens_name(Lens lens);
Lens lens_from_name(const std::string& name);  // throws std::invalid_argument
// The trace tensor [H, T, T] holding the lens weights of `layer`.
std::string lens_tensor(Lens lens, int layer);

}  // namespace lenscheck
