#include "mutations/mutation.h"

namespace lenscheck::mutation {

LENSCHECK_MUTATION({.name = "subword-columns-averaged",
                    .description = "a target word's weight is the mean of its subword columns, not the sum",
                    .kind = Kind::implementation,
                    .run = row_fault([](const WordLayout& layout, WordRow& row) {
                      for (size_t target = 0; target < layout.words.size(); ++target)
                        row.content[target] /= static_cast<double>(layout.words[target].size());
                    })});

}  // namespace lenscheck::mutation
