#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "sep-as-content",
                    .description = "[SEP] counted as the last content word in the sink share",
                    .kind = Kind::implementation,
                    .run = row_fault(RowFault::sep_as_content)});

}  // namespace lenscheck::mutation
