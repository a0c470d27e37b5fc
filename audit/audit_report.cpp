#include "audit/audit_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/report_file.h"

namespace lenscheck {

namespace {

std::string pct(double x) { return fmt::format("{:.1f} %", 100 * x); }
std::string pct(const std::optional<double>& x) { return x ? pct(*x) : "undefined"; }

// From the published run this study's form follows (4 layers, 256 dims, 14 sentences, 110 rows).
struct Published {
  const char* median;
  const char* worst;
  const char* above_50;
  const char* above_90;
};
Published published(Lens lens) {
  switch (lens) {
    case Lens::attention: return {"19.9 %", "97.7 %", "25", "8"};
    case Lens::value_norm: return {"10.0 %", "83.4 %", "12", "0"};
    case Lens::transformed_norm: return {"10.3 %", "—", "—", "—"};
  }
  return {"", "", "", ""};
}

std::string verdict(const AuditResult& r) { return r.abandon() ? "ABANDON" : "PROCEED"; }

// A rise in sink share against the baseline, in percentage points and relative, each with its row's
// baseline share: a relative rise from a near-zero baseline is large however small the rise.
std::string points_worsening(const LensStats& l) {
  const RowMax& m = l.points_worsening;
  return fmt::format("{:+.1f} pp, {} → {} ({})", 100 * m.value, pct(m.baseline), pct(m.share), m.where);
}
std::string relative_worsening(const LensStats& l) {
  const RowMax& m = l.relative_worsening;
  return fmt::format("{:.0f} %, {} → {} ({})", 100 * m.value, pct(m.baseline), pct(m.share), m.where);
}

// "every row", or "the 2460 rows of the first 200 sentences" when a corpus is larger.
std::string shown_rows(const AuditResult& r) {
  return r.rows.size() == r.total_rows
             ? "every row"
             : fmt::format("the {} rows of the first {} sentences", r.rows.size(), kShownSentences);
}

std::string strip_plot(const AuditResult& r) {
  const int left = 150, width = 600, lane = 70, top = 40;
  const int height = top + lane * static_cast<int>(r.stats.size()) + 50;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">Sink share ([CLS] + [SEP]) of {}, per lens "
      "(bar: median of all {} rows; dashed: 50 % and 90 %)</text>\n",
      left + width + 40, height, left, shown_rows(r), r.total_rows);
  for (double x : {0.0, 0.25, 0.5, 0.75, 0.9, 1.0}) {
    const double px = left + x * width;
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{3}\" stroke-dasharray=\"{4}\"/>\n"
                     "<text x=\"{0:.1f}\" y=\"{5}\" text-anchor=\"middle\">{6:.0f} %</text>\n",
                     px, top, height - 35, x == 0.5 || x == 0.9 ? "#c33" : "#ccc", x == 0.5 || x == 0.9 ? "4 3" : "",
                     height - 20, 100 * x);
  }
  const char* colours[] = {"#444", "#1f77b4", "#2ca02c", "#9467bd"};
  for (size_t li = 0; li < r.stats.size(); ++li) {
    const int y0 = top + static_cast<int>(li) * lane;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 10, y0 + lane / 2 + 4,
                     lens_name(r.stats[li].lens));
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const auto share = r.rows[i].by_lens[li].sink_share();
      if (!share) continue;
      const double jitter = static_cast<double>((i * 37) % 41) / 40.0;  // deterministic spread
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.6\"><title>{}: {} {}</title></circle>\n",
                       left + *share * width, y0 + 12 + jitter * (lane - 24), colours[li % 4], r.rows[i].sentence,
                       r.rows[i].word_text(), pct(*share));
    }
    const double m = left + r.stats[li].median * width;
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\" stroke-width=\"2\"/>\n",
                     m, y0 + 4, y0 + lane - 4);
  }
  return s + "</svg>\n";
}

nlohmann::ordered_json row_json(const WordRow& w, const std::vector<std::string>& words) {
  const int top = w.top_target();
  const auto d = w.displayed();
  return {{"head", w.head.label()},
          {"cls", w.cls},
          {"sep", w.sep},
          {"total", w.total()},
          {"sink_share", w.sink_share() ? nlohmann::ordered_json(*w.sink_share()) : nlohmann::ordered_json()},
          {"top_target", top >= 0 ? words[size_t(top)] : ""},
          {"top_displayed", d && top >= 0 ? nlohmann::ordered_json((*d)[size_t(top)]) : nlohmann::ordered_json()},
          {"top_raw_share", w.top_share()}};
}

}  // namespace

