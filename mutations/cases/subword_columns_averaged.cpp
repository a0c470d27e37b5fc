#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "subword-columns-averaged",
                    .description = "a target word's weight is the mean of its subword columns, not the sum",
                    .kind = Kind::implementation,
                    .run = row_fault(RowFault::subword_columns_averaged)});

}  // namespace lenscheck::mutation
