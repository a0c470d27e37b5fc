// The lenses, word rows, head selection and the audit's verdict: on hand-made traces, and on the
// planted-sink checkpoint, whose answer is known in closed form.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <regex>

#include <nlohmann/json.hpp>

#include "audit/audit.h"
#include "audit/audit_report.h"
#include "model/error.h"
#include "synth/corpus.h"
#include "synth/planted.h"
#include "model/sha256.h"
#include "runtime/encoder.h"
#include "tests/test_support.h"

using namespace lenscheck;

namespace {

// [CLS] the scis ##sors [SEP]: three words, the second split in two pieces; one layer, two heads.
Trace hand_made_trace() {
  Trace t;
  t.tokens = {"[CLS]", "the", "scis", "##sors", "cut", "[SEP]"};
  t.word_ids = {-1, 0, 1, 1, 2, -1};
  t.input_ids = {101, 1, 2, 3, 4, 102};
  const size_t T = 6;
  Tensor probs({2, 6, 6});
  // Head 0: every row sends 0.5 to [CLS], 0.1 to [SEP], 0.1 to each content token.
  // Head 1: every row sends 0.05 to each special and 0.9 spread 0.3 / 0.2 / 0.2 / 0.2 over content.
  const double h0[6] = {0.5, 0.1, 0.1, 0.1, 0.1, 0.1}, h1[6] = {0.05, 0.3, 0.2, 0.2, 0.2, 0.05};
  for (size_t i = 0; i < T; ++i)
    for (size_t j = 0; j < T; ++j) {
      probs.values[i * T + j] = h0[j];
      probs.values[(T + i) * T + j] = h1[j];
    }
  t.add("layer.0.attention.probs", probs);
  return t;
}

WordRow row_of(std::vector<double> content, double cls, double sep, HeadRef head = {}) {
  WordRow r;
  r.cls = cls;
  r.sep = sep;
  r.content = std::move(content);
  r.head = head;
  return r;
}

}  // namespace

TEST(WordRows, AverageSubwordRowsAndSumSubwordColumns) {
  const Trace t = hand_made_trace();
  const WordLayout layout = WordLayout::of(t);
  ASSERT_EQ(layout.words.size(), 3u);
  EXPECT_EQ(layout.words[1], (std::vector<size_t>{2, 3}));
  const WordRow r = word_row(layout, *t.find("layer.0.attention.probs"), {0, 1}, 1);
  EXPECT_DOUBLE_EQ(r.cls, 0.05);
  EXPECT_DOUBLE_EQ(r.sep, 0.05);
  EXPECT_DOUBLE_EQ(r.content[0], 0.3);
  EXPECT_DOUBLE_EQ(r.content[1], 0.4);  // scis + ##sors
  EXPECT_DOUBLE_EQ(r.content[2], 0.2);
  EXPECT_NEAR(*r.sink_share(), 0.1, 1e-15);
  const auto d = *r.displayed();
  EXPECT_NEAR(d[0] + d[1] + d[2], 1.0, 1e-15);
  EXPECT_NEAR(d[1], 0.4 / 0.9, 1e-15);
  // The row's own word is not a target: "the" is the top target of "scis ##sors".
  EXPECT_EQ(r.top_target(), 0);
}

TEST(WordRows, SinkShareWithAndWithoutSpecialTokens) {
  EXPECT_DOUBLE_EQ(*row_of({0.2, 0.2}, 0.5, 0.1).sink_share(), 0.6);
  EXPECT_DOUBLE_EQ(*row_of({0.7, 0.3}, 0, 0).sink_share(), 0.0);
  EXPECT_DOUBLE_EQ(*row_of({0, 0}, 0.3, 0.7).sink_share(), 1.0);
  EXPECT_FALSE(row_of({0, 0}, 0.3, 0.7).displayed().has_value());
  // A row that carries nothing (every ‖v‖ = 0) has no share at all, not NaN.
  EXPECT_FALSE(row_of({0, 0}, 0, 0).sink_share().has_value());
}

TEST(HeadSelection, MaxContentPeakMinSinkAndFixed) {
  const Trace t = hand_made_trace();
  const WordLayout layout = WordLayout::of(t);
  // Word "cut": head 0's best other word holds 0.2 of the row, head 1's 0.4 (scis ##sors).
  EXPECT_EQ(instrument_row(t, layout, Lens::attention, 2, HeadRule::parse("max_content_peak"), 1, 2).head,
            (HeadRef{0, 1}));
  EXPECT_EQ(instrument_row(t, layout, Lens::attention, 2, HeadRule::parse("min_sink"), 1, 2).head, (HeadRef{0, 1}));
  EXPECT_EQ(instrument_row(t, layout, Lens::attention, 2, HeadRule::parse("fixed: 0.0"), 1, 2).head, (HeadRef{0, 0}));
  EXPECT_THROW(instrument_row(t, layout, Lens::attention, 2, HeadRule::parse("fixed: 3.0"), 1, 2),
               std::invalid_argument);
  EXPECT_THROW(HeadRule::parse("largest"), std::invalid_argument);
  // Ties go to the lowest layer and head: a trace whose two heads are equal picks head 0.
  Trace tie = t;
  Tensor& p = *tie.find("layer.0.attention.probs");
  std::copy_n(p.values.begin(), 36, p.values.begin() + 36);
  EXPECT_EQ(instrument_row(tie, layout, Lens::attention, 2, HeadRule{}, 1, 2).head, (HeadRef{0, 0}));
}

