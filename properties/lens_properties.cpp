// Properties of the lenses and of the rows the instrument shows, over random attention and norm
// tensors: the lens computation (runtime/kernels.h weight_by_key), word aggregation and head
// selection (instrument/rows.h).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "properties/generators.h"
#include "instrument/rows.h"

namespace lenscheck {
namespace {

using prop::LensCase;

std::vector<int64_t> lens_shape(const LensCase& c) {
  const auto T = static_cast<int64_t>(c.tokens());
  return {c.heads, T, T};
}

// Layer `l`'s attention lens and its norm-weighted lens (α · n_j), as trace tensors [H, T, T].
Tensor attention_lens(const LensCase& c, int l) { return prop::tensor_of(lens_shape(c), c.probs[size_t(l)]); }
Tensor norm_lens(const LensCase& c, int l) {
  return prop::tensor_of(lens_shape(c), prop::weighted(c.probs[size_t(l)], c.norms[size_t(l)], c.heads, c.tokens()));
}

using prop::same_bits;

bool same_row(const WordRow& a, const WordRow& b) {
  if (!(a.head == b.head) || a.word != b.word || !same_bits(a.cls, b.cls) || !same_bits(a.sep, b.sep) ||
      a.content.size() != b.content.size())
    return false;
  for (size_t i = 0; i < a.content.size(); ++i)
    if (!same_bits(a.content[i], b.content[i])) return false;
  return true;
}

std::string show_row(const WordRow& r) {
  return fmt::format("word {} head {}: cls {:.17g}, sep {:.17g}, content [{:.17g}]", r.word,
                     r.head.label(), r.cls, r.sep, fmt::join(r.content, " "));
}

bool in_unit_interval(double x) { return x >= 0 && x <= 1; }

// Shares of a row: each part of it over its total, and the sink share. Undefined parts compare equal.
struct Shares {
  std::optional<double> sink;
  std::optional<std::vector<double>> displayed;
  std::vector<double> parts;  // cls, sep, then each content word, over the total
  int top_target;
  double top_share;
};
Shares shares_of(const WordRow& r) {
  Shares s{r.sink_share(), r.displayed(), {}, r.top_target(), r.top_share()};
  const double total = r.total();
  if (total > 0) {
    s.parts = {r.cls / total, r.sep / total};
    for (double c : r.content) s.parts.push_back(c / total);
  }
  return s;
}
bool same_shares(const Shares& a, const Shares& b) {
  return a.sink.has_value() == b.sink.has_value() && (!a.sink || same_bits(*a.sink, *b.sink)) &&
         a.displayed.has_value() == b.displayed.has_value() &&
         (!a.displayed || same_bits(*a.displayed, *b.displayed)) && same_bits(a.parts, b.parts) &&
         a.top_target == b.top_target && same_bits(a.top_share, b.top_share);
}

// Every (layer, head) row of `word`, in selection order: layers, then heads.
std::vector<WordRow> all_rows(const Trace& trace, const WordLayout& layout, Lens lens, int word,
                              const LensCase& c) {
  std::vector<WordRow> rows;
  for (int l = 0; l < c.layers; ++l)
    for (int h = 0; h < c.heads; ++h) rows.push_back(word_row(layout, *trace.find(lens_tensor(lens, l)), {l, h}, word));
  return rows;
}

}  // namespace

RC_GTEST_PROP(LensProperties, EveryLensRowsSharesAreInZeroOneAndTheDisplayedDistributionSumsToOne, ()) {
  const LensCase c = *prop::lens_case(1);
  const WordLayout layout = WordLayout::of(c.sentence());
  for (const Tensor& lens : {attention_lens(c, 0), norm_lens(c, 0)})
    for (int h = 0; h < c.heads; ++h)
      for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
        const WordRow r = word_row(layout, lens, {0, h}, w);
        for (double part : {r.cls, r.sep, r.total()})
          if (!(part >= 0 && std::isfinite(part))) RC_FAIL("negative or non-finite weight in " + show_row(r));
        const Shares s = shares_of(r);
        for (double share : s.parts)
          if (!in_unit_interval(share)) RC_FAIL(fmt::format("share {} outside [0, 1] in {}", share, show_row(r)));
        RC_ASSERT(s.sink.has_value() == (r.total() > 0));
        if (s.sink) RC_ASSERT(in_unit_interval(*s.sink));
        RC_ASSERT(in_unit_interval(s.top_share));
        if (s.displayed) {
          double sum = 0;
          for (double d : *s.displayed) {
            RC_ASSERT(in_unit_interval(d));
            sum += d;
          }
          RC_ASSERT(std::fabs(sum - 1) <= static_cast<double>(s.displayed->size()) * DBL_EPSILON);
        }
      }
}

