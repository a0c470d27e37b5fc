#include "gate/display.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "common/report_file.h"
#include "model/error.h"
#include "instrument/rows.h"

namespace lenscheck {

bool DisplayRow::differs() const {
  return std::any_of(items.begin(), items.end(), [](const DisplayItem& i) { return i.differs; });
}
bool DisplayRow::wrong() const {
  return std::any_of(items.begin(), items.end(), [](const DisplayItem& i) { return i.differs && i.decidable; });
}
bool DisplayRow::explained() const { return differs() && !wrong(); }
bool DisplayRow::undecidable() const {
  return std::any_of(items.begin(), items.end(), [](const DisplayItem& i) { return !i.decidable; });
}

size_t DisplayVerdict::count(bool (DisplayRow::*kind)() const) const {
  return size_t(std::count_if(flagged.begin(), flagged.end(), [&](const DisplayRow& r) { return (r.*kind)(); }));
}

namespace {

// One word's row under one lens in every head (or layer, for a per-layer lens) of a trace, layer-major; why
// not, when the trace cannot give it (a lens tensor missing or of another shape, a weight NaN or Inf).
struct HeadRows {
  std::vector<WordRow> rows;
  std::string problem;
};
HeadRows rows_of(const Trace& t, const WordLayout& layout, Lens lens, int word, int layers, int heads) {
  try {
    HeadRows r{head_rows(t, layout, lens, word, layers, heads), ""};
    for (const WordRow& row : r.rows) (void)row.sink_share();  // a NaN or Inf total throws here, not later
    return r;
  } catch (const std::invalid_argument& e) {
    return {{}, e.what()};
  } catch (const NonFiniteError& e) {
    return {{}, e.what()};
  }
}

// The distance of x from the nearest rounding boundary of printing it with `decimals` decimals.
double rounding_margin(double x, int decimals) {
  const double scale = std::pow(10.0, decimals), scaled = x * scale;
  return std::fabs(scaled - (std::floor(scaled) + 0.5)) / scale;
}

std::string flag_name(double threshold) { return fmt::format("flag {:g} %", 100 * threshold); }

}  // namespace

namespace {

// One word's rows under one lens, every head, layer-major: the truth's, the candidate's, each benchmark's.
struct HeadRowSets {
  const std::vector<WordRow>& truth;
  const std::vector<WordRow>& candidate;
  const std::vector<std::vector<WordRow>>& benchmarks;
};

// Items that print alike and are decided are no news: only the others are kept.
void add(DisplayRow& row, DisplayItem item) {
  if (item.differs || !item.decidable) row.items.push_back(std::move(item));
}

// The least distance every head's rule score must move, each by at most that, for the rule to open head
// j. On exact scores half j's gap to the best other head (both scores move); on printed ones the least
// move that lifts j's printed score to some level R and lowers every other head's below R, or to R for a
// head after j (a tie goes to the lower index), R from j's own level to one above the top.
double opening_distance(const std::vector<double>& s, size_t j, std::optional<int> decimals) {
  if (!decimals) {
    double best = -INFINITY;
    for (size_t i = 0; i < s.size(); ++i)
      if (i != j) best = std::max(best, s[i]);
    return std::max(0.0, (best - s[j]) / 2);
  }
  const double unit = std::pow(10.0, -*decimals);
  std::vector<long long> level(s.size());
  for (size_t i = 0; i < s.size(); ++i) level[i] = printed_level(s[i], *decimals);
  const long long top = *std::max_element(level.begin(), level.end());
  double least = INFINITY;
  for (long long R = level[j]; R <= top + 1; ++R) {
    double d = level[j] >= R ? 0 : (double(R) - 0.5) * unit - s[j];  // to R's lower rounding boundary
    for (size_t i = 0; i < s.size(); ++i) {
      const long long ceiling = i < j ? R - 1 : R;
      if (i != j && level[i] > ceiling) d = std::max(d, s[i] - (double(ceiling) + 0.5) * unit);
    }
    least = std::min(least, d);
  }
  return least;
}

// The head. Every head's rule score carries the measured error; a head another than the truth's that the
// rule would open with every score moved by at most that matters only where it would print another row.
// Under `head_scores: printed` that takes a printed score crossing a rounding boundary: scores that print
// alike are decided by the tie-break however close. An exact tie in the truth is decided by the
// tie-break, which the candidate must follow.
void compare_head(const HeadRowSets& r, const Instrument& in, int word, size_t ht, size_t hc, const PrintedRow& pt,
                  DisplayRow& row) {
  if (in.head_rule.kind == HeadRule::Kind::fixed) return;
  const std::vector<WordRow>& t = r.truth;
  const std::optional<int> decimals = in.display.head_decimals();
  std::vector<double> s;
  for (const WordRow& head : t) s.push_back(in.head_rule.score(head));
  double error = 0;
  for (const auto& bench : r.benchmarks)
    for (size_t i = 0; i < t.size(); ++i) error = std::max(error, std::fabs(in.head_rule.score(bench[i]) - s[i]));
  // A head j can be opened within the error only if its score raised by it reaches the others' lowered:
  // a cheap test that spares opening_distance for most heads.
  auto at = [&](double x) { return decimals ? double(printed_level(x, *decimals)) : x; };
  double lowered[2] = {-INFINITY, -INFINITY};  // the two largest lowered scores
  for (double x : s) {
    const double low = at(x - error);
    lowered[1] = std::max(lowered[1], std::min(lowered[0], low));
    lowered[0] = std::max(lowered[0], low);
  }
  double margin = INFINITY;  // to the nearest head that would print another row
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == ht || at(s[i] + error) < (at(s[i] - error) == lowered[0] ? lowered[1] : lowered[0])) continue;
    const double d = opening_distance(s, i, decimals);
    if (d > 0 && d < margin && printed_row(t[i], word, in.display) != pt) margin = d;
  }
  if (hc != ht) margin = opening_distance(s, hc, decimals);  // the boundary the candidate crossed
  auto label = [&](size_t i) { return t[i].head.label(); };
  add(row, {"head", label(hc), label(ht), hc != ht, !(margin > 0 && margin <= error), margin, error});
}