// A per-layer lens ([T, T]): one row per layer, labelled "L.*"; the rules rank the layers' rows, and
// "fixed: L.H" opens layer L.
TEST(HeadSelection, APerLayerLensRanksLayersAndAFixedHeadOpensItsLayer) {
  Trace t = hand_made_trace();
  const WordLayout layout = WordLayout::of(t);
  const Tensor probs = *t.find("layer.0.attention.probs");  // a copy: adding tensors moves the trace's
  for (int l = 0; l < 2; ++l) {  // layer 0 as head 0's weights, layer 1 as head 1's
    Tensor w({6, 6});
    std::copy_n(probs.values.begin() + l * 36, 36, w.values.begin());
    t.add(lens_tensor(Lens::residual_layernorm, l), w);
  }
  t.add("layer.1.attention.probs", probs);
  const std::vector<WordRow> rows = head_rows(t, layout, Lens::residual_layernorm, 2, 2, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].head.label(), "1.*");
  EXPECT_DOUBLE_EQ(rows[1].content[1], 0.4);
  EXPECT_EQ(instrument_row(t, layout, Lens::residual_layernorm, 2, HeadRule{}, 2, 2).head,
            (HeadRef{1, HeadRef::kWholeLayer}));
  EXPECT_EQ(instrument_row(t, layout, Lens::residual_layernorm, 2, HeadRule::parse("min_sink"), 2, 2).head.layer, 1);
  EXPECT_EQ(instrument_row(t, layout, Lens::residual_layernorm, 2, HeadRule::parse("fixed: 0.1"), 2, 2).head,
            (HeadRef{0, HeadRef::kWholeLayer}));
  EXPECT_THROW(instrument_row(t, layout, Lens::residual_layernorm, 2, HeadRule::parse("fixed: 0.2"), 2, 2),
               std::invalid_argument);  // head 2 of a two-head model
  EXPECT_THROW(instrument_row(t, layout, Lens::residual_layernorm, 2, HeadRule::parse("fixed: 2.0"), 2, 2),
               std::invalid_argument);
  // Keeping the head: a layer's row keeps any head of that layer.
  EXPECT_TRUE(rows[0].head.same_place(HeadRef{0, 1}));
  EXPECT_FALSE(rows[0].head.same_place(HeadRef{1, 0}));
  EXPECT_FALSE((HeadRef{0, 0}).same_place(HeadRef{0, 1}));
  // A [H, T, T] tensor is not a per-layer lens's.
  *t.find(lens_tensor(Lens::residual_layernorm, 1)) = probs;
  EXPECT_THROW(head_rows(t, layout, Lens::residual_layernorm, 2, 2, 2), std::invalid_argument);
}

// The sink's share of the context leaves the word's own weight out, so adding to it changes nothing.
TEST(WordRows, TheContextSinkShareLeavesTheWordsOwnWeightOut) {
  WordRow r = row_of({0.2, 0.5, 0.1}, 0.1, 0.1);
  r.word = 1;
  EXPECT_DOUBLE_EQ(*r.sink_share(), 0.2);
  EXPECT_DOUBLE_EQ(*r.context_sink_share(), 0.2 / 0.5);
  r.content[1] = 50;  // a dominant own residual dilutes the sink share, not the context's
  EXPECT_LT(*r.sink_share(), 0.01);
  EXPECT_DOUBLE_EQ(*r.context_sink_share(), 0.2 / 0.5);
  EXPECT_FALSE(row_of({0, 0, 0}, 0, 0).context_sink_share().has_value());
  WordRow own = row_of({0, 3.0}, 0, 0);
  own.word = 1;
  EXPECT_FALSE(own.context_sink_share().has_value());
}

TEST(WordRows, ARowWithEveryWeightOnItsOwnWordShowsNoContext) {
  EXPECT_FALSE(row_of({0, 3.0}, 0, 0).self_only());  // word 0's own weight is 0
  WordRow own = row_of({0, 3.0}, 0, 0);
  own.word = 1;
  EXPECT_TRUE(own.self_only());
  own.content[0] = 1e-30;
  EXPECT_FALSE(own.self_only());
  own.content[0] = 0;
  own.sep = 1e-30;
  EXPECT_FALSE(own.self_only());
}

namespace {

AuditResult hand_made_audit(const std::vector<std::pair<double, double>>& attention_vs_value_sink) {
  AuditResult r;
  r.plan.lenses = {Lens::attention, Lens::value_norm};
  r.plan.abandon_if = {{Lens::value_norm, Stat::worst_row_sink_share, {}, 0.5, {}, 1},
                       {Lens::value_norm, Stat::rows_with_sink_above, 0.5, 0.0, {}, 2}};
  int w = 0;
  for (auto [a, v] : attention_vs_value_sink) {
    AuditRow row{"s", w++, {"a", "b", "c", "d", "e"}, {}};
    row.by_lens.push_back(row_of({1 - a, 0, 0}, a, 0, {0, 0}));
    row.by_lens.push_back(row_of({1 - v, 0, 0}, v, 0, {0, a > 0.5 ? 1 : 0}));
    r.rows.push_back(row);
  }
  summarise_audit(r);
  return r;
}

}  // namespace

