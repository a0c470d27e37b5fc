// The forward: Oracle::forward, which runs libtorch's own fp32 or fp64 forward (Oracle::run, here) or a
// simulated scheme's (Oracle::run_simulated, simulated.cpp); to_trace; and Oracle::backend, set_threads.
#include "oracle/oracle.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "oracle/torch_oracle.h"

namespace lenscheck::oracle {

Tensor to_trace(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kFloat64).contiguous();
  Tensor out(c.sizes().vec());
  std::copy_n(c.data_ptr<double>(), out.numel(), out.values.begin());
  return out;
}

Trace Oracle::forward(const Encoding& enc, Record record) const {
  const std::string name = impl_->simulated ? arithmetic_name(*impl_->simulated) + " (simulated in fp64)"
                                            : oracle_name(impl_->dtype == torch::kFloat64 ? Precision::fp64 : Precision::fp32);
  return translating_torch_errors(name, "run the forward pass", [&] {
                                    if (!impl_->simulated) return run(enc, record);
                                    if (record != Record::everything)
                                      throw std::invalid_argument("a simulated arithmetic records every tensor");
                                    return run_simulated(enc, nullptr);
                                  });
}

Trace Oracle::run(const Encoding& enc, Record record) const {
  torch::NoGradGuard no_grad;
  const Impl& m = *impl_;
  const int64_t T = static_cast<int64_t>(enc.ids.size()), D = m.config.hidden_size,
                H = m.config.num_attention_heads, Dh = D / H;
  const bool everything = record == Record::everything, lenses = keeps_lenses(record);

  Trace trace;
  trace.precision = m.dtype == torch::kFloat64 ? "fp64" : "fp32";
  trace.producer = "oracle " + trace.precision;
  trace.input_ids = enc.ids;
  trace.tokens = enc.tokens;
  trace.word_ids = enc.word_ids;

  auto x = m.word_rows(enc.ids) + m.position.slice(0, 0, T) + m.token_type[0];
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
  if (everything) trace.add(kEmbeddingsOutput, to_trace(x));

  for (size_t l = 0; l < m.layers.size(); ++l) {
    auto name = [l](LayerTensor t) { return trace_name(int(l), t); };
    const TorchLayer& L = m.layers[l];
    auto per_head = [&](const torch::Tensor& t) { return t.view({T, H, Dh}).transpose(0, 1); };
    const auto v = lenses ? per_head(F::linear(x, L.wv, L.bv)) : torch::Tensor();  // [H, T, Dh]
    if (everything) {
      const auto q = per_head(F::linear(x, L.wq, L.bq));
      const auto k = per_head(F::linear(x, L.wk, L.bk));
      trace.add(name(LT::query), to_trace(q));
      trace.add(name(LT::key), to_trace(k));
      trace.add(name(LT::value), to_trace(v));
      const auto scores = torch::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(Dh));
      trace.add(name(LT::scores), to_trace(scores));
      trace.add(name(LT::context),
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
    const auto pre_norm = attended.squeeze(1) + x;
    if (everything) trace.add(name(LT::attention_pre_norm), to_trace(pre_norm));
    const auto attention = norm(pre_norm, L.ln1_g, L.ln1_b);
    if (lenses) {
      const auto alpha = probs.squeeze(0);  // [H, T, T]
      trace.add(name(LT::probs), to_trace(alpha));
      if (everything) trace.add(name(LT::attention_output), to_trace(attention));
      add_lenses(trace, int(l), record, alpha, v, L, x, pre_norm, m.config.layer_norm_eps);
    }

    const auto inter = m.activation(F::linear(attention, L.wi, L.bi));
    if (everything) trace.add(name(LT::intermediate), to_trace(inter));
    x = norm(F::linear(inter, L.wo2, L.bo2) + attention, L.ln2_g, L.ln2_b);
    if (everything || (record == Record::output && l + 1 == m.layers.size())) trace.add(name(LT::output), to_trace(x));
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

// at::set_num_threads bounds libtorch's own pool, not the one OpenBLAS's pthread build (libopenblas0-pthread, the
// libblas.so.3 the set-up selects) keeps for each dgemm: with sentences already run one per core, its threads
// compete with them and spin in sched_yield. Measured on this project's 2-core machine, verify of
// all-MiniLM-L6-v2's runtime took 6.50 s with OpenBLAS's pool and 4.24 s with one thread. How OpenBLAS blocks a
// product depends on its threads, so libtorch's fp32 benchmark rounds in another order with one (bert-mini's
// query: its error 2.82e-7 with the pool, 2.96e-7 without; the fp64 truth unchanged): the reports no longer
// depend on the machine's core count. The reference BLAS has no such call and no pool.
void Oracle::set_threads(int threads) {
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

}  // namespace lenscheck::oracle
