#include "oracle/oracle.h"

#include <torch/torch.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace lenscheck::oracle {

namespace F = torch::nn::functional;

namespace {

torch::Tensor to_torch(const Param& p, torch::Dtype dtype) {
  auto t = torch::from_blob(const_cast<float*>(p.values.data()), p.shape, torch::kFloat32);
  return t.to(dtype, /*non_blocking=*/false, /*copy=*/true);  // the oracle owns its weights, fp32 too
}

Tensor to_trace(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kFloat64).contiguous();
  Tensor out(c.sizes().vec());
  std::copy_n(c.data_ptr<double>(), out.numel(), out.values.begin());
  return out;
}

struct TorchLayer {
  torch::Tensor wq, bq, wk, bk, wv, bv, wo, bo, ln1_g, ln1_b, wi, bi, wo2, bo2, ln2_g, ln2_b;
};

}  // namespace

struct Oracle::Impl {
  BertConfig config;
  torch::Dtype dtype;
  uint64_t rounding_probe = 0;  // 0: none
  torch::Tensor word, position, token_type, ln_g, ln_b;
  std::vector<TorchLayer> layers;

  torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& g,
                           const torch::Tensor& b) const {
    return F::layer_norm(x, F::LayerNormFuncOptions({config.hidden_size})
                                .weight(g).bias(b).eps(config.layer_norm_eps));
  }

  torch::Tensor activation(const torch::Tensor& x) const {
    switch (config.activation()) {
      case Activation::gelu_erf: return F::gelu(x, F::GELUFuncOptions().approximate("none"));
      case Activation::gelu_tanh: return F::gelu(x, F::GELUFuncOptions().approximate("tanh"));
      case Activation::relu: return F::relu(x);
    }
    throw std::logic_error("activation");
  }
};

namespace {

// libtorch reports a failed allocation as c10::Error or std::bad_alloc; the harness reads neither.
template <class F>
auto translating_torch_errors(Precision precision, const char* doing, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));  // c10::Error appends a backtrace
    throw OracleError(fmt::format("the {} oracle could not {}: {}", precision == Precision::fp64 ? "fp64" : "fp32",
                                  doing, what));
  }
}

}  // namespace

Oracle::Oracle(const BertConfig& config, const BertWeights& w, Precision precision, uint64_t rounding_probe)
    : impl_(std::make_unique<Impl>()) {
  impl_->rounding_probe = rounding_probe;
  translating_torch_errors(precision, "load the weights", [&] { load(config, w, precision); });
}

void Oracle::load(const BertConfig& config, const BertWeights& w, Precision precision) {
  Impl& m = *impl_;
  m.config = config;
  m.dtype = precision == Precision::fp64 ? torch::kFloat64 : torch::kFloat32;
  m.word = to_torch(w.word_embeddings, m.dtype);
  m.position = to_torch(w.position_embeddings, m.dtype);
  m.token_type = to_torch(w.token_type_embeddings, m.dtype);
  m.ln_g = to_torch(w.embeddings_ln_g, m.dtype);
  m.ln_b = to_torch(w.embeddings_ln_b, m.dtype);
  for (const LayerWeights& L : w.layers) {
    auto t = [&](const Param& p) { return to_torch(p, m.dtype); };
    m.layers.push_back({t(L.query_w), t(L.query_b), t(L.key_w), t(L.key_b), t(L.value_w),
                        t(L.value_b), t(L.attention_out_w), t(L.attention_out_b),
                        t(L.attention_ln_g), t(L.attention_ln_b), t(L.intermediate_w),
                        t(L.intermediate_b), t(L.output_w), t(L.output_b), t(L.output_ln_g),
                        t(L.output_ln_b)});
  }
}

Oracle::~Oracle() = default;
Oracle::Oracle(Oracle&&) noexcept = default;

Trace Oracle::forward(const Encoding& enc, Record record) const {
  return translating_torch_errors(impl_->dtype == torch::kFloat64 ? Precision::fp64 : Precision::fp32,
                                  "run the forward pass", [&] { return run(enc, record); });
}