TEST(Verdict, AbandonWhenACriterionHolds) {
  const AuditResult r = hand_made_audit({{0.9, 0.6}, {0.2, 0.1}, {0.4, 0.45}});
  EXPECT_TRUE(r.abandon());
  EXPECT_TRUE(r.criteria[0].triggered);
  EXPECT_DOUBLE_EQ(r.criteria[0].value, 0.6);
  EXPECT_DOUBLE_EQ(r.criteria[1].value, 1);
  const LensStats& v = r.stats[1];
  EXPECT_NEAR(v.median, 0.45, Histogram::kShareWidth / 2);
  EXPECT_EQ(v.above_50, 1u);
  EXPECT_EQ(v.worse, 1u);  // 0.4 → 0.45
  EXPECT_NEAR(v.relative_worsening.value, 0.125, 1e-12);
  EXPECT_NEAR(v.points_worsening.value, 0.05, 1e-12);
  EXPECT_EQ(v.points_worsening.baseline, 0.4);
  EXPECT_EQ(v.points_worsening.where, "s: c");
  EXPECT_EQ(v.kept_head, 2u);  // the first row changed head
}

// Rows with every weight on the word itself are counted, can be pre-registered, and are said beside the verdict.
TEST(Verdict, RowsShowingNoContextAreCountedAndSaidBesideTheVerdict) {
  AuditResult r;
  r.plan.lenses = {Lens::attention, Lens::residual_layernorm};
  r.plan.abandon_if = {{Lens::residual_layernorm, Stat::worst_row_sink_share, {}, 0.5, {}, 1}};
  for (int w = 0; w < 3; ++w) {
    AuditRow row{"s", w, {"a", "b", "c"}, {}};
    row.by_lens.push_back(row_of({0.2, 0.2, 0.2}, 0.4, 0, {0, 0}));
    std::vector<double> own(3, 0.0);
    own[size_t(w)] = 16;
    row.by_lens.push_back(row_of(own, 0, w == 2 ? 1 : 0, {0, HeadRef::kWholeLayer}));  // the last one sinks a little
    row.by_lens.back().word = w;
    r.rows.push_back(row);
  }
  summarise_audit(r);
  EXPECT_EQ(r.stats[1].self_only, 2u);
  EXPECT_FALSE(r.abandon());
  EXPECT_NE(audit_conclusion(r).find("under residual_layernorm, which the criteria judge, 2 of 3 rows show no context"),
            std::string::npos) << audit_conclusion(r);
  r.plan.abandon_if.push_back({Lens::residual_layernorm, Stat::self_only_rows, {}, 0.0, {}, 2});
  r.plan.abandon_if.push_back({Lens::residual_layernorm, Stat::median_context_sink_share, {}, 0.5, {}, 3});
  summarise_audit(r);
  EXPECT_TRUE(r.abandon());
  EXPECT_DOUBLE_EQ(r.criteria[1].value, 2);
  // The one row with a context sinks all of it: its context share is 1, though its row's share is 1 / 17.
  EXPECT_EQ(r.stats[1].context_rows, 1u);
  EXPECT_NEAR(r.criteria[2].value, 1.0, Histogram::kShareWidth);
  EXPECT_TRUE(r.criteria[2].triggered);
}

TEST(Verdict, ProceedWhenNoCriterionHolds) {
  const AuditResult r = hand_made_audit({{0.9, 0.4}, {0.2, 0.1}, {0.4, 0.3}});
  EXPECT_FALSE(r.abandon());
  EXPECT_DOUBLE_EQ(r.criteria[0].value, 0.4);
  EXPECT_DOUBLE_EQ(r.criteria[1].value, 0);
  EXPECT_EQ(r.stats[1].worse, 0u);
}

// A row whose baseline barely sinks: the relative rise is enormous, the rise in points is what it is.
TEST(Verdict, WorseningFromANearZeroBaselineIsReportedInPointsBesideTheBaseline) {
  const AuditResult r = hand_made_audit({{0.001, 0.5}, {0.4, 0.6}});
  const LensStats& v = r.stats[1];
  EXPECT_EQ(v.worse, 2u);
  EXPECT_NEAR(v.relative_worsening.value, 499, 1e-9);  // 49 900 %
  EXPECT_EQ(v.relative_worsening.where, "s: a");
  EXPECT_EQ(v.relative_worsening.baseline, 0.001);
  EXPECT_NEAR(v.points_worsening.value, 0.499, 1e-12);
  EXPECT_EQ(v.points_worsening.baseline, 0.001);
  EXPECT_EQ(v.points_worsening.share, 0.5);
  const auto dir = test::temp_dir("report");
  write_audit_reports(r, dir);
  const std::string md = test::read_file(dir / "audit.md");
  EXPECT_NE(md.find("| +49.9 pp, 0.1 % → 50.0 % (s: a) | 49900 %, 0.1 % → 50.0 % (s: a) |"), std::string::npos) << md;
  const auto json = nlohmann::json::parse(test::read_file(dir / "audit.json"));
  EXPECT_NEAR(json["lenses"][1]["largest_worsening_points"].get<double>(), 49.9, 1e-9);
  EXPECT_EQ(json["lenses"][1]["largest_worsening_points_baseline_share"].get<double>(), 0.001);
  EXPECT_EQ(json["lenses"][1]["largest_relative_worsening_baseline_share"].get<double>(), 0.001);
}

