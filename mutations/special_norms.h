#pragma once
// Shared by the cases that scale the value norms of [CLS] and [SEP] (zero-*, inflate-cls-norm).
#include "mutations/mutation.h"

namespace lenscheck::mutation {

// The value_norm lens with ‖v‖ of [CLS] times `cls` and of [SEP] times `sep`, against the unmutated
// value_norm lens. A factor 0 must make that column exactly 0 in every row (and, for both, every
// sink share exactly 0); any other factor must move the sink share of every row that attends to
// the token, in the factor's direction.
Outcome scale_special_norms(const Context& ctx, float cls, float sep);

}  // namespace lenscheck::mutation
