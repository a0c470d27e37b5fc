#include "audit/audit_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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
    case Lens::residual_layernorm: return {"—", "—", "—", "—"};
  }
  return {"", "", "", ""};
}

// The mixing ratios' medians per layer, first to last, for the conclusion.
std::string mixing_clause(const AuditResult& r) {
  std::vector<std::string> attention, residual, layernorm;
  for (const LayerMixing& m : r.mixing) {
    attention.push_back(pct(m.attention.median()));
    residual.push_back(pct(m.residual.median()));
    layernorm.push_back(pct(m.residual_layernorm.median()));
  }
  return fmt::format("The median content token takes {} of its update from the other tokens by attention alone "
                     "(Attn-N, layers 0 to {}), {} with its own residual (AttnRes-N) and {} through the LayerNorm "
                     "(AttnResLn-N).",
                     fmt::join(attention, ", "), r.mixing.size() - 1, fmt::join(residual, ", "), fmt::join(layernorm, ", "));
}

std::string verdict(const AuditResult& r) { return r.abandon() ? "ABANDON" : "PROCEED"; }

// A sink share as printed, in tenths of a percent: what the reader sees, and so what "stays" means.
long printed_tenths(double share) { return std::lround(1000 * share); }

// The change of a lens's figure against the baseline's in the words its printed values support:
// "stays at", "rises to" or "falls to", the change in percentage points, and the ratio to the
// baseline only where the baseline is kShareResolution or more (below, it prints as 0.0 %).
std::string change_from_baseline(double baseline, double value) {
  const long from = printed_tenths(baseline), to = printed_tenths(value);
  if (from == to) return fmt::format("stays at {} (the baseline's {})", pct(value), pct(baseline));
  const std::string ratio =
      baseline >= kShareResolution ? fmt::format(", {:.2f}× the baseline", value / baseline) : "";
  return fmt::format("{} to {} from the baseline's {} ({:+.1f} percentage points{})", to > from ? "rises" : "falls",
                     pct(value), pct(baseline), double(to - from) / 10, ratio);
}

// The largest rise in sink share against the baseline, in percentage points, with its row's baseline share.
std::string points_worsening(const LensStats& l) {
  const RowMax& m = l.points_worsening;
  return fmt::format("{:+.1f} pp, {} → {} ({})", 100 * m.value, pct(m.baseline), pct(m.share), m.where);
}
// The largest relative rise, over rows whose baseline share is kShareResolution or more.
std::string relative_worsening(const LensStats& l) {
  const RowMax& m = l.relative_worsening;
  return fmt::format("{:.0f} %, {} → {} ({})", 100 * m.value, pct(m.baseline), pct(m.share), m.where);
}

// The rows whose sink share rose, for the conclusion: how many, how many visibly, and by how much.
std::string worsening_clause(const LensStats& l) {
  if (l.worse == 0) return "no row's sink share rose against the baseline";
  std::string s = fmt::format("{} rows' sink shares rose against the baseline, {} of them by {} percentage points "
                              "or more",
                              l.worse, l.worse_by_resolution, 100 * kShareResolution);
  const RowMax& points = l.points_worsening;
  s += l.worse_by_resolution ? fmt::format("; the largest rise is {:.1f} percentage points, {} → {} ({})", 100 * points.value,
                                           pct(points.baseline), pct(points.share), points.where)
                             : fmt::format(", none by enough to show at the {} the shares are printed to", pct(kShareResolution));
  s += l.relative_worsening.where.empty()
           ? fmt::format("; no relative rise is given, since none of these rows has a baseline share of {} or more",
                         pct(kShareResolution))
           : fmt::format("; the largest relative rise from a baseline share of {} or more is {:.0f} %, {} → {} ({})",
                         pct(kShareResolution), 100 * l.relative_worsening.value, pct(l.relative_worsening.baseline),
                         pct(l.relative_worsening.share), l.relative_worsening.where);
  return s;
}