namespace {

// Every figure a report prints before " %", " pp" or "×": what a reader would take for a magnitude.
std::vector<double> printed_figures(const std::string& text) {
  static const std::regex figure(R"(([-+]?[0-9][0-9.eE+-]*) ?(%|pp|×))");
  std::vector<double> figures;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), figure); it != std::sregex_iterator(); ++it)
    figures.push_back(std::stod((*it)[1].str()));
  return figures;
}

void expect_only_finite_numbers(const nlohmann::json& j, const std::string& at) {
  if (j.is_number()) {
    EXPECT_TRUE(std::isfinite(j.get<double>()) && std::fabs(j.get<double>()) < 1e6) << at << " = " << j.dump();
  } else if (j.is_structured()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      expect_only_finite_numbers(*it, at + "/" + (j.is_object() ? it.key() : "[]"));
  }
}

// What every report of a result must hold: no NaN or infinity, and no figure past 100 000 % (a rise
// from a baseline share of kShareResolution to 100 % is 99 900 %).
// Returns the folder the reports were written to.
std::filesystem::path expect_honest_reports(const AuditResult& r, const std::string& name) {
  const auto dir = test::temp_dir(name);
  write_audit_reports(r, dir);
  // As fmt and the standard library print them; the reports' prose says "NaN" and "Inf".
  static const std::regex not_a_number(R"(\b(nan|inf|infinity)\b)");
  for (const char* file : {"audit.md", "audit.json", "sink-shares.svg"}) {
    const std::string text = test::read_file(dir / file);
    EXPECT_FALSE(std::regex_search(text, not_a_number)) << file;
    for (double x : printed_figures(text)) EXPECT_LE(std::fabs(x), 1e5) << file;
  }
  expect_only_finite_numbers(nlohmann::json::parse(test::read_file(dir / "audit.json")), "audit.json");
  return dir;
}

}  // namespace

// Baselines of exactly 0, the smallest subnormal and 1e-40 (all printed as 0.0 %): the rises from
// them are given in percentage points, never relative, and the median's wording follows its sign.
TEST(Verdict, NoRelativeFigureFromABaselineBelowThePrintedResolution) {
  const AuditResult r =
      hand_made_audit({{0, 0.3}, {std::numeric_limits<double>::denorm_min(), 0.2}, {1e-40, 2e-40}, {0.0004, 0.0009}, {0.5, 0.4}});
  const LensStats& v = r.stats[1];
  EXPECT_EQ(v.worse, 4u);
  EXPECT_EQ(v.worse_by_resolution, 2u);  // 0 → 30 % and 0.0 % → 20 %; 1e-40 → 2e-40 and 0.04 % → 0.09 % do not show
  EXPECT_TRUE(v.relative_worsening.where.empty());
  EXPECT_NEAR(v.points_worsening.value, 0.3, 1e-12);
  const std::string conclusion = audit_conclusion(r);
  EXPECT_NE(conclusion.find("the median rises to 20.0 % from the baseline's 0.0 % (+20.0 percentage points)"),
            std::string::npos) << conclusion;
  EXPECT_NE(conclusion.find("no relative rise is given"), std::string::npos) << conclusion;
  const auto dir = expect_honest_reports(r, "sub-resolution");
  const auto json = nlohmann::json::parse(test::read_file(dir / "audit.json"));
  EXPECT_TRUE(json["lenses"][1]["largest_relative_worsening"].is_null());
  EXPECT_EQ(json["lenses"][1]["rows_worse_by_resolution"], 2);
}

TEST(Verdict, TheMedianStaysWhereItsPrintedFigureDoesNotMoveAndFallsWhereItDoes) {
  const AuditResult stays = hand_made_audit({{1e-40, 2e-40}, {0, 1e-30}, {0, 0}});
  EXPECT_NE(audit_conclusion(stays).find("the median stays at 0.0 % (the baseline's 0.0 %)"), std::string::npos)
      << audit_conclusion(stays);
  expect_honest_reports(stays, "stays");
  const AuditResult falls = hand_made_audit({{0.6, 0.3}});
  EXPECT_NE(audit_conclusion(falls).find("the median falls to 30.0 % from the baseline's 60.0 % (-30.0 percentage "
                                         "points, 0.50× the baseline)"),
            std::string::npos) << audit_conclusion(falls);
}

