#pragma once
// Sentences are independent: they run on a small pool, each writing only its own result slot, so
// every result is bit-identical whatever the thread count.
#include <cstddef>
#include <functional>

namespace lenscheck {

// body(i) for every i in [0, n), on up to `threads` threads (0: one per core). The first exception
// thrown by any body is rethrown here, after every thread has stopped.
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& body);

}  // namespace lenscheck