// "every row", or "the 2460 rows of the first 200 sentences" when a corpus is larger (the rows are in
// corpus order, and every sentence has a row).
std::string shown_rows(const AuditResult& r) {
  return r.rows.size() == r.total_rows
             ? "every row"
             : fmt::format("the {} rows of the first {} sentences", r.rows.size(),
                           r.rows.empty() ? 0 : r.rows.back().ordinal + 1);
}

// A generous width for sans-serif text: 0.6 em per character (UTF-8 continuation bytes not counted),
// wider than the average glyph of the common sans-serif faces, so that what fits here fits there.
double text_width(const std::string& text, double font_size) {
  const auto characters = std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
  return 0.6 * font_size * double(characters);
}

// Words of `text` in lines no wider than `width` at `font_size`.
std::vector<std::string> wrapped(const std::string& text, double font_size, double width) {
  std::vector<std::string> lines;
  std::string line;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(' ', at), text.size());
    const std::string word = text.substr(at, end - at);
    if (!line.empty() && text_width(line + " " + word, font_size) > width) lines.push_back(std::exchange(line, ""));
    line += (line.empty() ? "" : " ") + word;
    at = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// Lines of text from (x, y) down, `font_size` apart by 1.3; returns the y below the last.
int text_lines(std::string& svg, const std::vector<std::string>& lines, int x, int y, int font_size) {
  for (const std::string& line : lines) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\">{}</text>\n", x, y, font_size, xml_escaped(line));
    y += font_size * 13 / 10;
  }
  return y;
}

const char* const kLensColours[] = {"#444", "#1f77b4", "#2ca02c", "#9467bd"};

constexpr double kGridShares[] = {0.0, 0.25, 0.5, 0.75, 0.9, 1.0};

// Sink-share gridlines from top to bottom at kGridShares (50 and 90 % dashed red).
void share_gridlines(std::string& svg, int left, int width, int top, int bottom) {
  for (double x : kGridShares) {
    const bool flagged = x == 0.5 || x == 0.9;
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{3}\" stroke-dasharray=\"{4}\"/>\n",
                       left + x * width, top, bottom, flagged ? "#c33" : "#ccc", flagged ? "4 3" : "");
  }
}

// The gridlines' sink shares, as labels on the baseline y.
void share_labels(std::string& svg, int left, int width, int y) {
  for (double x : kGridShares)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.0f} %</text>\n", left + x * width, y, 100 * x);
}

// The sink-share thresholds marked under one lens, each with the exact count of rows past it: the
// report's 50 % and 90 %, and every threshold the plan's criteria put on the lens.
std::vector<std::pair<double, size_t>> marked_thresholds(const AuditResult& r, size_t lens) {
  std::vector<std::pair<double, size_t>> marks = {{0.5, r.stats[lens].above_50}, {0.9, r.stats[lens].above_90}};
  for (const AuditResult::ThresholdCount& t : r.share_thresholds)
    if (t.lens == lens && std::none_of(marks.begin(), marks.end(), [&](const auto& m) { return m.first == t.threshold; }))
      marks.emplace_back(t.threshold, t.rows);
  std::sort(marks.begin(), marks.end());
  return marks;
}