// The sink share and its flags, in the head both sides open.
void compare_sink(const HeadRowSets& r, size_t head, const PrintedRow& pt, const PrintedRow& pc,
                  const DisplaySpec& spec, DisplayRow& row) {
  const std::optional<double> st = r.truth[head].sink_share(), sc = r.candidate[head].sink_share();
  double error = 0;
  bool defined_alike = true;
  for (const auto& bench : r.benchmarks) {
    const std::optional<double> s = bench[head].sink_share();
    if (s.has_value() != st.has_value()) defined_alike = false;
    if (s && st) error = std::max(error, std::fabs(*s - *st));
  }
  if (st.has_value() != sc.has_value() || !st) {
    add(row, {"sink share", pc.sink, pt.sink, st.has_value() != sc.has_value(), defined_alike, 0, error});
    return;
  }
  const double margin = rounding_margin(*st, spec.decimals);
  add(row, {"sink share", pc.sink, pt.sink, pc.sink != pt.sink, !(margin <= error), margin, error});
  for (size_t f = 0; f < spec.sink_flags.size(); ++f) {
    const double to_flag = std::fabs(*st - spec.sink_flags[f]);
    add(row, {flag_name(spec.sink_flags[f]), pc.flags[f] ? "raised" : "not raised", pt.flags[f] ? "raised" : "not raised",
              pc.flags[f] != pt.flags[f], !(to_flag <= error), to_flag, error});
  }
}

// The targets: every printed weight of a word shown by either side, or that one rounding step up would
// bring into the truth's list. The list follows from the printed weights alone.
void compare_targets(const HeadRowSets& r, size_t head, int word, const PrintedRow& pt, const PrintedRow& pc,
                     const DisplaySpec& spec, const std::function<std::string(int)>& word_text, DisplayRow& row) {
  const auto wt = r.truth[head].displayed(), wc = r.candidate[head].displayed();
  if (!wt || !wc) {
    if (wt.has_value() != wc.has_value())
      add(row, {"displayed weights", wc ? "shown" : "— (no content weight)", wt ? "shown" : "— (no content weight)",
                true, true, 0, 0});
    return;
  }
  double error = 0;
  for (const auto& bench : r.benchmarks)
    if (const auto wb = bench[head].displayed())
      for (size_t j = 0; j < wt->size(); ++j) error = std::max(error, std::fabs((*wb)[j] - (*wt)[j]));
  // Printed weights in units of the last printed decimal, so that comparing them is exact.
  const double scale = std::pow(10.0, spec.decimals);
  auto units = [&](double x) { return std::llround(x * scale); };
  const long long cutoff = pt.targets.empty() ? 0 : units(std::stod(pt.targets.back().second));
  const bool list_full = int(pt.targets.size()) == spec.top_targets;
  auto shown_in = [](const PrintedRow& p, int w) {
    return std::any_of(p.targets.begin(), p.targets.end(), [&](const auto& target) { return target.first == w; });
  };
  for (int w : content_words(wt->size(), word)) {
    const bool shown = shown_in(pt, w) || shown_in(pc, w);
    const double truth_weight = (*wt)[size_t(w)];
    // A word shown by neither side matters where one rounding step up would bring it into the list, and
    // then only its upper rounding boundary does.
    const bool could_enter = list_full && units(truth_weight) + 1 >= cutoff;
    if (!shown && !could_enter) continue;
    const double margin = shown ? rounding_margin(truth_weight, spec.decimals)
                                : (std::floor(truth_weight * scale + 0.5) + 0.5) / scale - truth_weight;
    const std::string p_t = printed(truth_weight, spec.decimals), p_c = printed((*wc)[size_t(w)], spec.decimals);
    add(row, {fmt::format("weight of {}@{}", word_text(w), w), shown_in(pc, w) ? p_c : "not shown",
              shown_in(pt, w) ? p_t : "not shown", shown && p_c != p_t, !(margin <= error), margin, error});
  }
  // Unreachable while the list is a function of the printed weights: kept as the check that it is.
  if (pc.targets != pt.targets && !row.differs())
    throw std::logic_error("the targets differ while every printed weight agrees");
}

}  // namespace

