#include "gate/display.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "model/error.h"
#include "runtime/rows.h"

namespace lenscheck {

bool DisplayRow::wrong() const {
  return std::any_of(items.begin(), items.end(), [](const DisplayItem& i) { return i.differs && i.decidable; });
}
bool DisplayRow::undecidable() const {
  return !wrong() && std::any_of(items.begin(), items.end(), [](const DisplayItem& i) { return !i.decidable; });
}
bool DisplayRow::differs() const {
  return std::any_of(items.begin(), items.end(), [](const DisplayItem& i) { return i.differs; });
}

size_t DisplayVerdict::wrong() const {
  return size_t(std::count_if(flagged.begin(), flagged.end(), [](const DisplayRow& r) { return r.wrong(); }));
}
size_t DisplayVerdict::undecidable() const {
  return size_t(std::count_if(flagged.begin(), flagged.end(), [](const DisplayRow& r) { return r.undecidable(); }));
}
size_t DisplayVerdict::undecidable_differing() const {
  return size_t(std::count_if(flagged.begin(), flagged.end(),
                              [](const DisplayRow& r) { return r.undecidable() && r.differs(); }));
}

namespace {

// One word's row under one lens in every head of a trace, layer-major; why not, when the trace cannot
// give it (a lens tensor missing or not [heads, T, T], a weight NaN or Inf).
struct HeadRows {
  std::vector<WordRow> rows;
  std::string problem;
};
HeadRows rows_of(const Trace& t, const WordLayout& layout, Lens lens, int word, int layers, int heads) {
  HeadRows r;
  const auto tokens = int64_t(t.input_ids.size());
  for (int l = 0; l < layers; ++l) {
    const std::string name = lens_tensor(lens, l);
    const Tensor* w = t.find(name);
    if (!w) return {{}, name + " is missing"};
    if (w->shape != std::vector<int64_t>{heads, tokens, tokens}) return {{}, name + " is not [heads, T, T]"};
    try {
      for (int h = 0; h < heads; ++h) {
        r.rows.push_back(word_row(layout, *w, {l, h}, word));
        (void)r.rows.back().sink_share();  // a NaN or Inf total throws here, not later
      }
    } catch (const NonFiniteError& e) {
      return {{}, e.what()};
    }
  }
  return r;
}

// The head the rule opens: the largest score, the lowest layer and head on a tie (as instrument_row).
size_t opened(const std::vector<WordRow>& rows, const HeadRule& rule, int heads) {
  if (rule.kind == HeadRule::Kind::fixed) return size_t(rule.fixed.layer * heads + rule.fixed.head);
  size_t best = 0;
  for (size_t i = 1; i < rows.size(); ++i)
    if (rule.score(rows[i]) > rule.score(rows[best])) best = i;
  return best;
}

// The heaviest content words of a displayed row (the query word itself left out when there is another,
// as WordRow::top_target), heaviest first, the lower index on a tie.
std::vector<int> top_targets(const std::vector<double>& shown, int word, int count) {
  std::vector<int> order;
  for (int w = 0; w < int(shown.size()); ++w)
    if (w != word || shown.size() == 1) order.push_back(w);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return shown[size_t(a)] > shown[size_t(b)]; });
  order.resize(std::min(order.size(), size_t(count)));
  return order;
}

std::string printed(double x, int decimals) { return fmt::format("{:.{}f}", x, decimals); }

// The distance of x from the nearest rounding boundary of printing it with `decimals` decimals.
double rounding_margin(double x, int decimals) {
  const double scale = std::pow(10.0, decimals), scaled = x * scale;
  return std::fabs(scaled - (std::floor(scaled) + 0.5)) / scale;
}

std::string flag_name(double threshold) { return fmt::format("flag {:g} %", 100 * threshold); }

}  // namespace

const DisplaySpec& required_display(const StudyPlan& plan) {
  if (!plan.display)
    throw InputError(plan.file, "the plan has no display: block (decimals, top_targets, sink_flags), which the "
                                "display verdict needs");
  return *plan.display;
}