Trace Oracle::run(const Encoding& enc, Record record) const {
  torch::NoGradGuard no_grad;
  const Impl& m = *impl_;
  const int64_t T = static_cast<int64_t>(enc.ids.size()), D = m.config.hidden_size,
                H = m.config.num_attention_heads, Dh = D / H;
  const bool everything = record == Record::everything, lenses = record != Record::output;

  Trace trace;
  trace.precision = m.dtype == torch::kFloat64 ? "fp64" : "fp32";
  trace.producer = "oracle " + trace.precision;
  trace.input_ids = enc.ids;
  trace.tokens = enc.tokens;
  trace.word_ids = enc.word_ids;

  const auto ids = torch::tensor(enc.ids, torch::kInt64);
  auto x = F::embedding(ids, m.word) + m.position.slice(0, 0, T) + m.token_type[0];
  // The rounding probe moves every LayerNorm output one float step, up or down at random: rounding-sized
  // noise in every row, which breaks the exact ties a collapsed model's identical rows have in fp64
  // and in libtorch alike, and which a runtime that rounds elsewhere does not keep.
  std::optional<at::Generator> probe;
  if (m.rounding_probe) probe = at::make_generator<at::CPUGeneratorImpl>(m.rounding_probe);
  auto norm = [&](const torch::Tensor& v, const torch::Tensor& g, const torch::Tensor& b) {
    const torch::Tensor y = m.layer_norm(v, g, b);
    if (!probe) return y;
    const auto up = torch::randint(0, 2, y.sizes(), *probe, torch::TensorOptions().dtype(torch::kBool));
    const double inf = std::numeric_limits<double>::infinity();
    return torch::nextafter(y, torch::where(up, torch::full_like(y, inf), torch::full_like(y, -inf)));
  };
  x = norm(x, m.ln_g, m.ln_b);
  if (everything) trace.add("embeddings.output", to_trace(x));

  for (size_t l = 0; l < m.layers.size(); ++l) {
    const TorchLayer& L = m.layers[l];
    const std::string p = "layer." + std::to_string(l) + ".";
    auto per_head = [&](const torch::Tensor& t) { return t.view({T, H, Dh}).transpose(0, 1); };
    const auto v = lenses ? per_head(F::linear(x, L.wv, L.bv)) : torch::Tensor();  // [H, T, Dh]
    if (everything) {
      const auto q = per_head(F::linear(x, L.wq, L.bq));
      const auto k = per_head(F::linear(x, L.wk, L.bk));
      trace.add(p + "attention.query", to_trace(q));
      trace.add(p + "attention.key", to_trace(k));
      trace.add(p + "attention.value", to_trace(v));
      const auto scores = torch::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(Dh));
      trace.add(p + "attention.scores", to_trace(scores));
      trace.add(p + "attention.context",
                to_trace(torch::matmul(torch::softmax(scores, -1), v).transpose(0, 1).reshape({T, D})));
    }

    // The attention block itself, probabilities and output projection, is PyTorch's own
    // multi_head_attention_forward: the trace's probs and output come from it, independently of
    // the explicit scores/context above, so the runtime is held to both.
    const auto seq = x.unsqueeze(1);  // [T, batch 1, D]
    auto [attended, probs] = F::multi_head_attention_forward(
        seq, seq, seq,
        F::MultiheadAttentionForwardFuncOptions(D, H, torch::Tensor(), torch::cat({L.bq, L.bk, L.bv}),
                                                torch::Tensor(), torch::Tensor(), false, 0.0, L.wo,
                                                L.bo)
            .training(false)
            .need_weights(lenses)
            .average_attn_weights(false)
            .use_separate_proj_weight(true)
            .q_proj_weight(L.wq)
            .k_proj_weight(L.wk)
            .v_proj_weight(L.wv));
    const auto attention = norm(attended.squeeze(1) + x, L.ln1_g, L.ln1_b);
    if (lenses) {
      const auto alpha = probs.squeeze(0);  // [H, T, T]
      trace.add(p + "attention.probs", to_trace(alpha));
      if (everything) trace.add(p + "attention.output", to_trace(attention));

      // Kobayashi et al. 2020: f(x) = v W_O[h], the head's slice of the output dense weight, no b_O.
      const auto value_norm = torch::linalg::vector_norm(v, 2, {-1}, false, {});  // [H, T]
      trace.add(p + "value_norm", to_trace(value_norm));
      const auto wo_heads = L.wo.view({D, H, Dh}).permute({1, 2, 0});  // [H, Dh, D]
      const auto fx = torch::bmm(v, wo_heads);                        // [H, T, D]
      const auto transformed_norm = torch::linalg::vector_norm(fx, 2, {-1}, false, {});  // [H, T]
      trace.add(p + "transformed_norm", to_trace(transformed_norm));
      trace.add(p + "lens.value_norm", to_trace(alpha * value_norm.unsqueeze(1)));
      trace.add(p + "lens.transformed_norm", to_trace(alpha * transformed_norm.unsqueeze(1)));
      if (everything) {
        // ||sum_h alpha_h[i, j] f_h(x_j)|| for a block of query rows at a time: the whole
        // [T, T, D] would take 512 MiB at T = 512 in fp64; blocks keep it to about 32 MiB.
        const int64_t block = std::max<int64_t>(1, (int64_t{1} << 22) / (T * D));
        std::vector<torch::Tensor> summed;
        for (int64_t i = 0; i < T; i += block)
          summed.push_back(torch::linalg::vector_norm(
              torch::einsum("hij,hjd->ijd", {alpha.slice(1, i, std::min(T, i + block)), fx}), 2, {-1},
              false, {}));
        trace.add(p + "lens.summed_transformed_norm", to_trace(torch::cat(summed)));
      }
    }

    const auto inter = m.activation(F::linear(attention, L.wi, L.bi));
    if (everything) trace.add(p + "intermediate", to_trace(inter));
    x = norm(F::linear(inter, L.wo2, L.bo2) + attention, L.ln2_g, L.ln2_b);
    if (everything || (record == Record::output && l + 1 == m.layers.size())) trace.add(p + "output", to_trace(x));
  }
  return trace;
}

std::string Oracle::backend() {
  // at::show_config() lists the BLAS libtorch was built against; Debian's build dispatches to the
  // libblas.so.3 alternative, which the set-up points at OpenBLAS.
  std::string blas = "unknown BLAS";
  if (std::FILE* f = std::fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, f)) {
      std::string s(line);
      if (s.find("libblas.so") != std::string::npos || s.find("libopenblas") != std::string::npos) {
        blas = s.find("openblas") != std::string::npos ? "OpenBLAS" : "reference BLAS";
        if (blas == "OpenBLAS") break;
      }
    }
    std::fclose(f);
  }
  return fmt::format("libtorch {}.{}.{} on {}, {} thread(s)", TORCH_VERSION_MAJOR,
                     TORCH_VERSION_MINOR, TORCH_VERSION_PATCH, blas, at::get_num_threads());
}

void Oracle::set_threads(int threads) { at::set_num_threads(threads); }

}  // namespace lenscheck::oracle
