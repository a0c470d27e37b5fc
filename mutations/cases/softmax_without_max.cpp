#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "softmax-without-max",
                    .description = "softmax without subtracting the row maximum",
                    .kind = Kind::implementation,
                    .equivalent_because =
                        "exp(x - m) / sum exp(x - m) equals exp(x) / sum exp(x) exactly in real arithmetic; "
                        "with BERT-scale scores (|x| < 10) neither overflows and the two differ by a few ULP. "
                        "Scores above 88 (exp overflow in fp32) would kill it: a checkpoint with such scores "
                        "turns it into Inf/NaN, which the gate never passes",
                    .run = runtime_fault(runtime::Fault::softmax_without_max)});

}  // namespace lenscheck::mutation