std::vector<DisplayRow> compare_display(const StudyPlan& plan, const std::string& sentence, const Trace& candidate,
                                        const Trace& truth, const std::vector<const Trace*>& benchmarks, int layers,
                                        int heads, size_t& rows) {
  const DisplaySpec& spec = required_display(plan);
  if (plan.head_rule.kind == HeadRule::Kind::fixed &&
      (plan.head_rule.fixed.layer >= layers || plan.head_rule.fixed.head >= heads))
    throw InputError(plan.file, fmt::format("head rule {} names a head the model lacks", plan.head_rule.label()));
  WordLayout layout;
  try {
    layout = WordLayout::of(truth);
  } catch (const std::invalid_argument& e) {
    throw InputError(sentence, fmt::format("the display verdict needs its words: {}", e.what()));
  }
  std::vector<DisplayRow> flagged;
  for (Lens lens : plan.lenses)
    for (int word = 0; word < int(layout.words.size()); ++word) {
      ++rows;
      const HeadRows candidate_rows = rows_of(candidate, layout, lens, word, layers, heads);
      const HeadRows truth_rows = rows_of(truth, layout, lens, word, layers, heads);
      if (!truth_rows.problem.empty()) throw std::logic_error("the truth's rows: " + truth_rows.problem);
      const std::vector<WordRow>& c = candidate_rows.rows;
      const std::vector<WordRow>& t = truth_rows.rows;
      std::vector<std::vector<WordRow>> b;
      for (const Trace* bench : benchmarks) {
        HeadRows rows = rows_of(*bench, layout, lens, word, layers, heads);
        if (!rows.problem.empty()) throw std::logic_error("the benchmark's rows: " + rows.problem);
        b.push_back(std::move(rows.rows));
      }

      auto word_text = [&](int w) {  // its tokens joined, WordPiece's ## dropped
        std::string text;
        for (size_t p : layout.words[size_t(w)])
          text += truth.tokens[p].rfind("##", 0) == 0 ? truth.tokens[p].substr(2) : truth.tokens[p];
        return text;
      };
      DisplayRow row;
      row.sentence = sentence;
      row.word = word_text(word);
      row.at = word;
      row.lens = lens;
      auto add = [&](DisplayItem item) {
        if (item.differs || !item.decidable) row.items.push_back(std::move(item));
      };
      auto head_label = [&](size_t i) { return HeadRef{int(i) / heads, int(i) % heads}.label(); };
      if (!candidate_rows.problem.empty()) {  // nothing the instrument could show: wrong
        add({"row", "— (" + candidate_rows.problem + ")", "shown", true, true, 0, 0});
        flagged.push_back(std::move(row));
        continue;
      }

      // The head: a tie within the error of the rule's scores makes the choice undecidable.
      const size_t ht = opened(t, plan.head_rule, heads), hc = opened(c, plan.head_rule, heads);
      if (plan.head_rule.kind != HeadRule::Kind::fixed) {
        double error = 0, margin = INFINITY;
        for (const auto& bench : b)
          for (size_t i = 0; i < t.size(); ++i)
            error = std::max(error, std::fabs(plan.head_rule.score(bench[i]) - plan.head_rule.score(t[i])));
        for (size_t i = 0; i < t.size(); ++i)
          if (i != ht) margin = std::min(margin, plan.head_rule.score(t[ht]) - plan.head_rule.score(t[i]));
        // Both heads' scores carry the error: a tie flips within twice it.
        add({"head", head_label(hc), head_label(ht), hc != ht, !(margin <= 2 * error), margin, 2 * error});
      }
      if (hc != ht) {  // another head's numbers are another row: nothing more to compare
        if (!row.items.empty()) flagged.push_back(std::move(row));
        continue;
      }

      // The sink share and its flags.
      const std::optional<double> st = t[ht].sink_share(), sc = c[ht].sink_share();
      double sink_error = 0;
      bool defined_alike = true;
      for (const auto& bench : b) {
        const std::optional<double> s = bench[ht].sink_share();
        if (s.has_value() != st.has_value()) defined_alike = false;
        if (s && st) sink_error = std::max(sink_error, std::fabs(*s - *st));
      }
      auto shown = [&](const std::optional<double>& s) { return s ? printed(*s, spec.decimals) : std::string("—"); };
      if (st.has_value() != sc.has_value() || !st) {
        add({"sink share", shown(sc), shown(st), st.has_value() != sc.has_value(), defined_alike, 0, sink_error});
      } else {
        add({"sink share", shown(sc), shown(st), shown(sc) != shown(st),
             !(rounding_margin(*st, spec.decimals) <= sink_error), rounding_margin(*st, spec.decimals), sink_error});
        for (double threshold : spec.sink_flags) {
          const bool raised_t = *st >= threshold, raised_c = *sc >= threshold;
          const double margin = std::fabs(*st - threshold);
          add({flag_name(threshold), raised_c ? "raised" : "not raised", raised_t ? "raised" : "not raised",
               raised_c != raised_t, !(margin <= sink_error), margin, sink_error});
        }
      }

      // The top targets and their displayed weights.
      const auto wt = t[ht].displayed(), wc = c[ht].displayed();
      if (!wt || !wc) {
        if (wt.has_value() != wc.has_value())
          add({"displayed weights", wc ? "shown" : "— (no content weight)", wt ? "shown" : "— (no content weight)",
               true, true, 0, 0});
        if (!row.items.empty()) flagged.push_back(std::move(row));
        continue;
      }
      double weight_error = 0;
      for (const auto& bench : b)
        if (const auto wb = bench[ht].displayed())
          for (size_t j = 0; j < wt->size(); ++j) weight_error = std::max(weight_error, std::fabs((*wb)[j] - (*wt)[j]));
      const std::vector<int> tt = top_targets(*wt, word, spec.top_targets), tc = top_targets(*wc, word, spec.top_targets);
      // Which words are shown, and in which order, is decided by the gaps between the truth's ranked weights,
      // the first word left out included.
      const std::vector<int> ranked = top_targets(*wt, word, spec.top_targets + 1);
      auto target_text = [&](int w) { return w < 0 ? std::string("—") : fmt::format("{}@{}", word_text(w), w); };
      for (size_t r = 0; r < tt.size(); ++r) {
        const double w_r = (*wt)[size_t(tt[r])];
        const int shown_c = r < tc.size() ? tc[r] : -1;
        // Shown where the truth shows another word: the truth's own gap between the two decides it.
        // Shown alike: the gaps to the truth's neighbouring ranks do, the first word left out included.
        double margin = shown_c >= 0 && shown_c != tt[r] ? std::fabs(w_r - (*wt)[size_t(shown_c)]) : INFINITY;
        if (shown_c == tt[r]) {
          if (r > 0) margin = std::min(margin, (*wt)[size_t(ranked[r - 1])] - w_r);
          if (r + 1 < ranked.size()) margin = std::min(margin, w_r - (*wt)[size_t(ranked[r + 1])]);
        }
        add({fmt::format("target {}", r + 1), target_text(shown_c), target_text(tt[r]), shown_c != tt[r],
             !(margin <= 2 * weight_error), margin, 2 * weight_error});  // a gap between two weights, as for heads
        if (shown_c != tt[r]) continue;
        const double w_t = (*wt)[size_t(tt[r])], w_c = (*wc)[size_t(tt[r])];
        add({fmt::format("weight of {}", word_text(tt[r])), printed(w_c, spec.decimals), printed(w_t, spec.decimals),
             printed(w_c, spec.decimals) != printed(w_t, spec.decimals),
             !(rounding_margin(w_t, spec.decimals) <= weight_error), rounding_margin(w_t, spec.decimals), weight_error});
      }
      if (!row.items.empty()) flagged.push_back(std::move(row));
    }
  return flagged;
}