std::vector<DisplayRow> compare_display(const Instrument& instrument, const std::string& sentence, const Trace& candidate,
                                        const Trace& truth, const std::vector<const Trace*>& benchmarks, int layers,
                                        int heads, size_t& rows) {
  const DisplaySpec& spec = instrument.display;
  const HeadRule& rule = instrument.head_rule;
  if (rule.kind == HeadRule::Kind::fixed && (rule.fixed.layer >= layers || rule.fixed.head >= heads))
    throw InputError(instrument.plan_file, fmt::format("head rule {} names a head the model lacks", rule.label()));
  WordLayout layout;
  try {
    layout = WordLayout::of(truth);
  } catch (const std::invalid_argument& e) {
    throw InputError(sentence, fmt::format("the display verdict needs its words: {}", e.what()));
  }
  const std::function<std::string(int)> word_text = [&](int w) {  // its tokens joined, WordPiece's ## dropped
    std::string text;
    for (size_t p : layout.words[size_t(w)])
      text += truth.tokens[p].rfind("##", 0) == 0 ? truth.tokens[p].substr(2) : truth.tokens[p];
    return text;
  };
  std::vector<DisplayRow> flagged;
  for (Lens lens : instrument.lenses)
    for (int word = 0; word < int(layout.words.size()); ++word) {
      ++rows;
      const HeadRows candidate_rows = rows_of(candidate, layout, lens, word, layers, heads);
      const HeadRows truth_rows = rows_of(truth, layout, lens, word, layers, heads);
      if (!truth_rows.problem.empty()) throw std::logic_error("the truth's rows: " + truth_rows.problem);
      std::vector<std::vector<WordRow>> b;
      for (const Trace* bench : benchmarks) {
        HeadRows bench_rows = rows_of(*bench, layout, lens, word, layers, heads);
        if (!bench_rows.problem.empty()) throw std::logic_error("the benchmark's rows: " + bench_rows.problem);
        b.push_back(std::move(bench_rows.rows));
      }
      DisplayRow row{sentence, word_text(word), word, lens, {}};
      if (!candidate_rows.problem.empty()) {  // nothing the instrument could show: wrong
        add(row, {"row", "— (" + candidate_rows.problem + ")", "shown", true, true, 0, 0});
      } else {
        const HeadRowSets sets{truth_rows.rows, candidate_rows.rows, b};
        const size_t ht = instrument.opened_head(sets.truth, heads), hc = instrument.opened_head(sets.candidate, heads);
        const PrintedRow pt = printed_row(sets.truth[ht], word, spec);
        compare_head(sets, instrument, word, ht, hc, pt, row);
        if (hc == ht) {  // another head's numbers are another row: nothing more to compare
          const PrintedRow pc = printed_row(sets.candidate[ht], word, spec);
          compare_sink(sets, ht, pt, pc, spec, row);
          compare_targets(sets, ht, word, pt, pc, spec, word_text, row);
        }
      }
      if (!row.items.empty()) flagged.push_back(std::move(row));
    }
  return flagged;
}

DisplayVerdict display_verdict(const Instrument& instrument, std::vector<std::vector<DisplayRow>> per_sentence,
                               size_t rows) {
  DisplayVerdict v;
  v.instrument = instrument;
  v.rows = rows;
  for (auto& sentence : per_sentence)
    for (DisplayRow& r : sentence) v.flagged.push_back(std::move(r));
  return v;
}