namespace {

struct SvgText {
  double x, y, font_size;
  std::string anchor, text;
};

// The <text> elements of an SVG, entities read as the one character each stands for.
std::vector<SvgText> svg_texts(const std::string& svg, double default_font_size) {
  static const std::regex element(R"(<text ([^>]*)>([^<]*)</text>)");
  static const std::regex attribute(R"re(([a-z-]+)="([^"]*)")re");
  static const std::regex entity("&[a-z]+;");
  std::vector<SvgText> texts;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), element); it != std::sregex_iterator(); ++it) {
    SvgText t{0, 0, default_font_size, "start", std::regex_replace((*it)[2].str(), entity, "&")};
    const std::string attributes = (*it)[1].str();
    for (auto a = std::sregex_iterator(attributes.begin(), attributes.end(), attribute); a != std::sregex_iterator(); ++a) {
      const std::string name = (*a)[1].str(), value = (*a)[2].str();
      if (name == "x") t.x = std::stod(value);
      if (name == "y") t.y = std::stod(value);
      if (name == "font-size") t.font_size = std::stod(value);
      if (name == "text-anchor") t.anchor = value;
    }
    texts.push_back(t);
  }
  return texts;
}

}  // namespace

// Every title and label of the picture inside its canvas, at 0.6 em a character (sans-serif faces
// average nearer 0.5 em), and the distribution of every row drawn per lens with the plan's thresholds.
TEST(Picture, EveryTextFitsItsCanvasAndEveryRowIsInTheDistribution) {
  AuditResult r = hand_made_audit({{0.9, 0.6}, {0.2, 0.1}, {0.4, 0.45}, {0.7, 0.3}});
  r.plan.abandon_if.push_back({Lens::value_norm, Stat::rows_with_sink_above, 0.25, 0.0, {}, 3});
  r.plan.lenses.push_back(Lens::transformed_norm);  // the longest lens name
  for (AuditRow& row : r.rows) {
    row.sentence = "a-sentence-id-as-long-as-a-corpus-line & <its> \"quotes\"";
    row.by_lens.push_back(row.by_lens.back());
  }
  summarise_audit(r);
  r.total_rows = 1147483;  // a corpus's: the title then names the shown rows and the whole
  const auto dir = test::temp_dir("picture");
  write_audit_reports(r, dir);
  const std::string svg = test::read_file(dir / "sink-shares.svg");
  std::smatch size;
  ASSERT_TRUE(std::regex_search(svg, size, std::regex(R"re(width="([0-9]+)" height="([0-9]+)")re")));
  const double width = std::stod(size[1]), height = std::stod(size[2]);
  const std::vector<SvgText> texts = svg_texts(svg, 12);
  ASSERT_GT(texts.size(), 10u);
  for (const SvgText& t : texts) {
    const double extent = 0.6 * t.font_size *
                          double(std::count_if(t.text.begin(), t.text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
    const double start = t.anchor == "end" ? t.x - extent : t.anchor == "middle" ? t.x - extent / 2 : t.x;
    EXPECT_GE(start, 0) << t.text;
    EXPECT_LE(start + extent, width) << t.text;
    EXPECT_GE(t.y - t.font_size, 0) << t.text;
    EXPECT_LE(t.y, height) << t.text;
  }
  // One cumulative distribution per lens; under value_norm the plan's 25 % threshold with its 3 rows.
  const std::regex polyline("<polyline");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), polyline), std::sregex_iterator()), 3);
  EXPECT_NE(svg.find("4 rows: 3 past 25.0 %, 1 past 50.0 %, 0 past 90.0 %"), std::string::npos) << svg;
  EXPECT_NE(svg.find("&amp; &lt;its&gt;"), std::string::npos);
}

namespace {

const Checkpoint& planted() {
  static const Checkpoint ck = load_checkpoint(test::fixture("planted-sink"));
  return ck;
}

}  // namespace

// Both constructions: the planted sinks, and the saturated ones whose content attention rounds to 0
// in fp32 and whose sink carries no value in head 0.0.
struct Construction {
  const char* fixture;
  uint64_t seed;
  SinkHeads heads;
};
class ClosedForm : public ::testing::TestWithParam<Construction> {};
INSTANTIATE_TEST_SUITE_P(Constructions, ClosedForm,
                         ::testing::Values(Construction{"planted-sink", 3, SinkHeads::planted},
                                           Construction{"saturated-sink", 6, SinkHeads::saturated}),
                         [](const auto& info) { return info.param.heads == SinkHeads::planted ? "planted" : "saturated"; });

