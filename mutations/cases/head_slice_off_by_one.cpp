#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "head-slice-off-by-one",
                    .description = "every head reads its q, k, v slice one feature late",
                    .kind = Kind::implementation,
                    .run = runtime_fault(runtime::Fault::head_slice_off_by_one)});

}  // namespace lenscheck::mutation