namespace {

// What makes the undecidable rows so, counted by item: "1 at the 50 % flag, 1 a head tie".
std::string undecidable_causes(const DisplayVerdict& v) {
  std::map<std::string, size_t> causes;
  for (const DisplayRow& r : v.flagged)
    if (r.undecidable())
      for (const DisplayItem& i : r.items)
        if (!i.decidable) {
          const std::string what = i.what.rfind("weight of", 0) == 0 ? "printed weights"
                                   : i.what == "head"                ? "head ties"
                                   : i.what.rfind("flag", 0) == 0    ? "at the " + i.what.substr(5) + " flag"
                                                                     : "printed " + i.what + "s";
          ++causes[what];
        }
  std::string s;
  for (const auto& [what, n] : causes) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, what);
  return s;
}

// The items that print differently, each with its distance from its boundary where that is within the error.
std::string row_items(const DisplayRow& r) {
  std::string s;
  for (const DisplayItem& i : r.items) {
    if (!i.differs) continue;
    if (!s.empty()) s += "; ";
    s += fmt::format("{}: {} for {}", i.what, i.candidate, i.truth);
    if (!i.decidable) s += fmt::format(" (within {:.2g} of its boundary, error {:.2g})", i.margin, i.error);
  }
  return s;
}

}  // namespace

std::string DisplayVerdict::headline(const std::string& arithmetic) const {
  std::string s = fmt::format("{} of {} rows print differently from fp64: {} within {}'s error, {} beyond it; "
                              "{} undecidable at {}", differing(), rows, explained(), arithmetic, wrong(),
                              undecidable(), arithmetic);
  if (undecidable()) s += fmt::format(" (items within its error of a boundary: {})", undecidable_causes(*this));
  return s;
}

std::string display_markdown(const DisplayVerdict& v, const std::string& arithmetic) {
  std::string s = fmt::format(
      "## What the instrument shows — {}\n\n**{}.**\n\n"
      "Every word of every sentence under each lens ({}), with the plan's head rule `{}` (`{}`){}, printed as `{}` says: the head opened, "
      "the {} heaviest content words and their displayed weights, the sink share ({} decimals) and a flag at {}. "
      "Equal printed weights are ranked by their word's position. Computed from the candidate and from the fp64 "
      "truth. A row prints differently when any of this differs; that is explained by the declared arithmetic "
      "where the truth lies within its own error (the largest distance of its benchmark and rounding probes from "
      "the truth, per quantity) of the boundary that decided it (a rounding boundary, a flag's threshold, the "
      "rule's scores moving far enough to open another head that would print another row), and wrong, failing "
      "the gate, where it does not. An exact tie in the truth, or, under printed scores, scores that print alike, is "
      "decided by the rule's tie-break (the lowest layer, then head). Undecidable: the "
      "truth lies within that error of such a boundary, whatever the candidate prints.\n\n",
      v.pass() ? "PASS" : "FAIL", v.headline(arithmetic), [&] {
        std::string l;
        for (Lens lens : v.instrument.lenses) l += (l.empty() ? "" : ", ") + std::string(lens_name(lens));
        return l;
      }(),
      v.instrument.head_rule.label(), v.instrument.plan_file.string(),
      v.instrument.display.head_on_printed_scores
          ? fmt::format(" on its scores as printed to {} decimals (`head_scores: printed`)", v.instrument.display.decimals)
          : "",
      v.instrument.display_file.string(),
      v.instrument.display.top_targets, v.instrument.display.decimals, [&] {
        std::string f;
        for (double t : v.instrument.display.sink_flags) f += fmt::format("{}{:g} %", f.empty() ? "" : " and ", 100 * t);
        return f;
      }());
  constexpr size_t kShown = 40;  // the report lists at most this many rows of each kind; the JSON all
  const std::vector<std::pair<std::string, bool (DisplayRow::*)() const>> kinds = {
      {"Wrong", &DisplayRow::wrong}, {"Printed differently, within the declared arithmetic's error", &DisplayRow::explained}};
  for (const auto& [title, kind] : kinds) {
    std::vector<const DisplayRow*> list;
    for (const DisplayRow& r : v.flagged)
      if ((r.*kind)()) list.push_back(&r);
    if (list.empty()) continue;
    MarkdownTable table({"sentence", "word", "lens", "candidate for truth"});
    for (size_t i = 0; i < std::min(kShown, list.size()); ++i)
      table.row({list[i]->sentence, fmt::format("{}@{}", list[i]->word, list[i]->at), lens_name(list[i]->lens),
                 row_items(*list[i])});
    s += fmt::format("### {} rows ({}{})\n\n", title, list.size(),
                     list.size() > kShown ? fmt::format(", the first {}", kShown) : "") +
         table.markdown() + "\n";
  }
  return s;
}

}  // namespace lenscheck
