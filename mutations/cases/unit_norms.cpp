#include <fmt/format.h>

#include "mutations/mutation.h"

namespace lenscheck::mutation {

// α · 1.0 == α in IEEE arithmetic, so every n_j = 1.0 must give the attention lens bit for bit.
LENSCHECK_MUTATION({.name = "unit-norms",
                    .description = "every key weight forced to 1.0 reproduces the attention lens bit for bit",
                    .kind = Kind::metric,
                    .run = [](const Context& ctx) {
                      const auto unit = lens_rows(ctx, [](const SentenceRun& run, int layer) {
                        return std::vector<float>(runtime_norms(run, layer).size(), 1.0f);
                      });
                      size_t differ = 0;
                      std::string first;
                      const size_t rows = for_each_row_pair(attention_rows(ctx), unit,
                          [&](const std::string& sentence, const WordRow& a, const WordRow& u) {
                            const auto share_a = a.sink_share(), share_u = u.sink_share();
                            bool same = same_bits(a.cls, u.cls) && same_bits(a.sep, u.sep) &&
                                        share_a.has_value() == share_u.has_value() &&
                                        (!share_a || same_bits(*share_a, *share_u));
                            for (size_t k = 0; k < a.content.size(); ++k) same = same && same_bits(a.content[k], u.content[k]);
                            if (!same && ++differ == 1) first = fmt::format(", first: {} head {} word {}", sentence, a.head.label(), a.word);
                          });
                      return Outcome{differ == 0, "bit-identical rows",
                                     fmt::format("{} rows checked (every word x head x layer of {} sentences), "
                                                 "{} differ in any bit{}", rows, ctx.runs.size(), differ, first)};
                    }});

}  // namespace lenscheck::mutation
