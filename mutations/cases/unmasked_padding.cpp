#include "mutations/mutation.h"
#include "runtime/encoder.h"

namespace lenscheck::mutation {

namespace {

// A runtime that pads every sentence to a multiple of 8 tokens for its kernels and forgets the
// attention mask: real tokens attend to the [PAD] positions. The trace is cut back to the real tokens.
Trace padded_without_mask(const Context& ctx, const SentenceRun& run) {
  Encoding padded = run.encoding;
  const size_t T = padded.ids.size(), P = (T + 7) / 8 * 8 + 8;
  while (padded.ids.size() < P) {
    padded.ids.push_back(ctx.checkpoint.vocab.pad_id());
    padded.tokens.push_back("[PAD]");
    padded.word_ids.push_back(-1);
  }
  Trace full = runtime::Encoder(ctx.checkpoint.config, ctx.checkpoint.weights).forward(padded);
  Trace cut;
  cut.producer = full.producer;
  cut.precision = full.precision;
  cut.input_ids = run.encoding.ids;
  cut.tokens = run.encoding.tokens;
  cut.word_ids = run.encoding.word_ids;
  for (const TensorSpec& spec : trace_schema(ctx.checkpoint.config, int64_t(T))) {
    const Tensor& src = *full.find(spec.name);
    Tensor t(spec.shape);
    // Every token axis of the schema is cut from P to T; copy element by element through the index.
    for (size_t flat = 0; flat < t.numel(); ++flat) {
      size_t rest = flat, from = 0, stride = 1;
      std::vector<size_t> index(spec.shape.size());
      for (size_t d = spec.shape.size(); d-- > 0;) {
        index[d] = rest % size_t(spec.shape[d]);
        rest /= size_t(spec.shape[d]);
      }
      for (size_t d = spec.shape.size(); d-- > 0;) {
        from += index[d] * stride;
        stride *= size_t(src.shape[d]);
      }
      t.values[flat] = src.values[from];
    }
    cut.add(spec.name, std::move(t));
  }
  return cut;
}

}  // namespace

LENSCHECK_MUTATION({.name = "unmasked-padding",
                    .description = "sentences padded with [PAD] for the kernels, attention mask ignored",
                    .kind = Kind::implementation,
                    .run = [](const Context& ctx) {
                      return gate(ctx, [&](const SentenceRun& run) { return padded_without_mask(ctx, run); });
                    }});

}  // namespace lenscheck::mutation
