// A trace on disk is the trace in memory: random traces survive save_trace / load_trace bit for bit.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <set>

#include "model/trace_io.h"
#include "properties/generators.h"
#include "tests/test_support.h"

namespace lenscheck {
namespace {

using prop::same_bits;

constexpr int kVocabSize = 64;

// Values of a tensor computed in `precision`: ordinary numbers and the edge cases a writer may
// mangle (signed zeros, subnormals, extremes, infinities, NaN).
template <class T>
rc::Gen<double> value_of() {
  using L = std::numeric_limits<T>;
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::arbitrary<T>(), [](T x) { return static_cast<double>(x); }),
      rc::gen::element<double>(0.0, -0.0, L::denorm_min(), -L::denorm_min(), L::min(), L::max(),
                               -L::max(), L::infinity(), -L::infinity(), L::quiet_NaN(),
                               static_cast<double>(static_cast<T>(1) / 3)));
}

rc::Gen<Trace> random_trace() {
  return rc::gen::exec([] {
    Trace t;
    t.precision = *rc::gen::element<std::string>("fp32", "fp64");
    t.producer = *rc::gen::element<std::string>("runtime fp32", "oracle fp64", "python \"ref\" → v2",
                                                "implementation\twith\ncontrols");
    const size_t T = static_cast<size_t>(*rc::gen::inRange(2, 27));
    t.input_ids = *rc::gen::container<std::vector<int64_t>>(T, rc::gen::inRange<int64_t>(0, kVocabSize));
    t.tokens = *rc::gen::container<std::vector<std::string>>(T, prop::unicode_text(3));
    // As a tokenizer numbers them: [CLS] and [SEP] -1, words counting up from 0 in between.
    t.word_ids = {-1};
    for (size_t i = 1; i + 1 < T; ++i)
      t.word_ids.push_back(i == 1 ? 0 : t.word_ids.back() + (*rc::gen::arbitrary<bool>() ? 1 : 0));
    t.word_ids.push_back(-1);
    const rc::Gen<double> value = t.precision == "fp64" ? value_of<double>() : value_of<float>();
    const int tensors = *rc::gen::inRange(0, 7);
    std::set<std::string> names = {"input_ids", "__metadata__"};  // taken by the format
    for (int i = 0; i < tensors; ++i) {
      const std::string name = *rc::gen::suchThat(prop::unicode_text(4), [&](const std::string& n) {
        return !n.empty() && !names.count(n);
      });
      names.insert(name);
      Tensor tensor(*rc::gen::container<std::vector<int64_t>>(size_t(*rc::gen::inRange(1, 4)),
                                                              rc::gen::inRange<int64_t>(1, 6)));
      tensor.values = *rc::gen::container<std::vector<double>>(tensor.numel(), value);
      t.add(name, std::move(tensor));
    }
    return t;
  });
}

}  // namespace

RC_GTEST_PROP(TraceIoProperties, ASafetensorsRoundTripOfARandomTraceIsBitIdentical, ()) {
  const Trace trace = *random_trace();
  static const Vocab vocab = prop::model_vocab(kVocabSize);
  const auto file = test::temp_dir("round-trip") / "trace.safetensors";
  save_trace(file, trace);
  const Trace back = load_trace(file, vocab);
  RC_ASSERT(back.producer == trace.producer);
  RC_ASSERT(back.precision == trace.precision);
  RC_ASSERT(back.input_ids == trace.input_ids);
  RC_ASSERT(back.tokens == trace.tokens);
  RC_ASSERT(back.word_ids == trace.word_ids);
  RC_ASSERT(back.tensors.size() == trace.tensors.size());
  for (size_t i = 0; i < trace.tensors.size(); ++i) {
    RC_ASSERT(back.tensors[i].first == trace.tensors[i].first);
    RC_ASSERT(back.tensors[i].second.shape == trace.tensors[i].second.shape);
    if (!same_bits(back.tensors[i].second.values, trace.tensors[i].second.values))
      RC_FAIL("values of \"" + trace.tensors[i].first + "\" changed on the way through the file");
  }
}

}  // namespace lenscheck
