// The local recomputation (Oracle::recompute_locally): the local verdict's references, each op of the
// simulated forward run from a candidate's own inputs (through those it lacks), and its probes.
#include "oracle/oracle.h"

#include "oracle/torch_oracle.h"

namespace lenscheck::oracle {
namespace {

bool lacks_probabilities(const Trace& candidate, int layers) {
  for (int l = 0; l < layers; ++l)
    if (!candidate.find(trace_name(l, LayerTensor::probs))) return true;
  return false;
}

}  // namespace

Oracle::LocalReferences Oracle::recompute_locally(const Trace& candidate, int probes) const {
  if (!impl_->simulated) throw std::logic_error("recompute_locally runs on an oracle made by recomputing_in");
  Encoding enc;
  enc.ids = candidate.input_ids;
  enc.tokens = candidate.tokens;
  enc.word_ids = candidate.word_ids;
  return translating_torch_errors(arithmetic_name(*impl_->simulated) + " (simulated in fp64)",
                                  "recompute the candidate's ops", [&] {
    LocalReferences r;
    const Local exact{&candidate, false, 0}, fp32{&candidate, true, 0};
    r.exact = run_simulated(enc, &exact, &r.spans);
    r.fp32 = run_simulated(enc, &fp32);
    if (impl_->scheme.fused_ops) {
      const Local fused{.feed = &candidate, .fp32_ops = false, .probe = 0, .as_fused_graph = true};
      r.fused = run_simulated(enc, &fused);
    }
    if (impl_->requantizes_products()) {
      const Local other_way{.feed = &candidate, .fp32_ops = false, .probe = 0, .requantized_other_way = true};
      r.requantized_other_way = run_simulated(enc, &other_way);
    }
    if (impl_->scheme.ops.digits < kBinary32.digits && !impl_->scheme.fp32_between_casts && !impl_->scheme.fused_ops &&
        lacks_probabilities(candidate, impl_->config.num_hidden_layers)) {
      const Local one_kernel{.feed = &candidate, .fp32_ops = false, .probe = 0, .attention_in_one_kernel = true};
      r.attention_in_one_kernel = run_simulated(enc, &one_kernel);
    }
    SumMagnitudes magnitudes;
    for (int seed = 1; seed <= probes; ++seed) {
      const Local probe{&candidate, true, uint64_t(seed), &magnitudes};
      r.probes.push_back(run_simulated(enc, &probe));
    }
    return r;
  });
}

}  // namespace lenscheck::oracle
