// The local recomputation (Oracle::recompute_locally): the local verdict's references, each op of the
// simulated forward run from a candidate's own inputs, and its probes.
#include "oracle/oracle.h"

#include <fmt/format.h>

#include "model/seeded_rng.h"
#include "oracle/torch_oracle.h"

namespace lenscheck::oracle {

Oracle::LocalReferences Oracle::recompute_locally(const Trace& candidate, int probes) const {
  if (!impl_->simulated) throw std::logic_error("recompute_locally runs on an oracle made by recomputing_in");
  Encoding enc;
  enc.ids = candidate.input_ids;
  enc.tokens = candidate.tokens;
  enc.word_ids = candidate.word_ids;
  return translating_torch_errors(arithmetic_name(*impl_->simulated) + " (simulated in fp64)",
                                  "recompute the candidate's ops", [&] {
    LocalReferences r;
    Trace unstored;
    const Local exact{&candidate, false, nullptr}, fp32{&candidate, true, &unstored};
    r.exact = run_simulated(enc, &exact);
    r.fp32 = run_simulated(enc, &fp32);
    // Each op's last fp32 operation moved one fp32 step, up or down as the seed draws, then rounded as
    // the op and the store round it: no op reads a probe-stepped value, so the probes need no forward
    // of their own.
    const FloatFormat stored = impl_->scheme.stored, ops = impl_->scheme.ops;
    for (int seed = 1; seed <= probes; ++seed) {
      SeededRng rng{uint64_t(seed)};
      Trace& probe = r.probes.emplace_back(r.fp32);
      probe.producer += fmt::format(", results moved one fp32 step (seed {})", seed);
      for (auto& [name, tensor] : probe.tensors) {
        const Tensor& x = *unstored.find(name);
        for (size_t i = 0; i < x.values.size(); ++i)
          tensor.values[i] =
              round_to(stored, round_to(ops, step_in(kBinary32, round_to(kBinary32, x.values[i]), rng.next() & 1)));
      }
    }
    return r;
  });
}

}  // namespace lenscheck::oracle