// Two pictures on one canvas: the rows of the first sentences as dots, and below it the distribution
// of every row per lens (the empirical cumulative distribution of the sink share, read from the
// histograms the verdict's medians come from), with the plan's thresholds and the rows past each.
std::string sink_share_picture(const AuditResult& r) {
  const int left = 180, width = 600, canvas = left + width + 40, lane = 70, panel = 90, font = 12;
  const int lenses = static_cast<int>(r.stats.size());
  std::string body;
  int y = 22;
  y = text_lines(body, wrapped(fmt::format("Sink share ([CLS] + [SEP]) of {}, per lens (bar: median of all {} rows; "
                                           "dashed: 50 % and 90 %)", shown_rows(r), r.total_rows),
                               14, canvas - left - 10),
                 left, y, 14);
  const int strip_top = y;
  const int strip_bottom = strip_top + lane * lenses;
  share_gridlines(body, left, width, strip_top, strip_bottom);
  share_labels(body, left, width, strip_bottom + 15);
  for (int li = 0; li < lenses; ++li) {
    const int y0 = strip_top + li * lane;
    body += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 10, y0 + lane / 2 + 4,
                        lens_name(r.stats[size_t(li)].lens));
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const auto share = r.rows[i].by_lens[size_t(li)].sink_share();
      if (!share) continue;
      const double jitter = static_cast<double>((i * 37) % 41) / 40.0;  // deterministic spread
      body += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.6\"><title>{}: {} {}</title></circle>\n",
                          left + *share * width, y0 + 12 + jitter * (lane - 24), kLensColours[li % 4],
                          xml_escaped(r.rows[i].sentence), xml_escaped(r.rows[i].word_text()), pct(*share));
    }
    if (r.stats[size_t(li)].undefined == r.stats[size_t(li)].rows) continue;  // no median to mark
    const double m = left + r.stats[size_t(li)].median * width;
    body += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\" stroke-width=\"2\"/>\n",
                        m, y0 + 4, y0 + lane - 4);
  }

  y = strip_bottom + 50;
  y = text_lines(body, wrapped(fmt::format("Every row ({} in all): how many of a lens's rows have a sink share above "
                                           "x, on a logarithmic scale, with the thresholds marked and the rows past each",
                                           r.total_rows),
                               14, canvas - left - 10),
                 left, y, 14);
  for (int li = 0; li < lenses; ++li) {
    const LensStats& l = r.stats[size_t(li)];
    const int top = y + 4, bottom = top + panel;
    body += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ccc\"/>\n", left,
                        top, width, panel);
    share_gridlines(body, left, width, top, bottom);
    body += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 40, top + panel / 2 + 4,
                        lens_name(l.lens));
    const Histogram& h = r.shares.at(size_t(li));
    const uint64_t defined = h.count();
    // Row counts on a log scale, one decade per step up to the lens's rows; 0 rows at the bottom
    // edge, a row a step above it, so that the few rows past a threshold stay visible among millions.
    const int decades = std::max(1, int(std::ceil(std::log10(double(std::max<uint64_t>(defined, 1))))));
    const int floor_gap = 10;
    auto y_of = [&](uint64_t rows) {
      return rows == 0 ? double(bottom)
                       : bottom - floor_gap - std::log10(double(rows)) / decades * (panel - floor_gap);
    };
    const int label_every = (panel - floor_gap) / decades >= 11 ? 1 : 2;
    for (int k = 0; k <= decades; k += label_every)
      body += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n", left - 3,
                          y_of(uint64_t(std::pow(10, k))) + 3, k < 3 ? std::to_string(int(std::pow(10, k)))
                                                                     : k < 6 ? fmt::format("{}k", int(std::pow(10, k - 3)))
                                                                             : fmt::format("{}M", int(std::pow(10, k - 6))));
    body += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">0</text>\n", left - 3, bottom + 3);
    // The buckets gathered into the pixel columns they fall in (a step drawn at most a pixel early),
    // so the picture stays the same size however many rows and buckets there are.
    std::vector<uint64_t> columns(size_t(width), 0);
    for (const auto& [bucket, count] : h.buckets())
      columns[std::min(size_t(width) - 1, size_t(double(bucket) * Histogram::kShareWidth * width))] += count;
    std::string points = fmt::format("{},{:.1f}", left, y_of(defined));
    uint64_t above = defined;
    for (int column = 0; column < width; ++column) {
      if (!columns[size_t(column)]) continue;
      points += fmt::format(" {},{:.1f}", left + column, y_of(above));
      above -= columns[size_t(column)];
      points += fmt::format(" {},{:.1f}", left + column, y_of(above));
    }
    if (defined)
      body += fmt::format("<polyline points=\"{} {},{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>\n", points,
                          left + width, bottom, kLensColours[li % 4]);
    std::vector<std::string> past;
    for (const auto& [threshold, rows] : marked_thresholds(r, size_t(li))) {
      body += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#c33\" "
                          "stroke-dasharray=\"4 3\"/>\n", left + threshold * width, top, bottom);
      past.push_back(fmt::format("{} past {}", rows, pct(threshold)));
    }
    const std::string note =
        defined ? fmt::format("{} rows: {}{}", l.rows, fmt::join(past, ", "),
                              l.undefined ? fmt::format("; {} undefined, not drawn", l.undefined) : "")
                : fmt::format("{} rows, every one undefined: nothing to draw", l.rows);
    y = text_lines(body, wrapped(note, font, width), left, bottom + 15, font);
  }
  share_labels(body, left, width, y + 5);
  const int height = y + 20;
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
                     "font-size=\"{}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{}</svg>\n",
                     canvas, height, font, body);
}