std::string audit_conclusion(const AuditResult& r) {
  const LensStats& base = r.stats.front();
  std::string s = fmt::format("Under the baseline lens ({}) the median row sinks {} into [CLS]/[SEP]; "
                              "{} of {} rows sink more than half, {} more than 90 % (worst {}, {}).",
                              lens_name(base.lens), pct(base.median), base.above_50, base.rows, base.above_90,
                              pct(base.worst.value), base.worst.where);
  for (size_t li = 1; li < r.stats.size(); ++li) {
    const LensStats& l = r.stats[li];
    if (l.undefined == l.rows) continue;  // said below, with the undefined rows of every lens
    const double factor = base.median > 0 ? l.median / base.median : 0;
    s += fmt::format(" Under {} the median falls to {} ({:.2f}× the baseline), {} rows still sink more than half "
                     "and {} more than 90 % (worst {}, {}); {} rows got worse{}, and {} of {} rows keep their head.",
                     lens_name(l.lens), pct(l.median), factor, l.above_50, l.above_90, pct(l.worst.value),
                     l.worst.where, l.worse,
                     l.worse ? fmt::format(", by up to {:.1f} percentage points ({} → {}, {}) and up to {:.0f} % "
                                           "relative ({} → {}, {})",
                                           100 * l.points_worsening.value, pct(l.points_worsening.baseline),
                                           pct(l.points_worsening.share), l.points_worsening.where,
                                           100 * l.relative_worsening.value, pct(l.relative_worsening.baseline),
                                           pct(l.relative_worsening.share), l.relative_worsening.where)
                             : "",
                     l.kept_head, l.rows);
  }
  for (const LensStats& l : r.stats)
    if (l.undefined)
      s += fmt::format(" Under {} {} of {} rows carry no weight at all (every weight of the row is 0 in fp32): "
                       "they have no sink share, are counted in no median or maximum, and are reported as undefined{}.",
                       lens_name(l.lens), l.undefined, l.rows, l.undefined == l.rows ? "; no row is left to show" : "");
  s += fmt::format(" [CLS] carries {:.2f}× and [SEP] {:.2f}× the value norm of a mean content token (median over "
                   "{} sentence × head pairs; {} and {} of them below 1.0).",
                   r.cls_value.median, r.sep_value.median, r.cls_value.count, r.cls_value.below_one,
                   r.sep_value.below_one);
  std::vector<std::string> triggered;
  for (const CriterionResult& c : r.criteria)
    if (c.triggered) triggered.push_back(fmt::format("{} (measured {:.4g})", c.criterion.describe(), c.value));
  if (triggered.empty())
    s += fmt::format(" No abandon criterion holds: **PROCEED** — the hypothesis stands on this model: {}",
                     r.plan.hypothesis);
  else
    s += fmt::format(" The plan's abandon criteria hold: {}. **ABANDON** — the hypothesis does not stand on this "
                     "model: it is not the case that {}", fmt::join(triggered, "; "), r.plan.hypothesis);
  return s;
}

