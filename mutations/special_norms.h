#pragma once
// Shared by the cases that scale the value norms of [CLS] and [SEP] (zero-*, inflate-cls-norm).
#include "mutations/mutation.h"

namespace lenscheck::mutation {

// The value_norm lens with ‖v‖ of [CLS] times `cls` and of [SEP] times `sep`, against the closed form
// from the unmutated lens: each row's special weights scaled, its content weights unchanged (to the
// bit), so its sink share becomes (cls·C + sep·S) / (cls·C + sep·S + content), computed in double.
// Every row must match that within its own rounding; a factor 0 must zero that column exactly. Rows
// whose predicted move is within that rounding cannot move (saturated: no content weight to move
// against; or no resolvable weight on the scaled token) and are counted apart, as are rows left
// without any weight (undefined, predicted so). The case proves nothing, and fails, if no row could move.
Outcome scale_special_norms(const Context& ctx, float cls, float sep);

}  // namespace lenscheck::mutation