RC_GTEST_PROP(LensProperties, UnitNormsReproduceTheAttentionLensBitForBit, ()) {
  const LensCase c = *prop::lens_case(1);
  const size_t T = c.tokens();
  const std::vector<float> ones(size_t(c.heads) * T, 1.0f);
  const std::vector<float> lens = prop::weighted(c.probs[0], ones, c.heads, T);
  RC_ASSERT(same_bits(lens, c.probs[0]));

  const WordLayout layout = WordLayout::of(c.sentence());
  const Tensor unit = prop::tensor_of(lens_shape(c), lens), attention = attention_lens(c, 0);
  for (int h = 0; h < c.heads; ++h)
    for (int w = 0; w < static_cast<int>(layout.words.size()); ++w)
      RC_ASSERT(same_row(word_row(layout, unit, {0, h}, w), word_row(layout, attention, {0, h}, w)));
}

// Scaling by 2^e is exact in every product whose result is a normal float. Saturated rows hold
// probabilities of 1e-36 whose products are subnormal and round to a coarser step (2^-149): where a
// lens holds such a weight, each share of a row agrees within T of those steps over the smaller of
// the row's two totals instead.
RC_GTEST_PROP(LensProperties, ScalingAllNormsByAPowerOfTwoLeavesEveryShareBitIdentical, ()) {
  const LensCase c = *prop::lens_case(1);
  // Within +-30 no product of a normal probability and a norm (<= 10) leaves the normal floats.
  const int exponent = *rc::gen::inRange(-30, 31);
  std::vector<float> scaled = c.norms[0];
  for (float& n : scaled) n = std::ldexp(n, exponent);
  const Tensor before = norm_lens(c, 0);
  const Tensor after = prop::tensor_of(lens_shape(c), prop::weighted(c.probs[0], scaled, c.heads, c.tokens()));
  auto subnormal = [](const Tensor& t) {
    return std::any_of(t.values.begin(), t.values.end(), [](double x) { return x != 0 && std::fabs(x) < FLT_MIN; });
  };
  const bool exact = !subnormal(before) && !subnormal(after);
  RC_CLASSIFY(!exact, "a product is subnormal");
  const WordLayout layout = WordLayout::of(c.sentence());
  for (int h = 0; h < c.heads; ++h)
    for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
      const WordRow a = word_row(layout, before, {0, h}, w), b = word_row(layout, after, {0, h}, w);
      const Shares sa = shares_of(a), sb = shares_of(b);
      if (exact) {
        if (!same_shares(sa, sb)) RC_FAIL("shares differ between\n  " + show_row(a) + "\nand\n  " + show_row(b));
        continue;
      }
      RC_ASSERT(sa.parts.size() == sb.parts.size());
      const double bound = double(c.tokens()) * 0x1p-149 / std::min(a.total(), b.total());
      for (size_t i = 0; i < sa.parts.size(); ++i)
        if (!(std::fabs(sa.parts[i] - sb.parts[i]) <= bound))
          RC_FAIL(fmt::format("part {} moved by {:.3g}, more than {:.3g}, between\n  {}\nand\n  {}", i,
                              std::fabs(sa.parts[i] - sb.parts[i]), bound, show_row(a), show_row(b)));
    }
}

