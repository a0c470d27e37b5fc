#include "runtime/workers.h"

namespace lenscheck::runtime {

namespace {
// How long a helper spins before it sleeps, in pause instructions (about 0.1-0.5 ms on current
// x86-64): the kernels of one forward follow each other within microseconds, far sooner than a
// sleeping thread wakes (tens of microseconds), so that a helper between two kernels never sleeps.
constexpr int kSpins = 1 << 14;

void pause() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

Workers::Workers(unsigned threads) {
  for (unsigned t = 1; t < threads; ++t) helpers_.emplace_back([this] { help(); });
}

Workers::~Workers() {
  {
    std::lock_guard lock(state_);
    stopping_ = true;
    ++generation_;
  }
  wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void Workers::run(size_t parts, const std::function<void(size_t)>& part) const {
  std::unique_lock busy(busy_, std::try_to_lock);
  if (helpers_.empty() || parts <= 1 || !busy.owns_lock()) {
    for (size_t i = 0; i < parts; ++i) part(i);
    return;
  }
  unsigned long generation;
  {
    std::lock_guard lock(state_);
    part_ = &part;
    parts_ = parts;
    next_ = 0;
    done_ = 0;
    generation = ++generation_;
  }
  wake_.notify_all();
  take_parts(generation);
  // Every part taken is finished before the next call can begin: done_ counts them.
  while (done_.load(std::memory_order_acquire) < parts) pause();
}

void Workers::take_parts(unsigned long generation) const {
  for (;;) {
    const std::function<void(size_t)>* part;
    size_t i;
    {
      std::lock_guard lock(state_);
      if (generation_ != generation || next_ >= parts_) return;
      part = part_;
      i = next_++;
    }
    (*part)(i);
    done_.fetch_add(1, std::memory_order_release);
  }
}

void Workers::help() {
  unsigned long seen = 0;
  while (!stopping_) {
    for (int spin = 0; spin < kSpins && generation_ == seen; ++spin) pause();
    if (generation_ == seen) {
      std::unique_lock lock(state_);
      wake_.wait(lock, [&] { return generation_ != seen; });
    }
    seen = generation_;
    if (!stopping_) take_parts(seen);
  }
}

}  // namespace lenscheck::runtime