DisplayVerdict display_verdict(const StudyPlan& plan, std::vector<std::vector<DisplayRow>> per_sentence, size_t rows) {
  DisplayVerdict v;
  v.plan_file = plan.file;
  v.spec = required_display(plan);
  v.head_rule = plan.head_rule;
  v.lenses = plan.lenses;
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
                                   : i.what.rfind("target", 0) == 0  ? "target ties"
                                   : i.what == "head"                ? "head ties"
                                   : i.what.rfind("flag", 0) == 0    ? "at the " + i.what.substr(5) + " flag"
                                                                     : "printed " + i.what + "s";
          ++causes[what];
        }
  std::string s;
  for (const auto& [what, n] : causes) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, what);
  return s;
}

std::string row_items(const DisplayRow& r, bool decided) {
  std::string s;
  for (const DisplayItem& i : r.items) {
    if (i.decidable != decided && decided) continue;
    if (!s.empty()) s += "; ";
    s += i.differs ? fmt::format("{}: {} for {}", i.what, i.candidate, i.truth) : fmt::format("{}: {}", i.what, i.truth);
    if (!i.decidable) s += fmt::format(" (within {:.2g} of its boundary, error {:.2g})", i.margin, i.error);
  }
  return s;
}

}  // namespace

std::string DisplayVerdict::headline(const std::string& arithmetic) const {
  std::string s = fmt::format("{} of {} rows show a different number; {} undecidable at {}", wrong(), rows,
                              undecidable(), arithmetic);
  if (undecidable())
    s += fmt::format(" (items within its error of a boundary: {}; {} of these rows printed differently)",
                     undecidable_causes(*this), undecidable_differing());
  return s;
}

