#include "gate/candidate.h"

#include "common/parallel.h"
#include "runtime/encoder.h"

namespace lenscheck {

Candidate runtime_candidate() {
  Candidate c;
  c.replaceable_stages = true;
  c.run = [](const Checkpoint& ck, const std::vector<Encoding>& inputs, const runtime::Stages* stages,
             unsigned threads) {
    const runtime::Encoder encoder(ck.config, ck.weights, 1, stages ? *stages : runtime::shipped_stages());
    CandidateRun r{std::vector<Trace>(inputs.size()), "runtime fp32", {}};
    parallel_for(inputs.size(), threads, [&](size_t i) { r.traces[i] = encoder.forward(inputs[i]); });
    return r;
  };
  return c;
}

}  // namespace lenscheck
