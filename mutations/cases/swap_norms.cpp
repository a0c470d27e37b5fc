#include <fmt/format.h>

#include <utility>

#include "mutations/mutation.h"
#include "runtime/kernels.h"
#include "runtime/lens.h"

namespace lenscheck::mutation {

// Exchanging ‖v‖ of two content tokens may change only those two key columns of the lens.
LENSCHECK_MUTATION({.name = "swap-norms",
                    .description = "‖v‖ of the first two content tokens exchanged: only their columns change",
                    .kind = Kind::metric,
                    .run = [](const Context& ctx) {
                      size_t checked = 0, changed = 0, stray = 0;
                      for (const SentenceRun& run : ctx.runs) {
                        const size_t T = run.encoding.ids.size();
                        if (T < 4) continue;
                        for (int l = 0; l < ctx.checkpoint.config.num_hidden_layers; ++l) {
                          const Tensor& probs = *run.runtime.find(lens_tensor(Lens::attention, l));
                          const size_t H = size_t(probs.shape[0]);
                          const std::vector<float> alpha(probs.values.begin(), probs.values.end());
                          std::vector<float> n = runtime_norms(run, l), swapped = n;
                          for (size_t h = 0; h < H; ++h) std::swap(swapped[h * T + 1], swapped[h * T + 2]);
                          std::vector<float> a(H * T * T), b(H * T * T);
                          runtime::weight_by_key(alpha.data(), n.data(), H, T, a.data());
                          runtime::weight_by_key(alpha.data(), swapped.data(), H, T, b.data());
                          for (size_t i = 0; i < a.size(); ++i) {
                            const size_t key = i % T;
                            ++checked;
                            if (a[i] == b[i]) continue;
                            if (key == 1 || key == 2) ++changed;
                            else ++stray;
                          }
                        }
                      }
                      return Outcome{stray == 0 && changed > 0, "only the swapped columns changed",
                                     fmt::format("{} lens weights checked, {} changed in the two swapped columns, "
                                                 "{} changed elsewhere", checked, changed, stray)};
                    }});

}  // namespace lenscheck::mutation