TEST_P(ClosedForm, EveryHeadShowsTheClosedFormAnswer) {
  const Checkpoint ck = load_checkpoint(test::fixture(GetParam().fixture));
  const PlantedSink plant(ck.config, GetParam().seed, GetParam().heads);
  size_t undefined = 0;
  const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
  const runtime::Encoder encoder(ck.config, ck.weights);
  for (const char* text : {"The nurse handed the doctor the scissors.", "Doctors heal.",
                           "Tokenization splits unaffable words into several pieces."}) {
    const Encoding enc = tokenizer.encode(text, 512);
    const Trace trace = encoder.forward(enc);
    const WordLayout layout = WordLayout::of(trace);
    const size_t T = enc.ids.size();
    for (int l = 0; l < 4; ++l)
      for (int h = 0; h < 4; ++h) {
        const auto answer = plant.answer(enc.ids, ck.vocab.cls_id(), ck.vocab.sep_id(), l, h);
        const Tensor& probs = *trace.find(lens_tensor(Lens::attention, l));
        for (size_t k = 0; k < T * T; ++k)
          ASSERT_NEAR(probs.values[size_t(h) * T * T + k], answer.attention[k], 2e-6) << l << "." << h;
        for (size_t j = 0; j < T; ++j) {
          ASSERT_NEAR(trace.find(fmt::format("layer.{}.value_norm", l))->values[size_t(h) * T + j],
                      answer.value_norm[j], 1e-5);
          ASSERT_NEAR(trace.find(fmt::format("layer.{}.transformed_norm", l))->values[size_t(h) * T + j],
                      answer.transformed_norm[j], 1e-5);
        }
        // The sink share of every word row, under each lens, from the closed form.
        for (int w = 0; w < static_cast<int>(layout.words.size()); ++w)
          for (Lens lens : kLenses) {
            const WordRow row = instrument_row(trace, layout, lens, w, HeadRule::parse(fmt::format("fixed: {}.{}", l, h)), 4, 4);
            // Every f(x_j) of these constructions is a multiple of the all-ones vector (synth/planted.h), so the
            // residual lens's LayerNorm centres every other token's term to 0: the row is the word's own term alone.
            if (lens == Lens::residual_layernorm) {
              ASSERT_TRUE(row.self_only()) << text << " " << l << "." << h;
              continue;
            }
            double sink = 0, total = 0;
            for (size_t i : layout.words[size_t(w)])
              for (size_t j = 0; j < T; ++j) {
                const double n = lens == Lens::attention ? 1.0
                                 : lens == Lens::value_norm ? answer.value_norm[j] : answer.transformed_norm[j];
                const double weight = answer.attention[i * T + j] * n;
                total += weight;
                if (j == 0 || j == T - 1) sink += weight;
              }
            // A row whose every weight is below fp32's range (content attention e^-120 on a sink
            // without value) has none in the runtime: undefined, where the truth's share is 0.
            if (!row.sink_share()) {
              ASSERT_LT(total, FLT_MIN) << text << " " << lens_name(lens) << " " << l << "." << h;
              ++undefined;
              continue;
            }
            ASSERT_NEAR(*row.sink_share(), sink / total, 1e-5) << text << " " << lens_name(lens) << " " << l << "." << h;
          }
      }
  }
  // Head 0.0 of the saturated construction, under both norm lenses, in every word of the three sentences.
  EXPECT_EQ(undefined, GetParam().heads == SinkHeads::saturated ? 2u * (8 + 3 + 8) : 0u);
}

TEST(SaturatedSink, TheAuditCountsRowsWithoutWeightAsUndefinedAndAbandons) {
  const StudyPlan plan = load_study_plan(test::source_dir() / "fixtures/studies/saturated-sink.yaml");
  const AuditResult r = run_audit(plan, load_checkpoint(test::fixture("saturated-sink")));
  ASSERT_EQ(r.stats.size(), 3u);
  EXPECT_EQ(r.stats[0].undefined, 0u);
  EXPECT_EQ(r.stats[0].above_90, r.total_rows);  // the head puts every row on the sink
  for (size_t li : {1, 2}) {
    EXPECT_EQ(r.stats[li].undefined, r.total_rows) << lens_name(r.stats[li].lens);
    EXPECT_EQ(r.stats[li].above_50, 0u);  // an undefined row is in no count of shares
  }
  // In the depth table, only head 0.0's rows have no weight, under both norm lenses: one per word row.
  for (size_t l = 0; l < r.depth.size(); ++l)
    for (size_t li : {0, 1, 2})
      EXPECT_EQ(r.depth[l].undefined[li], l == 0 && li > 0 ? r.total_rows : 0u) << l << " " << li;
  EXPECT_TRUE(r.abandon());
  EXPECT_NE(audit_conclusion(r).find("140 of 140 rows carry no weight at all"), std::string::npos) << audit_conclusion(r);
}

TEST(WordRows, NoWeightIsUndefinedButANaNIsAGateFailure) {
  WordRow empty{.word = 0, .head = {0, 0}, .cls = 0, .sep = 0, .content = {0.0, 0.0}};
  EXPECT_FALSE(empty.sink_share().has_value());
  WordRow nan = empty;
  nan.content[1] = NAN;
  EXPECT_THROW(nan.sink_share(), NonFiniteError);
  WordRow inf = empty;
  inf.cls = INFINITY;
  EXPECT_THROW(inf.sink_share(), NonFiniteError);
}

