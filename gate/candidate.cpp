#include "gate/candidate.h"

#include "common/parallel.h"
#include "runtime/encoder.h"

namespace lenscheck {

Candidate runtime_candidate() {
  Candidate c;
  c.has_fault_seam = true;
  c.run = [](const Checkpoint& ck, const std::vector<Encoding>& inputs, runtime::Injected fault, unsigned threads) {
    const runtime::Encoder encoder(ck.config, ck.weights, fault);
    CandidateRun r{std::vector<Trace>(inputs.size()), "runtime fp32", {}};
    parallel_for(inputs.size(), threads, [&](size_t i) { r.traces[i] = encoder.forward(inputs[i]); });
    return r;
  };
  return c;
}

}  // namespace lenscheck