std::string display_markdown(const DisplayVerdict& v, const std::string& arithmetic) {
  std::string s = fmt::format(
      "## What the instrument shows — {}\n\n**{}.**\n\n"
      "Every word of every sentence under each lens ({}), with the plan's head rule `{}` (`{}`): the head opened, "
      "the {} heaviest content words and their displayed weights, the sink share ({} decimals) and a flag at {}. "
      "Computed from the candidate and from the fp64 truth. Wrong: printed differently where the truth is "
      "decided. Undecidable: the truth lies within the declared arithmetic's own error (the largest distance of "
      "its benchmark and rounding probes from the truth, per quantity) of a rounding boundary, a threshold or a "
      "tie.\n\n",
      v.pass() ? "PASS" : "FAIL", v.headline(arithmetic), [&] {
        std::string l;
        for (Lens lens : v.lenses) l += (l.empty() ? "" : ", ") + std::string(lens_name(lens));
        return l;
      }(),
      v.head_rule.label(), v.plan_file.string(), v.spec.top_targets, v.spec.decimals, [&] {
        std::string f;
        for (double t : v.spec.sink_flags) f += fmt::format("{}{:g} %", f.empty() ? "" : " and ", 100 * t);
        return f;
      }());
  constexpr size_t kShown = 40;  // the report lists at most this many rows of each kind; the JSON all
  for (const bool wrong : {true, false}) {
    std::vector<const DisplayRow*> list;
    for (const DisplayRow& r : v.flagged)
      if (wrong ? r.wrong() : r.undecidable()) list.push_back(&r);
    if (list.empty()) continue;
    s += fmt::format("### {} rows ({}{})\n\n| sentence | word | lens | {} |\n|---|---|---|---|\n",
                     wrong ? "Wrong" : "Undecidable", list.size(),
                     list.size() > kShown ? fmt::format(", the first {}", kShown) : "",
                     wrong ? "candidate for truth" : "why");
    for (size_t i = 0; i < std::min(kShown, list.size()); ++i)
      s += fmt::format("| {} | {}@{} | {} | {} |\n", list[i]->sentence, list[i]->word, list[i]->at,
                       lens_name(list[i]->lens), row_items(*list[i], wrong));
    s += "\n";
  }
  return s;
}

}  // namespace lenscheck