RC_GTEST_PROP(LensProperties, ZeroingTheNormOfAnyKeyTokenMakesItsColumnExactlyZero, ()) {
  const LensCase c = *prop::lens_case(1);
  const size_t T = c.tokens(), H = static_cast<size_t>(c.heads);
  const size_t key = static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(T)));
  std::vector<float> zeroed = c.norms[0];
  for (size_t h = 0; h < H; ++h) zeroed[h * T + key] = 0.0f;
  const std::vector<float> before = prop::weighted(c.probs[0], c.norms[0], c.heads, T);
  const std::vector<float> after = prop::weighted(c.probs[0], zeroed, c.heads, T);
  for (size_t h = 0; h < H; ++h)
    for (size_t q = 0; q < T; ++q)
      for (size_t k = 0; k < T; ++k) {
        const size_t i = (h * T + q) * T + k;
        if (k == key ? after[i] != 0.0f : !same_bits(after[i], before[i]))
          RC_FAIL(fmt::format("head {} query {} key {}: {} (was {}) with key {}'s norm zeroed", h, q, k,
                              after[i], before[i], key));
      }

  // And the rows the instrument shows: the zeroed token carries nothing.
  const WordLayout layout = WordLayout::of(c.sentence());
  const Tensor lens = prop::tensor_of(lens_shape(c), after);
  for (int h = 0; h < c.heads; ++h)
    for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
      const WordRow r = word_row(layout, lens, {0, h}, w);
      if (key == layout.cls) RC_ASSERT(r.cls == 0.0);
      if (key == layout.sep) RC_ASSERT(r.sep == 0.0);
      for (size_t target = 0; target < layout.words.size(); ++target)
        if (layout.words[target] == std::vector<size_t>{key}) RC_ASSERT(r.content[target] == 0.0);
    }
}

RC_GTEST_PROP(LensProperties, SinkShareIsMonotoneNonDecreasingInTheClsNorm, ()) {
  const LensCase c = *prop::lens_case(1);
  const size_t T = c.tokens(), H = static_cast<size_t>(c.heads);
  // Steps of at least 1/4 on a [CLS] probability of at least e^-6 / 26 move the share far more than
  // the double rounding of its sums could, so the comparison below is exact. Saturated rows give
  // [CLS] probabilities of 0 or 1e-36, or shares within 1e-7 of 1, where the share's exact rise
  // (Δcls · content / (total · total')) is below the double rounding of its T-term sums: there the
  // share must stay within that rounding (2T DBL_EPSILON), and a row with no weight at all stays
  // undefined.
  const float step = static_cast<float>(*rc::gen::inRange(1, 41)) / 4;
  std::vector<float> raised = c.norms[0];
  for (size_t h = 0; h < H; ++h) raised[h * T + 0] += step;
  const Tensor before = norm_lens(c, 0);
  const Tensor after = prop::tensor_of(lens_shape(c), prop::weighted(c.probs[0], raised, c.heads, T));
  const WordLayout layout = WordLayout::of(c.sentence());
  for (int h = 0; h < c.heads; ++h)
    for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
      const WordRow a = word_row(layout, before, {0, h}, w), b = word_row(layout, after, {0, h}, w);
      // Any weight at all defines the share.
      RC_ASSERT(b.sink_share().has_value() == (b.total() > 0));
      if (!a.sink_share()) continue;
      const double content = a.total() - a.cls - a.sep, rounding = 2 * double(T) * DBL_EPSILON;
      const bool resolvable = (b.cls - a.cls) * content / (a.total() * b.total()) > rounding;
      RC_CLASSIFY(!resolvable, "a [CLS] rise the row does not resolve");
      if (!resolvable) {
        RC_ASSERT(std::fabs(*b.sink_share() - *a.sink_share()) <= rounding);
        continue;
      }
      if (!(*b.sink_share() >= *a.sink_share()))
        RC_FAIL(fmt::format("sink share fell from {:.17g} to {:.17g} when the [CLS] norm rose by {}:\n  {}\n  {}",
                            *a.sink_share(), *b.sink_share(), step, show_row(a), show_row(b)));
    }
}

