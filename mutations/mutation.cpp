#include "mutations/mutation.h"

#include <fmt/format.h>

#include <cstring>

#include "audit/audit.h"
#include "gate/compare.h"
#include "runtime/encoder.h"
#include "runtime/kernels.h"
#include "runtime/lens.h"

namespace lenscheck::mutation {

std::vector<Case>& catalogue() {
  static std::vector<Case> cases;
  return cases;
}

const char* verdict_name(Equivalence::Verdict verdict) {
  switch (verdict) {
    case Equivalence::Verdict::ordinary: return "ordinary";
    case Equivalence::Verdict::equivalent: return "equivalent";
    case Equivalence::Verdict::borderline: return "borderline";
  }
  return "?";
}

EquivalenceCondition always_equivalent(std::string because) {
  return [because](const Context&) { return Equivalence{Equivalence::Verdict::equivalent, because}; };
}

EquivalenceCondition equivalent_where(std::string what, std::function<bool(const Context&)> holds) {
  return [what, holds](const Context& ctx) {
    const bool h = holds(ctx);
    return Equivalence{h ? Equivalence::Verdict::equivalent : Equivalence::Verdict::ordinary,
                       fmt::format("{}: {}", what, h ? "yes, so it must survive" : "no, so it must be killed")};
  };
}

Outcome gate(const Context& ctx, const std::function<Trace(const SentenceRun&)>& mutated_runtime) {
  double closest = 0;
  std::string closest_at;
  for (const SentenceRun& run : ctx.runs) {
    const TraceComparison c = ctx.judge.judge(mutated_runtime(run), run.references);
    if (const TensorComparison* first = c.first_divergence())
      return {true, first->name,
              !first->problem.empty()
                  ? fmt::format("sentence {}: {}: {}", run.sentence.id, first->name, first->problem)
                  : fmt::format("sentence {}: {} first, {:.3g}x libtorch's fp32 error (k {:g}), max abs {:.3g} at {}{}",
                                run.sentence.id, first->name, first->derived->ratio, first->tolerance.k,
                                first->max_abs, first->name, first->worst_label)};
    if (!c.problem.empty()) return {true, "(whole trace)", c.problem};
    for (const TensorComparison& t : c.tensors)
      if (t.bound_used > closest) {
        closest = t.bound_used;
        closest_at = fmt::format("{} {}{}", run.sentence.id, t.name, t.worst_label);
      }
  }
  return {false, "",
          fmt::format("every tensor of {} sentences within its bound; closest: {:.1f} % of it at {}",
                      ctx.runs.size(), 100 * closest, closest_at)};
}

std::function<Outcome(const Context&)> runtime_fault(std::function<void(Stages&)> replace) {
  return [replace](const Context& ctx) {
    Stages stages = runtime::shipped_stages();
    replace(stages);
    const runtime::Encoder mutant(ctx.runtime, std::move(stages));
    return gate(ctx, [&](const SentenceRun& run) { return mutant.forward(run.encoding); });
  };
}

std::function<Outcome(const Context&)> weights_fault(std::function<void(BertWeights&)> edit) {
  return [edit](const Context& ctx) {
    BertWeights weights = ctx.checkpoint.weights;
    edit(weights);
    const runtime::Encoder mutant(ctx.checkpoint.config, weights);
    return gate(ctx, [&](const SentenceRun& run) { return mutant.forward(run.encoding); });
  };
}

std::function<Outcome(const Context&)> row_fault(RowEdit edit) {
  return [edit](const Context& ctx) {
    if (!ctx.plan.recorded) return Outcome{false, "", "the plan records no numbers to check the rows against"};
    const AuditResult r = run_audit(ctx.plan, ctx.plan_checkpoint, {.row_edit = edit});
    for (const RecordedCheck& c : r.recorded)
      if (!c.problem.empty())
        return Outcome{true, fmt::format("recorded {} {} ({})", c.number.sentence, c.number.word, lens_name(c.number.lens)),
                       fmt::format("{}: {}", c.number.sentence, c.problem)};
    return Outcome{false, "", fmt::format("all {} recorded numbers re-derived within tolerance", r.recorded.size())};
  };
}

std::vector<float> runtime_norms(const SentenceRun& run, int layer) {
  const Tensor& n = *run.runtime.find(fmt::format("layer.{}.value_norm", layer));
  return {n.values.begin(), n.values.end()};  // exact: the runtime computed them in float
}

namespace {

// Rows of every head and word for a lens tensor per layer that `lens_of` provides.
std::vector<LensRows> rows_by(const Context& ctx, const std::function<Tensor(const SentenceRun&, int)>& lens_of) {
  const BertConfig& c = ctx.checkpoint.config;
  std::vector<LensRows> out;
  for (const SentenceRun& run : ctx.runs) {
    const WordLayout layout = WordLayout::of(run.runtime);
    LensRows rows{run.sentence.id, {}};
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      const Tensor lens = lens_of(run, l);
      for (int h = 0; h < c.num_attention_heads; ++h)
        for (int w = 0; w < int(layout.words.size()); ++w) rows.rows.push_back(word_row(layout, lens, {l, h}, w));
    }
    out.push_back(std::move(rows));
  }
  return out;
}

}  // namespace

std::vector<LensRows> lens_rows(const Context& ctx, const KeyWeights& key_weights) {
  return rows_by(ctx, [&](const SentenceRun& run, int l) {
    const Tensor& probs = *run.runtime.find(lens_tensor(Lens::attention, l));
    const size_t H = size_t(probs.shape[0]), T = size_t(probs.shape[1]);
    const std::vector<float> alpha(probs.values.begin(), probs.values.end());  // exact: computed in float
    const std::vector<float> n = key_weights(run, l);
    std::vector<float> weighted(H * T * T);
    runtime::weight_by_key(alpha.data(), n.data(), H, T, weighted.data());
    Tensor lens(probs.shape);
    std::copy(weighted.begin(), weighted.end(), lens.values.begin());
    return lens;
  });
}

std::vector<LensRows> attention_rows(const Context& ctx) {
  return rows_by(ctx, [](const SentenceRun& run, int l) { return *run.runtime.find(lens_tensor(Lens::attention, l)); });
}

size_t for_each_row_pair(const std::vector<LensRows>& a, const std::vector<LensRows>& b,
                         const std::function<void(const std::string&, const WordRow&, const WordRow&)>& visit) {
  size_t n = 0;
  for (size_t s = 0; s < a.size(); ++s)
    for (size_t i = 0; i < a[s].rows.size(); ++i, ++n) visit(a[s].sentence, a[s].rows[i], b[s].rows[i]);
  return n;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace lenscheck::mutation
