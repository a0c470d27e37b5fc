// Force-included before every translation unit under GCC with fmt 9: GCC 12 reports a false
// -Wstringop-overflow inside fmt's fill_t once it inlines format-spec parsing (fixed in fmt 10), and
// does so although fmt's headers are system headers. The pragma covers fmt's own lines only, so the
// warning still reaches lenscheck's code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include <fmt/format.h>
#pragma GCC diagnostic pop
