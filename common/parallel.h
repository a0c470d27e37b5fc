#pragma once
// Sentences are independent: they run on a small pool, each writing only its own result slot, so
// every result is bit-identical whatever the thread count.
#include <cstddef>
#include <functional>

namespace lenscheck {

// body(i) for every i in [0, n), on up to `threads` threads (0: one per core). The first exception
// thrown by any body is rethrown here, after every thread has stopped.
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& body);

// A budget of `threads` cores (0: one per core) for `n` independent items: as many items in
// parallel as the budget and n allow, and the cores left over shared inside each item (the
// runtime's threads within one forward), so that items × inside never exceeds the budget.
struct CoreSplit {
  unsigned items = 1, inside = 1;
};
CoreSplit split_cores(size_t n, unsigned threads);

}  // namespace lenscheck