RC_GTEST_PROP(LensProperties, WordAggregationIsTheIdentityWhenEveryWordIsASingleSubword, ()) {
  const LensCase c = *prop::lens_case(1, /*single_subword_words=*/true);
  const size_t T = c.tokens();
  const WordLayout layout = WordLayout::of(c.sentence());
  for (const Tensor& lens : {attention_lens(c, 0), norm_lens(c, 0)})
    for (int h = 0; h < c.heads; ++h)
      for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
        const WordRow r = word_row(layout, lens, {0, h}, w);
        const double* row = lens.values.data() + (size_t(h) * T + size_t(w) + 1) * T;  // word w is token w + 1
        RC_ASSERT(same_bits(r.cls, row[0]));
        RC_ASSERT(same_bits(r.sep, row[T - 1]));
        RC_ASSERT(r.content.size() == T - 2);
        for (size_t target = 0; target < r.content.size(); ++target)
          RC_ASSERT(same_bits(r.content[target], row[target + 1]));
      }
}

RC_GTEST_PROP(LensProperties, WordAggregationConservesRowMassSoWordColumnsSumToTheTokenColumns, ()) {
  const LensCase c = *prop::lens_case(1);
  const size_t T = c.tokens();
  const WordLayout layout = WordLayout::of(c.sentence());
  RC_CLASSIFY(layout.words.size() + 2 < T, "some word has several subwords");
  for (const Tensor& lens : {attention_lens(c, 0), norm_lens(c, 0)})
    for (int h = 0; h < c.heads; ++h)
      for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
        double token_mass = 0;  // mean over the word's subword rows of the sum over token columns
        for (size_t q : layout.words[size_t(w)])
          for (size_t k = 0; k < T; ++k) token_mass += lens.values[(size_t(h) * T + q) * T + k];
        token_mass /= static_cast<double>(layout.words[size_t(w)].size());
        const WordRow r = word_row(layout, lens, {0, h}, w);
        // The same numbers summed in another order: equal up to T roundings of the sum.
        if (!(std::fabs(r.total() - token_mass) <= static_cast<double>(T) * DBL_EPSILON * token_mass))
          RC_FAIL(fmt::format("word columns sum to {:.17g}, token columns to {:.17g}: {}", r.total(),
                              token_mass, show_row(r)));
      }
}

RC_GTEST_PROP(LensProperties, HeadSelectionIsDeterministicAndPicksAHeadWhosePeakEqualsTheMaximumPeak, ()) {
  const LensCase c = *prop::lens_case(3);
  Trace trace = c.sentence();
  for (int l = 0; l < c.layers; ++l) {
    trace.add(lens_tensor(Lens::attention, l), attention_lens(c, l));
    trace.add(lens_tensor(Lens::value_norm, l), norm_lens(c, l));
  }
  const Trace copy = trace;
  const WordLayout layout = WordLayout::of(trace);
  const HeadRule peak_rule = HeadRule::parse("max_content_peak"), sink_rule = HeadRule::parse("min_sink");
  for (Lens lens : {Lens::attention, Lens::value_norm})
    for (int w = 0; w < static_cast<int>(layout.words.size()); ++w) {
      const WordRow shown = instrument_row(trace, layout, lens, w, peak_rule, c.layers, c.heads);
      RC_ASSERT(same_row(shown, instrument_row(trace, layout, lens, w, peak_rule, c.layers, c.heads)));
      RC_ASSERT(same_row(shown, instrument_row(copy, layout, lens, w, peak_rule, c.layers, c.heads)));

      const std::vector<WordRow> rows = all_rows(trace, layout, lens, w, c);
      double max_peak = 0;
      for (const WordRow& r : rows) max_peak = std::max(max_peak, r.top_share());
      RC_ASSERT(shown.top_share() == max_peak);
      // Ties go to the lowest layer, then the lowest head: the first row attaining the maximum.
      for (const WordRow& r : rows)
        if (r.top_share() == max_peak) {
          RC_ASSERT(same_row(shown, r));
          break;
        }

      const WordRow least_sink = instrument_row(trace, layout, lens, w, sink_rule, c.layers, c.heads);
      RC_ASSERT(same_row(least_sink, instrument_row(copy, layout, lens, w, sink_rule, c.layers, c.heads)));
      std::optional<double> min_sink;
      for (const WordRow& r : rows)
        if (r.sink_share() && (!min_sink || *r.sink_share() < *min_sink)) min_sink = r.sink_share();
      RC_ASSERT(least_sink.sink_share() == min_sink);
    }
}

}  // namespace lenscheck
