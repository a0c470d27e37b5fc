#pragma once
// The runtime's mutation point: faults `lenscheck mutate` injects to prove the gate catches them.
// Each is one branch at its site, outside the hot loops; Fault::none is the shipped path.
namespace lenscheck::runtime {

enum class Fault {
  none,
  drop_score_scale,              // scores not divided by sqrt(d_h)
  softmax_over_queries,          // softmax over the query axis instead of the key axis
  head_slice_off_by_one,         // every head reads its q, k, v slice one feature late
  key_as_value,                  // K used where V belongs
  transposed_output_slice,       // f(x) through W_O's head slice transposed
  value_norm_without_bias,       // ‖v‖ of x·W_V, b_V dropped
  transformed_norm_with_bias,    // f(x) = v·W_O[h] + b_O
  squared_value_norm,            // ‖v‖² instead of ‖v‖
  value_norm_over_all_heads,     // ‖v‖ over the token's whole hidden vector, not the head's slice
  layer_norm_eps_1e5,            // LayerNorm eps 1e-5 instead of the config's
  layer_norm_without_gamma,      // LayerNorm without its scale
  gelu_tanh_approximation,       // tanh GELU where the config says erf
  attention_residual_skipped,    // layer 1's attention block without its residual
  position_ids_shifted,          // position ids start at 1
  token_type_dropped,            // no token type embedding
  half_precision_ffn_output,     // the FFN output matmul accumulates in fp16
  softmax_without_max,           // softmax without subtracting the row maximum
  last_layer_probs_scaled,       // the last layer's head 0 probabilities times (1 + delta): a graded fault
};

// A fault and, for a graded one, its size.
struct Injected {
  Fault fault = Fault::none;
  double delta = 0;
};

}  // namespace lenscheck::runtime