// A maximum's figure, or null where no row was counted (no relative rise from a resolvable baseline).
nlohmann::ordered_json optional_figure(const RowMax& m, double figure) {
  return m.where.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(figure);
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
    s += fmt::format(" Under {} the median {}; {} rows still sink more than half and {} more than 90 % (worst {}, {}); "
                     "{}; and {} of {} rows keep their head{}.",
                     lens_name(l.lens), change_from_baseline(base.median, l.median), l.above_50, l.above_90,
                     pct(l.worst.value), l.worst.where, worsening_clause(l), l.kept_head, l.rows,
                     lens_per_layer(l.lens) ? "'s layer (this lens sums a layer's heads)" : "");
  }
  // Rows showing no context are said once: here for a lens no criterion judges, beside the verdict for one it does.
  auto judged = [&](Lens lens) {
    return std::any_of(r.criteria.begin(), r.criteria.end(), [&](const CriterionResult& c) { return c.criterion.lens == lens; });
  };
  for (const LensStats& l : r.stats)
    if (l.self_only && !judged(l.lens))
      s += fmt::format(" Under {} {} of {} rows put every weight on the word itself: no sink, and no other word either; "
                       "for them the lens shows no context at all.",
                       lens_name(l.lens), l.self_only, l.rows);
  std::vector<std::string> context;
  for (const LensStats& l : r.stats)
    if (l.context_rows) context.push_back(fmt::format("{} under {}", pct(l.context_median), lens_name(l.lens)));
  if (!context.empty())
    s += fmt::format(" Of what a row takes from the other tokens, the median row's sink holds {}.", fmt::join(context, ", "));
  if (!r.mixing.empty()) s += " " + mixing_clause(r);
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
  // The verdict is the plan's; what a reader must know to weigh it, where a lens it judges showed no context.
  for (const LensStats& l : r.stats)
    if (l.self_only && judged(l.lens))
      s += fmt::format(" Read the verdict with this: under {}, which the criteria judge, {} of {} rows show no context "
                       "at all, so where the sink is gone there, everything but the word itself is gone with it.",
                       lens_name(l.lens), l.self_only, l.rows);
  return s;
}

