// The lenses: libtorch's forward adds them with add_lenses; the residual lens, ResidualLensBlocks, is
// both forwards' (the simulated one, SimulatedPass::lenses, computes the rest in its scheme).
#include "oracle/torch_oracle.h"

#include <algorithm>

namespace lenscheck::oracle {

ResidualLensBlocks::ResidualLensBlocks(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& gain,
                                       double eps)
    : x_(x), gain_(gain), scale_(torch::rsqrt(y.var(-1, false) + eps)) {}

void ResidualLensBlocks::add(const torch::Tensor& terms, int64_t first_row) {
  const int64_t rows = terms.size(0);
  const auto at = torch::arange(rows, torch::kInt64), own = at + first_row;
  const auto self = terms.index({at, own});  // [rows, D]: Σ_h α_hii f_h(x_i)
  const auto z_self = self + x_.index({own});
  auto z = terms.clone();
  z.index_put_({at, own}, z_self);
  auto norm = [](const torch::Tensor& t) { return torch::linalg::vector_norm(t, 2, {-1}, false, {}); };
  auto centred = [&](const torch::Tensor& t) { return norm(gain_ * (t - t.mean(-1, true))); };
  residual_norm_.push_back(norm(z));
  layernorm_norm_.push_back(centred(z) * scale_.slice(0, first_row, first_row + rows).unsqueeze(1));
  const auto rest = terms.sum(1) - self;  // Σ_{j≠i}
  const auto r = norm(rest), rc = centred(rest);
  // a / (a + b), 0 where both are 0 (nothing carried, so nothing mixed in).
  auto share = [](const torch::Tensor& a, const torch::Tensor& b) {
    return torch::where(a + b > 0, a / (a + b), torch::zeros_like(a));
  };
  ratio_attention_.push_back(share(r, norm(self)));
  ratio_residual_.push_back(share(r, norm(z_self)));
  ratio_layernorm_.push_back(share(rc, centred(z_self)));  // the scale is common to both and cancels
}

std::vector<std::pair<LayerTensor, torch::Tensor>> ResidualLensBlocks::results() const {
  return {{LayerTensor::lens_residual_norm, torch::cat(residual_norm_)},
          {LayerTensor::lens_residual_layernorm_norm, torch::cat(layernorm_norm_)},
          {LayerTensor::mixing_ratio_attention, torch::cat(ratio_attention_)},
          {LayerTensor::mixing_ratio_residual, torch::cat(ratio_residual_)},
          {LayerTensor::mixing_ratio_residual_layernorm, torch::cat(ratio_layernorm_)}};
}

// Layer `layer`'s lenses from its probabilities alpha [H, T, T], values v [H, T, Dh], input x and
// pre-LayerNorm state: Kobayashi et al. 2020's, with f(x) = v W_O[h] (the head's slice of the output
// dense weight, no b_O), and where `record` keeps them 2021's residual ones.
void add_lenses(Trace& trace, int layer, Record record, const torch::Tensor& alpha, const torch::Tensor& v,
                const TorchLayer& L, const torch::Tensor& x, const torch::Tensor& pre_norm, double eps) {
  auto name = [layer](LayerTensor t) { return trace_name(layer, t); };
  const bool everything = record == Record::everything;
  const int64_t H = v.size(0), T = v.size(1), Dh = v.size(2), D = H * Dh;
  const auto value_norm = torch::linalg::vector_norm(v, 2, {-1}, false, {});  // [H, T]
  trace.add(name(LT::value_norm), to_trace(value_norm));
  const auto wo_heads = L.wo.view({D, H, Dh}).permute({1, 2, 0});  // [H, Dh, D]
  const auto fx = torch::bmm(v, wo_heads);                        // [H, T, D]
  const auto transformed_norm = torch::linalg::vector_norm(fx, 2, {-1}, false, {});  // [H, T]
  trace.add(name(LT::transformed_norm), to_trace(transformed_norm));
  trace.add(name(LT::lens_value_norm), to_trace(alpha * value_norm.unsqueeze(1)));
  trace.add(name(LT::lens_transformed_norm), to_trace(alpha * transformed_norm.unsqueeze(1)));
  if (!keeps_residual_lens(record)) return;
  // ||sum_h alpha_h[i, j] f_h(x_j)|| for a block of query rows at a time: the whole
  // [T, T, D] would take 512 MiB at T = 512 in fp64; blocks keep it to about 32 MiB.
  const int64_t block = std::max<int64_t>(1, (int64_t{1} << 22) / (T * D));
  std::vector<torch::Tensor> summed;
  ResidualLensBlocks residual(x, pre_norm, L.ln1_g, eps);
  for (int64_t i = 0; i < T; i += block) {
    const auto terms = torch::einsum("hij,hjd->ijd", {alpha.slice(1, i, std::min(T, i + block)), fx});
    if (everything) summed.push_back(torch::linalg::vector_norm(terms, 2, {-1}, false, {}));
    residual.add(terms, i);
  }
  if (everything) trace.add(name(LT::lens_summed_transformed_norm), to_trace(torch::cat(summed)));
  // Record::instrument_residual keeps AttnResLn-N and the mixing ratios; AttnRes-N is the whole trace's.
  for (const auto& [tensor, values] : residual.results())
    if (everything || tensor != LT::lens_residual_norm) trace.add(name(tensor), to_trace(values));
}

}  // namespace lenscheck::oracle
