#pragma once
// Threads inside one forward pass. A kernel splits its outputs into parts that share nothing but
// their inputs, and each part runs the same arithmetic on whichever thread takes it: results are
// bit-identical for every thread count (properties/encoder_properties checks it).
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lenscheck::runtime {

class Workers {
 public:
  // `threads` >= 1 threads in all: the caller's and threads - 1 helpers.
  explicit Workers(unsigned threads = 1);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  unsigned threads() const { return static_cast<unsigned>(helpers_.size()) + 1; }
  // part(i) for every i in [0, parts), spread over the threads; returns when all have run. A call
  // made while another runs (two sentences on one encoder) runs its parts on the caller alone.
  void run(size_t parts, const std::function<void(size_t)>& part) const;

 private:
  void help();
  // Runs parts of call `generation` until none is left or another call has begun.
  void take_parts(unsigned long generation) const;

  std::vector<std::thread> helpers_;
  mutable std::mutex busy_;   // held by the one call the helpers serve
  mutable std::mutex state_;  // guards part_, parts_ and next_
  mutable std::condition_variable wake_;
  mutable const std::function<void(size_t)>* part_ = nullptr;
  mutable size_t parts_ = 0, next_ = 0;
  mutable std::atomic<size_t> done_ = 0;
  mutable std::atomic<unsigned long> generation_ = 0;  // one more per call, and at the end
  std::atomic<bool> stopping_ = false;
};

}  // namespace lenscheck::runtime
