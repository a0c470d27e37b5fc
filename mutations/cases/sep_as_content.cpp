#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "sep-as-content",
                    .description = "[SEP] counted as the last content word in the sink share",
                    .kind = Kind::implementation,
                    .run = row_fault([](const WordLayout&, WordRow& row) {
                      row.content.back() += row.sep;
                      row.sep = 0;
                    })});

}  // namespace lenscheck::mutation