namespace {

// The sink-share table: one line per lens, with the published run's figures beside it.
std::string lens_table(const AuditResult& r) {
  MarkdownTable table({"lens", "median", "worst row", "rows > 50 %", "rows > 90 %", "rows worse than baseline",
                       "largest worsening, percentage points (baseline → lens)",
                       "largest relative worsening from a baseline share of 0.1 % or more (baseline → lens)",
                       "rows keeping their head", "undefined rows", "published median / worst / >50 % / >90 %"});
  for (const LensStats& l : r.stats) {
    const Published p = published(l.lens);
    const bool base = l.lens == r.plan.baseline, worse = !base && l.worse > 0;
    const std::string rows_worse =
        base ? "—" : fmt::format("{} ({} by {} pp or more)", l.worse, l.worse_by_resolution, 100 * kShareResolution);
    const std::string points = !worse                   ? "—"
                               : l.worse_by_resolution ? points_worsening(l)
                                                       : fmt::format("every rise below {} pp", 100 * kShareResolution);
    const std::string relative = !worse ? "—"
                                 : l.relative_worsening.where.empty()
                                     ? fmt::format("— (no baseline share of {} or more)", pct(kShareResolution))
                                     : relative_worsening(l);
    const bool none_defined = l.undefined == l.rows;  // no median, no worst row: nothing to show
    table.row({lens_name(l.lens), none_defined ? "— (no defined row)" : pct(l.median),
               none_defined ? "—" : fmt::format("{} ({})", pct(l.worst.value), l.worst.where),
               fmt::to_string(l.above_50), fmt::to_string(l.above_90), rows_worse, points, relative,
               fmt::format("{} / {}{}", l.kept_head, l.rows, lens_per_layer(l.lens) ? " (the head's layer)" : ""),
               fmt::to_string(l.undefined),
               fmt::format("{} / {} / {} / {}", p.median, p.worst, p.above_50, p.above_90)});
  }
  return "\n## Sink share per lens\n\n" + table.markdown();
}

// Kobayashi et al. 2021's mixing ratios per layer, where the plan shows the residual_layernorm lens.
std::string mixing_table(const AuditResult& r) {
  MarkdownTable table({"layer", "Attn-N", "AttnRes-N", "AttnResLn-N", "content tokens"});
  for (size_t l = 0; l < r.mixing.size(); ++l) {
    const LayerMixing& m = r.mixing[l];
    table.row({fmt::to_string(l), pct(m.attention.median()), pct(m.residual.median()),
               pct(m.residual_layernorm.median()), fmt::to_string(m.attention.count())});
  }
  return fmt::format("## Mixing ratio per layer (Kobayashi et al. 2021)\n\nThe share of a content token's update "
                     "that the other tokens carry, ‖Σ_{{j≠i}} term_ij‖ / (‖Σ_{{j≠i}} term_ij‖ + ‖term_ii‖), by "
                     "attention alone (term_ij = Σ_h α_ij f_h(x_j)), with the token's own residual (term_ii + x_i) "
                     "and through the LayerNorm (each term centred, scaled by γ / sqrt(var y_i + ε)); median over "
                     "every content token of every sentence, within {:g} percentage points.\n\n",
                     100 * Histogram::kShareWidth / 2) +
         table.markdown() + "\n";
}

// Per layer, every head: the special tokens' value-norm ratios and the sink share of every head's row under each
// lens, the depth at which the sink lives, which the rows the instrument opens (one head a row) do not show.
std::string depth_table(const AuditResult& r) {
  if (r.depth.empty()) return "";
  std::vector<std::string> header = {"layer", "‖v‖ [CLS]", "‖v‖ [SEP]"};
  for (Lens lens : r.plan.lenses) header.push_back(lens_name(lens));
  MarkdownTable table(header);
  for (size_t l = 0; l < r.depth.size(); ++l) {
    const LayerDepth& d = r.depth[l];
    std::vector<std::string> cells = {fmt::to_string(l), fmt::format("{:.2f}×", d.cls_value.values.median()),
                                      fmt::format("{:.2f}×", d.sep_value.values.median())};
    for (size_t li = 0; li < d.shares.size(); ++li) {
      const std::string undefined = d.undefined[li] ? fmt::format(" ({} undefined)", d.undefined[li]) : "";
      cells.push_back((d.shares[li].count() ? pct(d.shares[li].median()) : "—") + undefined);
    }
    table.row(cells);
  }
  // The rows each median reads a layer (every layer has as many), the lenses with the same count together.
  std::vector<std::pair<uint64_t, std::vector<std::string>>> counts;
  for (size_t li = 0; li < r.plan.lenses.size(); ++li) {
    const uint64_t rows = r.depth[0].shares[li].count() + r.depth[0].undefined[li];
    if (counts.empty() || counts.back().first != rows) counts.push_back({rows, {}});
    counts.back().second.push_back(lens_name(r.plan.lenses[li]));
  }
  std::vector<std::string> per_lens;
  for (const auto& [rows, lenses] : counts) per_lens.push_back(fmt::format("{} under {}", rows, fmt::join(lenses, ", ")));
  return fmt::format("\n## Depth: every head of every layer\n\nPer layer, every head (not only the one the instrument "
                     "opens) of every sentence: ‖v‖ of [CLS] and of [SEP] over the mean ‖v‖ of the sentence's content "
                     "tokens, median over sentence × head ({} pairs a layer); the sink share ([CLS] + [SEP]) / row total "
                     "of every head's word row under each lens, median over sentence × head × word row, or sentence × "
                     "word row under a lens that sums a layer's heads (rows a layer: {}). Undefined rows (no weight at "
                     "all) are in no median.\n\n",
                     r.depth[0].cls_value.values.count(), fmt::join(per_lens, "; ")) +
         table.markdown();
}

// The sink's share of each row's context (the row without its word's own weight), per lens: what a lens that
// adds the word's own residual does not dilute. Read beside the sink-share table; no criterion unless the
// plan names median_context_sink_share.
std::string context_table(const AuditResult& r) {
  MarkdownTable table({"lens", "median", "worst row", "rows > 50 %", "rows with a context"});
  for (const LensStats& l : r.stats)
    table.row({lens_name(l.lens), l.context_rows ? pct(l.context_median) : "—",
               l.context_rows ? fmt::format("{} ({})", pct(l.context_worst.value), l.context_worst.where) : "—",
               fmt::to_string(l.context_above_50), fmt::format("{} / {}", l.context_rows, l.rows)});
  return "\n## Sink share of the context\n\nEach row without its word's own weight: ([CLS] + [SEP]) / (row total − "
         "the word's own weight), the sink's share of what the word takes from the other tokens. A lens that adds "
         "the word's own residual lowers the sink share of the whole row by adding to the word's own weight; this "
         "share it does not dilute. Rows that take nothing from other tokens have none.\n\n" +
         table.markdown();
}

// Every row shown, under each lens: the head opened, the top content target and the sink share.
std::string rows_table(const AuditResult& r) {
  std::vector<std::string> header = {"sentence", "word"};
  for (Lens l : r.plan.lenses) header.push_back(lens_name(l));
  MarkdownTable table(header);
  for (const AuditRow& row : r.rows) {
    std::vector<std::string> cells = {row.sentence, row.word_text()};
    for (const WordRow& w : row.by_lens) {
      const int top = w.top_target();
      const auto d = w.displayed();
      const bool shown = top >= 0 && w.top_share() > 0;  // a target that receives nothing is none
      cells.push_back(fmt::format("{} → {} {} · sink {}", w.head.label(), shown ? row.words[size_t(top)] : "—",
                                  d && shown ? fmt::format("{:.3f}", (*d)[size_t(top)]) : "—", pct(w.sink_share())));
    }
    table.row(cells);
  }
  const bool per_layer = std::any_of(r.plan.lenses.begin(), r.plan.lenses.end(), lens_per_layer);
  return fmt::format("\n## Rows\n\nShown: {}, {} in all. Head `L.H`{}, the top content target with its displayed "
                     "(renormalised) weight, and the sink share.\n\n",
                     shown_rows(r), r.total_rows, per_layer ? " (`L.*`: layer L, its heads summed)" : "") +
         table.markdown();
}

std::string audit_markdown(const AuditResult& r) {
  std::string md = fmt::format("# Audit: {} — {}\n\n", r.plan.study, verdict(r));
  md += fmt::format("> {}\n\nRegistered {} in `{}`, before the measurement.\n\n", r.plan.hypothesis,
                    r.plan.registered, r.plan.file.string());
  md += "## Conclusion\n\n" + audit_conclusion(r) + "\n\n";
  if (!r.recorded_hold()) md += "**The recorded numbers moved (see below): this run must not be used for a conclusion.**\n\n";
  MarkdownTable ran({"", ""});
  ran.row({"plan", fmt::format("`{}` SHA-256 `{}`", r.plan.file.string(), r.plan_sha256)})
      .row({"model", fmt::format("`{}` ({}) SHA-256 `{}`", r.model_dir,
                                 r.model_generator.empty() ? "no generator recorded" : r.model_generator, r.model_sha256)})
      .row({"sentences", fmt::format("`{}` SHA-256 `{}` ({} sentences, {} rows)", r.plan.sentences.string(),
                                     r.sentences_sha256, r.sentences, r.total_rows)})
      .row({"recorded numbers",
            r.plan.recorded ? fmt::format("`{}` SHA-256 `{}`", r.plan.recorded->string(), r.recorded_sha256) : "none"})
      .row({"head rule", fmt::format("`{}`", r.plan.head_rule.label())})
      .row({"build", fmt::format("`{}`", r.version)})
      .row({"implementation", "runtime fp32 (verified against the libtorch oracle by `lenscheck verify`)"});
  md += "## What ran\n\n" + ran.markdown() + "\n";
  MarkdownTable criteria({"criterion", "measured", "holds"});
  for (const CriterionResult& c : r.criteria)
    criteria.row({c.criterion.describe(), fmt::format("{:.4g}", c.value), c.triggered ? "**yes**" : "no"});
  md += "## Abandon criteria (from the plan)\n\n" + criteria.markdown();
  md += lens_table(r);
  md += context_table(r);
  md += "\nUndefined rows carry no weight at all under the lens (every weight of the row is 0 in fp32): they have no "
        "sink share and are counted in no median, maximum or count of shares. A NaN or Inf weight is not an undefined "
        "row: it stops the audit as a gate failure (exit 1), naming the sentence and tensor.\n";
  md += fmt::format("\nSink shares are printed to {0}: a share below {0} is zero to the reader, so a relative rise is "
                    "given only from a baseline share of {0} or more, and a rise counts as visible from {1} percentage "
                    "points.\n", pct(kShareResolution), 100 * kShareResolution);
  md += fmt::format("\nMedians are read from histograms that shards merge exactly: within {:g} percentage points "
                    "of the exact median of the sink shares, within {:g} % of that of the norm ratios.\n",
                    100 * Histogram::kShareWidth / 2, 100 * Histogram::kRatioError);
  md += "\nThe published run (4 layers, 256 dims, 14 sentences, 110 rows) is the layout's reference: 98/110 rows kept "
        "their head, 31 rows got worse by up to 26 %, value-norm ratio [CLS] 0.63× (196 of 224 below 1.0), [SEP] "
        "0.70× (147 of 224). Model and sentences differ, so the numbers do.\n\n";
  md += "![sink shares](sink-shares.svg)\n\n";
  if (!r.mixing.empty()) md += mixing_table(r);
  MarkdownTable ratios({"ratio", "median", "below 1.0"});
  for (const auto& [name, s] : {std::pair{"‖v‖ [CLS]", &r.cls_value}, std::pair{"‖v‖ [SEP]", &r.sep_value},
                                std::pair{"‖f(x)‖ [CLS]", &r.cls_transformed}, std::pair{"‖f(x)‖ [SEP]", &r.sep_transformed}})
    ratios.row({name, fmt::format("{:.2f}×", s->median), fmt::format("{} of {}", s->below_one, s->count)});
  md += "## Norm of the special tokens relative to the mean content token (per sentence × head)\n\n" + ratios.markdown();
  md += depth_table(r);
  if (!r.recorded.empty()) {
    MarkdownTable recorded(
        {"sentence", "word", "lens", "head", "target", "displayed", "sink share", "raw share", "result"});
    for (const RecordedCheck& c : r.recorded)
      recorded.row({c.number.sentence, c.number.word, lens_name(c.number.lens), c.head, c.target,
                    c.displayed ? fmt::format("{:.4f}", *c.displayed) : "—", pct(c.sink_share),
                    c.raw_share ? fmt::format("{:.4f}", *c.raw_share) : "—",
                    c.problem.empty() ? "holds" : "**" + c.problem + "**"});
    md += "\n## Recorded numbers, re-derived\n\n" + recorded.markdown();
  }
  md += rows_table(r);
  return md;
}

nlohmann::ordered_json audit_json(const AuditResult& r) {
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
  j["share_resolution"] = kShareResolution;
  for (size_t li = 0; li < r.stats.size(); ++li) {
    const LensStats& l = r.stats[li];
    nlohmann::ordered_json past = nlohmann::ordered_json::array();
    for (const auto& [threshold, rows] : marked_thresholds(r, li)) past.push_back({{"threshold", threshold}, {"rows", rows}});
    j["lenses"].push_back({{"lens", lens_name(l.lens)}, {"rows", l.rows}, {"undefined", l.undefined}, {"self_only", l.self_only},
                           {"median", l.median}, {"worst", l.worst.value}, {"worst_row", l.worst.where},
                           {"rows_above_50", l.above_50}, {"rows_above_90", l.above_90}, {"rows_worse", l.worse},
                           {"rows_worse_by_resolution", l.worse_by_resolution},
                           {"largest_worsening_points", 100 * l.points_worsening.value},
                           {"largest_worsening_points_row", l.points_worsening.where},
                           {"largest_worsening_points_baseline_share", l.points_worsening.baseline},
                           {"largest_worsening_points_share", l.points_worsening.share},
                           {"largest_relative_worsening", optional_figure(l.relative_worsening, l.relative_worsening.value)},
                           {"largest_relative_worsening_row", l.relative_worsening.where},
                           {"largest_relative_worsening_baseline_share",
                            optional_figure(l.relative_worsening, l.relative_worsening.baseline)},
                           {"largest_relative_worsening_share", optional_figure(l.relative_worsening, l.relative_worsening.share)},
                           {"context", {{"median", l.context_rows ? nlohmann::ordered_json(l.context_median)
                                                                  : nlohmann::ordered_json()},
                                        {"worst", optional_figure(l.context_worst, l.context_worst.value)},
                                        {"worst_row", l.context_worst.where},
                                        {"rows_above_50", l.context_above_50},
                                        {"rows", l.context_rows}}},
                           {"rows_keeping_head", l.kept_head},
                           {"keeping_head_means", lens_per_layer(l.lens) ? "the same layer" : "the same head"},
                           {"rows_past_threshold", past}});
  }
  auto ratio_json = [](const RatioSummary& s) {
    return nlohmann::ordered_json{{"median", s.median}, {"below_one", s.below_one}, {"count", s.count}};
  };
  for (size_t l = 0; l < r.mixing.size(); ++l)
    j["mixing_ratios"].push_back({{"layer", l},
                                  {"attention", r.mixing[l].attention.median()},
                                  {"residual", r.mixing[l].residual.median()},
                                  {"residual_layernorm", r.mixing[l].residual_layernorm.median()},
                                  {"content_tokens", r.mixing[l].attention.count()}});
  for (size_t l = 0; l < r.depth.size(); ++l) {
    const LayerDepth& d = r.depth[l];
    nlohmann::ordered_json lenses = nlohmann::ordered_json::array();
    for (size_t li = 0; li < d.shares.size(); ++li)
      lenses.push_back({{"lens", lens_name(r.plan.lenses[li])},
                        {"median_sink_share", d.shares[li].count() ? nlohmann::ordered_json(d.shares[li].median())
                                                                   : nlohmann::ordered_json()},
                        {"rows", d.shares[li].count()},
                        {"undefined", d.undefined[li]}});
    j["depth"].push_back({{"layer", l},
                          {"value_cls", ratio_json(d.cls_value.summary())},
                          {"value_sep", ratio_json(d.sep_value.summary())},
                          {"sink_share", lenses}});
  }
  if (!r.depth.empty())
    j["depth_medians_over"] = {{"norm_ratios", "sentence × head"},
                               {"sink_share", "sentence × head × word row (sentence × word row under a lens "
                                              "that sums a layer's heads)"}};
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
  return j;
}

}  // namespace

void write_audit_reports(const AuditResult& r, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  write_text_file(dir / "audit.md", audit_markdown(r));
  write_text_file(dir / "sink-shares.svg", sink_share_picture(r));
  write_text_file(dir / "audit.json", audit_json(r).dump(1) + "\n");
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