TEST(PlantedSink, SpecialTokensCarryThePlantedValueNormRatio) {
  const Checkpoint& ck = planted();
  const PlantedSink plant(ck.config, 3);
  const Encoding enc = BertTokenizer(ck.vocab, ck.tokenizer).encode("the the", 512);
  for (int l = 0; l < 4; ++l)
    for (int h = 0; h < 4; ++h) {
      const auto a = plant.answer(enc.ids, ck.vocab.cls_id(), ck.vocab.sep_id(), l, h);
      EXPECT_DOUBLE_EQ(a.value_norm[0], plant.head(l, h).value_ratio);
      EXPECT_NEAR(a.transformed_norm[0], plant.head(l, h).transformed_ratio, 1e-12);
    }
}

namespace {

double exact_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// The depth table reads every head of every layer, not only the heads the instrument opens: on the planted
// sinks, each layer's medians are the closed form's over every sentence × head (× word row). Bounds: the
// histograms' (Histogram::kShareWidth / 2, kRatioError) beside the runtime's fp32 distance from the closed
// form (1e-5, as in ClosedForm).
TEST(Depth, EveryLayerHoldsTheClosedFormMediansOverEveryHead) {
  const Checkpoint& ck = planted();
  const StudyPlan plan = load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml");
  const AuditResult r = run_audit(plan, ck);
  const PlantedSink plant(ck.config, 3);
  const BertTokenizer tokenizer(ck.vocab);
  const int L = ck.config.num_hidden_layers, H = ck.config.num_attention_heads;
  const std::vector<Sentence> sentences = load_sentences(plan.sentences);
  ASSERT_EQ(r.depth.size(), size_t(L));
  for (int l = 0; l < L; ++l) {
    std::vector<double> cls, sep;
    std::vector<std::vector<double>> shares(plan.lenses.size());
    for (const Sentence& s : sentences) {
      const Encoding enc = encode_sentence(tokenizer, s, 512, plan.sentences);
      const size_t T = enc.ids.size();
      for (int h = 0; h < H; ++h) {
        const auto answer = plant.answer(enc.ids, ck.vocab.cls_id(), ck.vocab.sep_id(), l, h);
        double content = 0;
        for (size_t t = 1; t + 1 < T; ++t) content += answer.value_norm[t] / double(T - 2);
        cls.push_back(answer.value_norm[0] / content);
        sep.push_back(answer.value_norm[T - 1] / content);
        for (size_t li = 0; li < plan.lenses.size(); ++li)
          for (int w = 0; w < static_cast<int>(enc.words.size()); ++w) {
            double sink = 0, total = 0;
            for (size_t i = 1; i + 1 < T; ++i) {
              if (enc.word_ids[i] != w) continue;
              for (size_t j = 0; j < T; ++j) {
                const Lens lens = plan.lenses[li];
                const double n = lens == Lens::attention ? 1.0
                                 : lens == Lens::value_norm ? answer.value_norm[j] : answer.transformed_norm[j];
                total += answer.attention[i * T + j] * n;
                if (j == 0 || j == T - 1) sink += answer.attention[i * T + j] * n;
              }
            }
            shares[li].push_back(sink / total);
          }
      }
    }
    const LayerDepth& d = r.depth[size_t(l)];
    EXPECT_EQ(d.cls_value.values.count(), sentences.size() * size_t(H));
    EXPECT_NEAR(d.cls_value.values.median(), exact_median(cls), exact_median(cls) * (Histogram::kRatioError + 1e-5)) << l;
    EXPECT_NEAR(d.sep_value.values.median(), exact_median(sep), exact_median(sep) * (Histogram::kRatioError + 1e-5)) << l;
    for (size_t li = 0; li < plan.lenses.size(); ++li) {
      EXPECT_EQ(d.shares[li].count(), r.total_rows * size_t(H)) << l << " " << lens_name(plan.lenses[li]);
      EXPECT_EQ(d.undefined[li], 0u);
      EXPECT_NEAR(d.shares[li].median(), exact_median(shares[li]), Histogram::kShareWidth / 2 + 1e-5)
          << l << " " << lens_name(plan.lenses[li]);
    }
  }
  // The report's Depth table and its JSON give these medians, per layer.
  const std::filesystem::path dir = test::temp_dir("depth");
  write_audit_reports(r, dir);
  const std::string md = test::read_file(dir / "audit.md");
  const auto json = nlohmann::json::parse(test::read_file(dir / "audit.json"));
  ASSERT_NE(md.find("## Depth: every head of every layer"), std::string::npos);
  ASSERT_EQ(json.at("depth").size(), size_t(L));
  for (int l = 0; l < L; ++l) {
    const LayerDepth& d = r.depth[size_t(l)];
    std::string line = fmt::format("| {} | {:.2f}× | {:.2f}× |", l, d.cls_value.values.median(), d.sep_value.values.median());
    for (size_t li = 0; li < plan.lenses.size(); ++li) {
      line += fmt::format(" {:.1f} % |", 100 * d.shares[li].median());
      EXPECT_EQ(json["depth"][size_t(l)]["sink_share"][li]["median_sink_share"].get<double>(), d.shares[li].median());
    }
    EXPECT_NE(md.find(line), std::string::npos) << line;
    EXPECT_EQ(json["depth"][size_t(l)]["value_cls"]["median"].get<double>(), d.cls_value.values.median());
  }
}

TEST(AuditRun, RecordsHashesAndReDerivesTheRecordedNumbers) {
  const auto plan_file = test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml";
  StudyPlan plan = load_study_plan(plan_file);
  const AuditResult r = run_audit(plan, planted());
  EXPECT_EQ(r.plan_sha256, sha256_file(plan_file));
  EXPECT_EQ(r.sentences_sha256, sha256_file(test::source_dir() / "fixtures/sentences.yaml"));
  EXPECT_EQ(r.model_sha256, planted().model_sha256);
  EXPECT_EQ(r.model_generator, "lenscheck make-fixture --seed 3 --planted-sink");
  ASSERT_GE(r.recorded.size(), 3u);
  EXPECT_TRUE(r.recorded_hold()) << r.recorded[0].problem;
  EXPECT_TRUE(r.abandon());  // the committed baseline's verdict

  // A recorded number that moved fails the re-derivation, naming what moved.
  const auto dir = test::temp_dir("recorded");
  test::write_file(dir / "moved.yaml",
                   "source: test\nnumbers:\n  - {sentence: scissors, word: nurse, lens: attention, target: the,"
                   " displayed: 0.3300, tolerance: 0.0005}\n");
  plan.recorded = dir / "moved.yaml";
  const AuditResult moved = run_audit(plan, planted());
  EXPECT_FALSE(moved.recorded_hold());
  EXPECT_NE(moved.recorded[0].problem.find("displayed 0.326"), std::string::npos) << moved.recorded[0].problem;
}

TEST(AuditRun, CliExitCodesFollowTheVerdict) {
  const auto dir = test::temp_dir("cli");
  const std::string plan = (test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml").string();
  auto r = test::run_cli("audit --plan '" + plan + "' --model '" + test::fixture("planted-sink").string() +
                         "' --out '" + (dir / "out").string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("audit: ABANDON"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir / "out/audit.md"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out/audit.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out/sink-shares.svg"));
  test::write_file(dir / "bad-plan.yaml", test::read_file(plan) + "abandon_when: []\n");
  r = test::run_cli("audit --plan '" + (dir / "bad-plan.yaml").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown key \"abandon_when\""), std::string::npos) << r.output;
  std::string unknown_lens = test::read_file(plan);
  unknown_lens.replace(unknown_lens.find("lenses: [attention"), 18, "lenses: [attn_res_ln");
  test::write_file(dir / "unknown-lens.yaml", unknown_lens);
  r = test::run_cli("audit --plan '" + (dir / "unknown-lens.yaml").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown lens \"attn_res_ln\" (known: attention, value_norm, transformed_norm, "
                          "residual_layernorm)"),
            std::string::npos)
      << r.output;
}

TEST(AuditRun, ACorpusStreamsInBatchesCountsEveryRowAndShowsTheFirstSentences) {
  const auto dir = test::temp_dir("corpus");
  // 40 sentences shown (the CLI shows 200) of 90: three batches of 32 on one thread, two of 64 on two.
  const size_t shown_sentences = 40, n = shown_sentences + 50;
  write_corpus(dir / "corpus.txt", n, 7);
  test::write_file(dir / "corpus.txt", test::read_file(dir / "corpus.txt") + "\n   \n");  // blank lines are skipped
  StudyPlan plan = load_study_plan(test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml");
  plan.sentences = dir / "corpus.txt";
  plan.recorded.reset();

  std::vector<std::pair<size_t, size_t>> progress;
  const AuditResult one =
      run_audit(plan, planted(), {.progress = [&](size_t done, size_t total) { progress.emplace_back(done, total); },
                                  .shown_sentences = shown_sentences});
  EXPECT_EQ(one.sentences, n);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), std::make_pair(n, n));
  EXPECT_GT(progress.size(), 1u);  // more than one batch

  const BertTokenizer tokenizer(planted().vocab, planted().tokenizer);
  size_t rows = 0, shown = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t words = tokenizer.encode(generated_sentence(7, i), 512).words.size();
    rows += words;
    if (i < shown_sentences) shown += words;
  }
  EXPECT_EQ(one.total_rows, rows);
  EXPECT_EQ(one.stats[0].rows, rows);
  EXPECT_EQ(one.rows.size(), shown);
  EXPECT_EQ(one.rows.front().sentence, "line-1");
  EXPECT_EQ(one.ratios.size(), shown_sentences * 16);
  EXPECT_EQ(one.cls_value.count, n * 16);

  // Two threads take batches twice as large; the fold in sentence order gives the same numbers.
  const AuditResult two = run_audit(plan, planted(), {.threads = 2, .shown_sentences = shown_sentences});
  for (size_t li = 0; li < one.stats.size(); ++li) {
    EXPECT_EQ(one.stats[li].median, two.stats[li].median);
    EXPECT_EQ(one.stats[li].worst.where, two.stats[li].worst.where);
    EXPECT_EQ(one.stats[li].above_50, two.stats[li].above_50);
    EXPECT_EQ(one.stats[li].worse, two.stats[li].worse);
  }
  for (size_t c = 0; c < one.criteria.size(); ++c) EXPECT_EQ(one.criteria[c].value, two.criteria[c].value);
}