void write_audit_reports(const AuditResult& r, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::string md = fmt::format("# Audit: {} — {}\n\n", r.plan.study, verdict(r));
  md += fmt::format("> {}\n\nRegistered {} in `{}`, before the measurement.\n\n", r.plan.hypothesis,
                    r.plan.registered, r.plan.file.string());
  md += "## Conclusion\n\n" + audit_conclusion(r) + "\n\n";
  if (!r.recorded_hold()) md += "**The recorded numbers moved (see below): this run must not be used for a conclusion.**\n\n";
  md += fmt::format("## What ran\n\n| | |\n|---|---|\n| plan | `{}` SHA-256 `{}` |\n| model | `{}` ({}) SHA-256 `{}` |\n"
                    "| sentences | `{}` SHA-256 `{}` ({} sentences, {} rows) |\n| recorded numbers | {} |\n"
                    "| head rule | `{}` |\n| build | `{}` |\n| implementation | runtime fp32 (verified against the libtorch oracle by `lenscheck verify`) |\n\n",
                    r.plan.file.string(), r.plan_sha256, r.model_dir, r.model_generator.empty() ? "no generator recorded" : r.model_generator,
                    r.model_sha256, r.plan.sentences.string(), r.sentences_sha256, r.sentences, r.total_rows,
                    r.plan.recorded ? fmt::format("`{}` SHA-256 `{}`", r.plan.recorded->string(), r.recorded_sha256) : "none",
                    r.plan.head_rule.label(), r.version);
  md += "## Abandon criteria (from the plan)\n\n| criterion | measured | holds |\n|---|---|---|\n";
  for (const CriterionResult& c : r.criteria)
    md += fmt::format("| {} | {:.4g} | {} |\n", c.criterion.describe(), c.value, c.triggered ? "**yes**" : "no");
  md += "\n## Sink share per lens\n\n| lens | median | worst row | rows > 50 % | rows > 90 % | rows worse than baseline | "
        "largest worsening, percentage points (baseline → lens) | largest relative worsening (baseline → lens) | "
        "rows keeping their head | undefined rows | published median / worst / >50 % / >90 % |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const LensStats& l : r.stats) {
    const Published p = published(l.lens);
    const bool base = l.lens == r.plan.baseline, worse = !base && l.worse > 0;
    const bool none_defined = l.undefined == l.rows;  // no median, no worst row: nothing to show
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} / {} / {} / {} |\n", lens_name(l.lens),
                      none_defined ? "— (no defined row)" : pct(l.median),
                      none_defined ? "—" : fmt::format("{} ({})", pct(l.worst.value), l.worst.where), l.above_50, l.above_90,
                      base ? "—" : std::to_string(l.worse), worse ? points_worsening(l) : "—",
                      worse ? relative_worsening(l) : "—", l.kept_head, l.rows, l.undefined, p.median, p.worst,
                      p.above_50, p.above_90);
  }
  md += "\nUndefined rows carry no weight at all under the lens (every weight of the row is 0 in fp32): they have no "
        "sink share and are counted in no median, maximum or count of shares. A NaN or Inf weight is not an undefined "
        "row: it stops the audit as a gate failure (exit 1), naming the sentence and tensor.\n";
  md += fmt::format("\nMedians are read from histograms that shards merge exactly: within {:g} percentage points "
                    "of the exact median of the sink shares, within {:g} % of that of the norm ratios.\n",
                    100 * Histogram::kShareWidth / 2, 100 * Histogram::kRatioError);
  md += "\nThe published run (4 layers, 256 dims, 14 sentences, 110 rows) is the layout's reference: 98/110 rows kept "
        "their head, 31 rows got worse by up to 26 %, value-norm ratio [CLS] 0.63× (196 of 224 below 1.0), [SEP] "
        "0.70× (147 of 224). Model and sentences differ, so the numbers do.\n\n";
  md += "![sink shares](sink-shares.svg)\n\n";
  md += "## Norm of the special tokens relative to the mean content token (per sentence × head)\n\n"
        "| ratio | median | below 1.0 |\n|---|---|---|\n";
  auto ratio_row = [&](const char* name, const RatioSummary& s) {
    md += fmt::format("| {} | {:.2f}× | {} of {} |\n", name, s.median, s.below_one, s.count);
  };
  ratio_row("‖v‖ [CLS]", r.cls_value);
  ratio_row("‖v‖ [SEP]", r.sep_value);
  ratio_row("‖f(x)‖ [CLS]", r.cls_transformed);
  ratio_row("‖f(x)‖ [SEP]", r.sep_transformed);
  if (!r.recorded.empty()) {
    md += "\n## Recorded numbers, re-derived\n\n| sentence | word | lens | head | target | displayed | sink share | raw share | result |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const RecordedCheck& c : r.recorded)
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c.number.sentence, c.number.word,
                        lens_name(c.number.lens), c.head, c.target,
                        c.displayed ? fmt::format("{:.4f}", *c.displayed) : "—", pct(c.sink_share),
                        c.raw_share ? fmt::format("{:.4f}", *c.raw_share) : "—",
                        c.problem.empty() ? "holds" : "**" + c.problem + "**");
  }
  md += fmt::format("\n## Rows\n\nShown: {}, {} in all. Head `L.H`, the top content target with its displayed (renormalised) "
                    "weight, and the sink share.\n\n| sentence | word |", shown_rows(r), r.total_rows);
  for (Lens l : r.plan.lenses) md += fmt::format(" {} |", lens_name(l));
  md += "\n|---|---|";
  for (size_t i = 0; i < r.plan.lenses.size(); ++i) md += "---|";
  md += "\n";
  for (const AuditRow& row : r.rows) {
    md += fmt::format("| {} | {} |", row.sentence, row.word_text());
    for (const WordRow& w : row.by_lens) {
      const int top = w.top_target();
      const auto d = w.displayed();
      md += fmt::format(" {} → {} {} · sink {} |", w.head.label(), top >= 0 ? row.words[size_t(top)] : "—",
                        d && top >= 0 ? fmt::format("{:.3f}", (*d)[size_t(top)]) : "—", pct(w.sink_share()));
    }
    md += "\n";
  }
  write_text_file(dir / "audit.md", md);
  write_text_file(dir / "sink-shares.svg", strip_plot(r));

  nlohmann::ordered_json j;
  j["tool"] = "lenscheck audit";
  j["study"] = r.plan.study;
  j["verdict"] = verdict(r);
  j["recorded_numbers_hold"] = r.recorded_hold();
  j["hypothesis"] = r.plan.hypothesis;
  j["registered"] = r.plan.registered;
  j["conclusion"] = audit_conclusion(r);
  j["hashes"] = {{"plan", r.plan_sha256}, {"model", r.model_sha256}, {"sentences", r.sentences_sha256},
                 {"recorded", r.recorded_sha256}};
  j["build"] = r.version;
  j["model"] = {{"dir", r.model_dir}, {"generator", r.model_generator}};
  j["head_rule"] = r.plan.head_rule.label();
  j["median_bounds"] = {{"sink_share_absolute", Histogram::kShareWidth / 2}, {"norm_ratio_relative", Histogram::kRatioError}};
  for (const CriterionResult& c : r.criteria)
    j["criteria"].push_back({{"criterion", c.criterion.describe()}, {"value", c.value}, {"holds", c.triggered}});
  for (const LensStats& l : r.stats)
    j["lenses"].push_back({{"lens", lens_name(l.lens)}, {"rows", l.rows}, {"undefined", l.undefined},
                           {"median", l.median}, {"worst", l.worst.value}, {"worst_row", l.worst.where},
                           {"rows_above_50", l.above_50}, {"rows_above_90", l.above_90}, {"rows_worse", l.worse},
                           {"largest_worsening_points", 100 * l.points_worsening.value},
                           {"largest_worsening_points_row", l.points_worsening.where},
                           {"largest_worsening_points_baseline_share", l.points_worsening.baseline},
                           {"largest_worsening_points_share", l.points_worsening.share},
                           {"largest_relative_worsening", l.relative_worsening.value},
                           {"largest_relative_worsening_row", l.relative_worsening.where},
                           {"largest_relative_worsening_baseline_share", l.relative_worsening.baseline},
                           {"largest_relative_worsening_share", l.relative_worsening.share},
                           {"rows_keeping_head", l.kept_head}});
  auto ratio_json = [](const RatioSummary& s) {
    return nlohmann::ordered_json{{"median", s.median}, {"below_one", s.below_one}, {"count", s.count}};
  };
  j["norm_ratios"] = {{"value_cls", ratio_json(r.cls_value)}, {"value_sep", ratio_json(r.sep_value)},
                      {"transformed_cls", ratio_json(r.cls_transformed)}, {"transformed_sep", ratio_json(r.sep_transformed)}};
  for (const NormRatio& n : r.ratios)
    j["norm_ratio_table"].push_back({{"sentence", n.sentence}, {"head", n.head.label()}, {"value_cls", n.cls_value},
                                     {"value_sep", n.sep_value}, {"transformed_cls", n.cls_transformed},
                                     {"transformed_sep", n.sep_transformed}});
  for (const RecordedCheck& c : r.recorded)
    j["recorded"].push_back({{"sentence", c.number.sentence}, {"word", c.number.word}, {"lens", lens_name(c.number.lens)},
                             {"head", c.head}, {"target", c.target},
                             {"displayed", c.displayed ? nlohmann::ordered_json(*c.displayed) : nlohmann::ordered_json()},
                             {"sink_share", c.sink_share ? nlohmann::ordered_json(*c.sink_share) : nlohmann::ordered_json()},
                             {"raw_share", c.raw_share ? nlohmann::ordered_json(*c.raw_share) : nlohmann::ordered_json()},
                             {"problem", c.problem}});
  j["rows_total"] = r.total_rows;
  j["rows_shown"] = shown_rows(r);
  for (const AuditRow& row : r.rows) {
    nlohmann::ordered_json rj = {{"sentence", row.sentence}, {"word", row.word_text()}, {"at", row.word}};
    for (size_t li = 0; li < row.by_lens.size(); ++li)
      rj[lens_name(r.plan.lenses[li])] = row_json(row.by_lens[li], row.words);
    j["rows"].push_back(rj);
  }
  write_text_file(dir / "audit.json", j.dump(1) + "\n");
}

void print_audit_outcome(const AuditResult& r, const std::filesystem::path& dir) {
  for (const CriterionResult& c : r.criteria)
    fmt::print("criterion {}: measured {:.4g} → {}\n", c.criterion.describe(), c.value,
               c.triggered ? "holds" : "does not hold");
  for (const RecordedCheck& c : r.recorded)
    if (!c.problem.empty())
      fmt::print("recorded number {} {} ({}): {}\n", c.number.sentence, c.number.word, lens_name(c.number.lens),
                 c.problem);
  fmt::print("{}\nwrote {}/audit.md, audit.json, sink-shares.svg\n", audit_conclusion(r), dir.string());
  fmt::print("audit: {}\n", r.recorded_hold() ? verdict(r) : "recorded numbers moved — no verdict");
}

}  // namespace lenscheck
