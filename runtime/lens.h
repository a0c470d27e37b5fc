#pragma once
// The lenses of the instrument, per layer l, head h, query token i, key token j:
//   attention           w_ij = α_ij
//   value_norm          w_ij = α_ij · ‖v_j‖          (Kobayashi et al. 2020, ‖α·v‖)
//   transformed_norm    w_ij = α_ij · ‖f(x_j)‖,  f(x_j) = v_j · W_O[h], b_O excluded  (‖α·f(x)‖)
//   residual_layernorm  w_ij = ‖γ ⊙ (z_ij − mean z_ij) / sqrt(var y_i + ε)‖, z_ij = Σ_h α^h_ij f_h(x_j) + δ_ij x_i
//                       (Kobayashi et al. 2021, AttnResLn-N): per layer, its heads summed, not per head.
// The first three are one computation, kernels.h weight_by_key, over a per-key weight n_j (1, ‖v_j‖,
// ‖f(x_j)‖). Because x · 1.0 == x exactly in IEEE arithmetic, forcing every n_j to 1.0 reproduces
// the attention lens bit for bit by construction; the unit-norms mutation holds us to that.
#include <string>

namespace lenscheck {

enum class Lens { attention, value_norm, transformed_norm, residual_layernorm };

inline constexpr Lens kLenses[] = {Lens::attention, Lens::value_norm, Lens::transformed_norm,
                                   Lens::residual_layernorm};

const char* lens_name(Lens lens);
Lens lens_from_name(const std::string& name);  // throws std::invalid_argument listing the known lenses
// A lens of the whole layer ([T, T], its heads summed) rather than of each head ([H, T, T]).
bool lens_per_layer(Lens lens);
// The trace tensor holding the lens weights of `layer`: [H, T, T], or [T, T] where lens_per_layer.
std::string lens_tensor(Lens lens, int layer);

}  // namespace lenscheck
