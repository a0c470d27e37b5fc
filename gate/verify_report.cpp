#include "gate/verify_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>

#include "common/report_file.h"

namespace lenscheck {

namespace {

std::string ulp_text(uint64_t ulp) {
  return ulp == std::numeric_limits<uint64_t>::max() ? "non-finite" : fmt::format("{}", ulp);
}

std::string result_text(const TensorSummary& t) {
  return t.pass() ? "pass" : (t.problem.empty() ? "**FAIL**" : "**FAIL**: " + t.problem);
}

// The local ratio's worst or median, or why there is none: "global only" where no sentence's
// recomputation was finite, "global only in N" where some were not.
std::string local_text(const TensorSummary& t, bool worst) {
  if (t.local.values.empty()) return "global only";
  const std::string ratio = worst ? fmt::format("**{:.2f}×**", t.local.max()) : fmt::format("{:.2f}×", t.local.median());
  const size_t global_only = t.compared - std::min(t.compared, t.local.values.size());
  return worst && global_only ? fmt::format("{} (global only in {})", ratio, global_only) : ratio;
}

std::string summary_table(const ComparisonSummary& c, const std::vector<TensorSummary>& rows) {
  if (c.rule == Rule::derived) {
    const std::string benchmark = benchmark_label(c.arithmetic);
    MarkdownTable table({"tensor", fmt::format("global: {} vs {}'s error, worst", c.candidate, benchmark), "median",
                         "local: worst", "median", "k", c.candidate + " error", benchmark + " error", "bound used",
                         "worst element", "result"});
    for (const TensorSummary& t : rows)
      table.row({fmt::format("`{}`", t.name), fmt::format("**{:.2f}×**", t.ratios.max()),
                 fmt::format("{:.2f}×", t.ratios.median()), local_text(t, true), local_text(t, false),
                 fmt::format("{:g}", t.tolerance.k), fmt::format("{:.3e}", t.candidate_error),
                 fmt::format("{:.3e}", t.benchmark_error), fmt::format("{:.1f} %", 100 * t.bound_used), t.worst,
                 result_text(t)});
    return table.markdown();
  }
  MarkdownTable table({"tensor", "atol", "rtol", "max abs", "max rel", "max ULP", "bound used", "worst element", "result"});
  for (const TensorSummary& t : rows)
    table.row({fmt::format("`{}`", t.name), fmt::format("{:.1e}", t.tolerance.atol),
               fmt::format("{:.1e}", t.tolerance.rtol), fmt::format("{:.3e}", t.max_abs),
               fmt::format("{:.3e}", t.max_rel), ulp_text(t.max_ulp), fmt::format("{:.1f} %", 100 * t.bound_used),
               t.worst, result_text(t)});
  return table.markdown();
}

std::string summary_section(const ComparisonSummary& c) {
  return fmt::format("## Release gate: {} vs {} ({} rule) — {}\n\nBy tensor family (layer indices collapsed):\n\n{}\n"
                     "<details><summary>Every tensor</summary>\n\n{}\n</details>\n\n",
                     c.candidate, c.reference, rule_name(c.rule), c.pass() ? "PASS" : "FAIL",
                     summary_table(c, c.families), summary_table(c, c.tensors));
}

nlohmann::ordered_json summary_json(const ComparisonSummary& c) {
  nlohmann::ordered_json j;
  j["rule"] = rule_name(c.rule);
  j["arithmetic"] = arithmetic_name(c.arithmetic);
  j["candidate"] = c.candidate;
  j["reference"] = c.reference;
  j["pass"] = c.pass();
  for (const auto* list : {&c.families, &c.tensors}) {
    auto& out = j[list == &c.families ? "families" : "tensors"];
    out = nlohmann::ordered_json::array();
    for (const TensorSummary& t : *list) {
      nlohmann::ordered_json row = {{"name", t.name}, {"pattern", t.tolerance.pattern}};
      if (c.rule == Rule::derived)
        row.update({{"k", t.tolerance.k}, {"max_error_ratio", t.ratios.max()}, {"median_error_ratio", t.ratios.median()},
                    {"local_judged", t.local.values.size()},
                    {"max_local_ratio", t.local.values.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(t.local.max())},
                    {"median_local_ratio", t.local.values.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(t.local.median())},
                    {"candidate_error", t.candidate_error}, {"benchmark_error", t.benchmark_error}});
      else
        row.update({{"atol", t.tolerance.atol}, {"rtol", t.tolerance.rtol}});
      row.update({{"compared_sentences", t.compared}, {"failed_sentences", t.failed}, {"max_abs", t.max_abs},
                  {"max_rel", t.max_rel}, {"max_ulp", t.max_ulp}, {"bound_used", t.bound_used}, {"worst", t.worst},
                  {"problem", t.problem}, {"pass", t.pass()}});
      out.push_back(std::move(row));
    }
  }
  return j;
}

// A span the local verdict judged (TensorComparison::span), over every sentence.
struct SpanRow {
  std::string scope;  // local_scope
  double worst = 0, k = 0;
  size_t sentences = 0, failed = 0;
};

// Every span, in the forward order of the first sentence that has it.
std::vector<SpanRow> span_rows(const VerifyResult& r) {
  std::vector<SpanRow> rows;
  for (const SentenceVerdict& v : r.sentences)
    for (const TensorComparison& t : v.gate.tensors) {
      if (!t.local || t.span.through.empty()) continue;
      const std::string scope = local_scope(t);
      auto row = std::find_if(rows.begin(), rows.end(), [&](const SpanRow& s) { return s.scope == scope; });
      if (row == rows.end()) row = rows.insert(rows.end(), SpanRow{scope, 0, t.tolerance.k, 0, 0});
      row->worst = std::max(row->worst, t.local->ratio);
      ++row->sentences;
      if (t.fails_locally()) ++row->failed;
    }
  return rows;
}

// The tensors the candidate lacks that some judged span runs through.
std::set<std::string> spanned_tensors(const VerifyResult& r) {
  std::set<std::string> through;
  for (const SentenceVerdict& v : r.sentences)
    for (const TensorComparison& t : v.gate.tensors)
      if (t.local) through.insert(t.span.through.begin(), t.span.through.end());
  return through;
}

// What became of a tensor the candidate cannot give: "spanned" (inside a span judged locally) or "missing"
// (in no span; its op may still lie inside the next tensor's, as attention.pre_norm's inside attention.output's).
std::string tensor_state(const std::string& tensor, const std::set<std::string>& spanned) {
  return spanned.count(tensor) ? "spanned" : "missing";
}

std::string spans_section(const std::vector<SpanRow>& rows) {
  if (rows.empty()) return "";
  MarkdownTable table({"span", "local: worst", "k", "sentences", "failed"});
  for (const SpanRow& s : rows)
    table.row({fmt::format("`{}`", s.scope), fmt::format("**{:.2f}×**", s.worst), fmt::format("{:g}", s.k),
               fmt::to_string(s.sentences), s.failed ? fmt::format("**{}**", s.failed) : "0"});
  return "## Spans\n\nWhere the candidate's trace lacks a tensor, the local verdict recomputes the span from the "
         "last tensors it holds through the missing ones to the next tensor it holds, in the declared scheme with "
         "the checkpoint's weights, against the span's own rounding spread (the same statistic, k and probes as "
         "for one op). The missing tensors are not judged themselves; each of their elements is inside a judged "
         "span.\n\n" +
         table.markdown() + "\n";
}

nlohmann::ordered_json comparison_json(const TraceComparison& c) {
  nlohmann::ordered_json j;
  j["pass"] = c.pass();
  j["problem"] = c.problem;
  const TensorComparison* first = c.first_divergence();
  j["first_divergence"] = first ? nlohmann::ordered_json(first->name) : nlohmann::ordered_json();
  const TensorComparison* blamed = c.first_local_failure();
  j["first_local_failure"] = blamed ? nlohmann::ordered_json(blamed->name) : nlohmann::ordered_json();
  j["blamed"] = blamed ? nlohmann::ordered_json(local_scope(*blamed)) : nlohmann::ordered_json();
  j["tensors"] = nlohmann::ordered_json::array();
  for (const TensorComparison& t : c.tensors) {
    nlohmann::ordered_json row = {{"name", t.name}, {"elements", t.elements}, {"failing", t.failing},
                                  {"non_finite", t.non_finite}, {"max_abs", t.max_abs},
                                  {"max_rel", t.max_rel}, {"max_ulp", t.max_ulp},
                                  {"worst_index", t.worst}, {"worst_label", t.worst_label},
                                  {"worst_candidate", t.worst_candidate},
                                  {"worst_reference", t.worst_reference}, {"bound_used", t.bound_used}};
    if (t.derived)
      row["derived"] = {{"candidate_error", t.derived->candidate_error}, {"benchmark_error", t.derived->benchmark_error},
                        {"floor", t.derived->floor}, {"ratio", t.derived->ratio}, {"k", t.tolerance.k}};
    if (t.local)
      row["local"] = {{"candidate_error", t.local->candidate_error}, {"benchmark_error", t.local->benchmark_error},
                      {"floor", t.local->floor}, {"ratio", t.local->ratio}, {"k", t.tolerance.k}};
    if (!t.span.through.empty()) row["span"] = {{"from", t.span.from}, {"through", t.span.through}};
    row.update({{"problem", t.problem}, {"pass", t.pass}});
    j["tensors"].push_back(std::move(row));
  }
  return j;
}

}  // namespace

bool in_detail(const VerifyResult& r, size_t sentence) {
  return sentence < kSentencesInDetail || !r.sentences.at(sentence).gate.pass();
}

std::string failure_text(const TensorComparison& t, Arithmetic arithmetic) {
  if (!t.problem.empty()) return t.problem;
  if (!t.derived)
    return fmt::format("{} of {} elements outside atol {:.1e} rtol {:.1e}; worst {}: {:.9g} vs {:.9g}", t.failing,
                       t.elements, t.tolerance.atol, t.tolerance.rtol, t.worst_label, t.worst_candidate,
                       t.worst_reference);
  std::string s;
  if (t.off_format > 0)
    s = fmt::format("local: {} of {} values are not {} values, which the scheme stores it in; ", t.off_format,
                    t.elements, arithmetic_name(arithmetic));
  else if (t.fails_locally())
    s = fmt::format("local: error {:.3g}x the {}'s own rounding spread in {} (k {:g}), {} recomputed from the "
                    "candidate's own inputs: error {:.3g}, spread {:.3g}, floor {:.3g}; ", t.local->ratio,
                    t.span.through.empty() ? "op" : "span", arithmetic_name(arithmetic), t.tolerance.k,
                    t.span.through.empty() ? "the op" : "the " + local_scope(t), t.local->candidate_error,
                    t.local->benchmark_error, t.local->floor);
  return s + fmt::format("global: error {:.3g}x {}'s error (k {:g}): error {:.3g}, libtorch's {:.3g}, floor {:.3g}; "
                         "worst {}: {:.9g} vs {:.9g}", t.derived->ratio, benchmark_label(arithmetic), t.tolerance.k,
                         t.derived->candidate_error, t.derived->benchmark_error, t.derived->floor, t.worst_label,
                         t.worst_candidate, t.worst_reference);
}

std::string verify_heat_map(const VerifyResult& r) {
  // Rows: "embeddings", then each layer; columns: the families, layer index stripped.
  static const std::regex layer_name(R"(^layer\.(\d+)\.(.*)$)");
  std::vector<std::string> columns;
  std::map<std::pair<int, std::string>, const TensorSummary*> cells;
  int layers = 0;
  for (const TensorSummary& t : r.gate.tensors) {
    std::smatch m;
    int row = -1;
    std::string column = t.name;
    if (std::regex_match(t.name, m, layer_name)) {
      row = std::stoi(m[1]);
      column = m[2];
      layers = std::max(layers, row + 1);
    }
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) columns.push_back(column);
    cells[{row, column}] = &t;
  }
  const int cell_w = 46, cell_h = 22, left = 90, top = 170, legend = 40;
  const int width = left + cell_w * int(columns.size()) + 20, height = top + cell_h * (layers + 1) + legend + 20;
  // Green at 0 through yellow at half the bound to red at the bound; past it, dark red.
  auto colour = [](double used) {
    if (!std::isfinite(used) || used > 1) return std::string("#7f0000");
    const double t = std::clamp(used, 0.0, 1.0);
    const int red = int(t < 0.5 ? 510 * t : 255), green = int(t < 0.5 ? 200 : 200 * (1 - t) * 2);
    return fmt::format("#{:02x}{:02x}40", red, green);
  };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"18\" font-size=\"13\">{} vs {} ({} rule): bound used by the worst sentence, per layer and "
      "tensor</text>\n",
      width, height, xml_escaped(r.gate.candidate), xml_escaped(r.gate.reference), rule_name(r.gate.rule));
  for (size_t c = 0; c < columns.size(); ++c) {
    const int x = left + int(c) * cell_w + cell_w / 2;
    s += fmt::format("<text transform=\"translate({},{}) rotate(-60)\">{}</text>\n", x, top - 6, xml_escaped(columns[c]));
  }
  for (int row = -1; row < layers; ++row) {
    const int y = top + (row + 1) * cell_h;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, y + 15,
                     row < 0 ? "embeddings" : fmt::format("layer {}", row));
    for (size_t c = 0; c < columns.size(); ++c) {
      const auto it = cells.find({row, columns[c]});
      if (it == cells.end()) continue;
      const TensorSummary& t = *it->second;
      const double used = t.problem.empty() ? t.bound_used : std::numeric_limits<double>::infinity();
      const std::string label = !t.problem.empty() ? "!" : used >= 10 ? ">10" : fmt::format("{:.0f}%", 100 * used);
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"white\"><title>{}: "
                       "{}</title></rect>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                       left + int(c) * cell_w, y, cell_w, cell_h, colour(used), xml_escaped(t.name),
                       xml_escaped(t.problem.empty() ? fmt::format("{:.1f} % of the bound at {}", 100 * used, t.worst)
                                                    : t.problem),
                       left + int(c) * cell_w + cell_w / 2, y + 15, used > 0.75 ? "white" : "black", label);
    }
  }
  const int ly = top + (layers + 1) * cell_h + 20;
  for (int i = 0; i <= 10; ++i)
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"12\" fill=\"{}\"/>\n", left + i * 20, ly,
                     colour(i / 10.0));
  s += fmt::format("<text x=\"{}\" y=\"{}\">0 %</text><text x=\"{}\" y=\"{}\">100 % of the bound (past it: dark "
                   "red, the gate fails)</text>\n</svg>\n",
                   left - 30, ly + 10, left + 11 * 20 + 6, ly + 10);
  return s;
}

// The tensors the candidate could not give, by family, reason and state, then those derived, by family:
// "`layer.*.attention.probs` (4 layers): inside com.microsoft.Attention; spanned".
std::string unreachable_lines(const VerifyResult& r, const std::set<std::string>& spanned) {
  std::vector<std::pair<std::string, size_t>> groups;  // its line less the count → tensors
  auto add = [&](const std::string& family, const std::string& rest) {
    const std::string key = fmt::format("`{}`\t{}", family, rest);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) groups.push_back({key, 1});
    else ++it->second;
  };
  for (const Unreachable& u : r.unreachable)
    add(family_of(u.tensor), fmt::format("{}; {}", u.why, tensor_state(u.tensor, spanned)));
  for (const std::string& d : r.derived) add(family_of(d), "derived");
  std::string s;
  for (const auto& [key, count] : groups) {
    const size_t tab = key.find('\t');
    s += fmt::format("  - {}{}: {}\n", key.substr(0, tab),
                     key.rfind("`layer.*.", 0) == 0 ? fmt::format(" ({} layers)", count) : "", key.substr(tab + 1));
  }
  return s;
}

void write_verify_markdown(const VerifyResult& r, const std::filesystem::path& file) {
  std::string s = fmt::format("# lenscheck verify — {}\n\n", r.pass() ? "PASS" : "FAIL");
  s += fmt::format("- build: `{}`\n- model: `{}` ({} SHA-256 `{}`)\n"
                   "- sentences: `{}` ({} sentences)\n- tolerances: `{}`\n- oracle: {}\n",
                   r.version, r.model_dir, r.weights_file, r.model_sha256, r.sentences_file, r.sentences.size(),
                   r.tolerances_file, r.backend);
  if (r.gate.rule == Rule::derived)
    s += fmt::format("- declared arithmetic: {} (the benchmark: {})\n", arithmetic_name(r.gate.arithmetic),
                     benchmark_label(r.gate.arithmetic));
  for (const std::string& n : r.notes) s += fmt::format("- note: {}\n", n);
  if (!r.weights_differ.empty())
    s += fmt::format("- **weights: not the checkpoint's**, so no sentence was run: {} parameters differ; the first, {}\n",
                     r.weights_differ.size(), r.weights_differ.front());
  const std::vector<SpanRow> spans = span_rows(r);
  if (!r.unreachable.empty() || !r.derived.empty()) {
    const std::set<std::string> spanned = spanned_tensors(r);
    const size_t inside = size_t(std::count_if(r.unreachable.begin(), r.unreachable.end(),
                                               [&](const Unreachable& u) { return spanned.count(u.tensor) > 0; }));
    s += fmt::format("- tensors judged: {} families (the table below), {} tensors derived by lenscheck from the "
                     "candidate's own; not judged themselves, {} tensors the candidate cannot give: {} spanned "
                     "(inside a span judged locally, the spans below), {} missing (in no span):\n{}",
                     r.gate.families.size(), r.derived.size(), r.unreachable.size(), inside,
                     r.unreachable.size() - inside, unreachable_lines(r, spanned));
  }
  s += r.gate.rule == Rule::derived
           ? fmt::format("\nThe derived rule: per tensor and sentence, the candidate's error against the fp64 oracle (the "
             "truth) over {}'s on the same model and input. An error is the rms over the tensor of "
             "|x − truth| / (|truth| + rms(truth)); libtorch's is the largest over the model as given and three "
             "rounding probes (weights and LayerNorm outputs moved one step of their format), never below floor · "
             "FLT_EPSILON. Above k fails; \"bound used\" is the worst ratio over k. NaN and Inf are never close. "
             "The error columns are those rms errors. Tokens are written `token@position`.\n\n",
             benchmark_label(r.gate.arithmetic))
           : "\nThe absolute rule: |a − b| ≤ atol + rtol·|b|, b the fp32 oracle; NaN and Inf are never close. "
             "\"bound used\" is the worst element's |a − b| / (atol + rtol·|b|): above 100 % fails. "
             "Tokens are written `token@position`.\n\n";
  std::filesystem::path map = file;
  map.replace_extension(".svg");
  write_text_file(map, verify_heat_map(r));
  s += fmt::format("![bound used per layer and tensor family]({})\n\n", map.filename().string());
  s += summary_section(r.gate);
  s += spans_section(spans);
  if (r.display) s += display_markdown(*r.display, arithmetic_name(r.gate.arithmetic));
  s += "## Sentences\n\nThe first divergence is the first tensor in forward order that fails; the op to blame, the "
       "first that fails locally (its op, or its span, recomputed from the candidate's own inputs disagrees).\n\n";
  MarkdownTable sentences({"id", "tokens", "result", "first divergence", "op to blame"});
  size_t not_shown = 0;
  for (size_t i = 0; i < r.sentences.size(); ++i) {
    if (!in_detail(r, i)) {
      ++not_shown;
      continue;
    }
    const SentenceVerdict& v = r.sentences[i];
    const TensorComparison* first = v.gate.first_divergence();
    const TensorComparison* blamed = v.gate.first_local_failure();
    sentences.row({v.sentence.id, fmt::to_string(v.tokens.size()), v.gate.pass() ? "pass" : "**FAIL**",
                   !v.gate.problem.empty() ? v.gate.problem
                   : first                 ? fmt::format("`{}{}`", first->name, first->worst_label)
                                           : "—",
                   blamed ? fmt::format("`{}`", local_scope(*blamed)) : "—"});
  }
  s += sentences.markdown();
  if (not_shown)
    s += fmt::format("\n… and {} more sentences, each passing (the first {} and every failing one are listed; the "
                     "JSON has every sentence's verdict).\n",
                     not_shown, kSentencesInDetail);
  write_text_file(file, s);
}

void write_verify_json(const VerifyResult& r, const std::filesystem::path& file) {
  nlohmann::ordered_json j;
  j["tool"] = "lenscheck verify";
  j["pass"] = r.pass();
  j["build"] = r.version;
  j["oracle_backend"] = r.backend;
  j["model"] = {{"dir", r.model_dir}, {"weights_file", r.weights_file}, {"sha256", r.model_sha256}, {"notes", r.notes}};
  j["sentences_file"] = r.sentences_file;
  j["tolerances_file"] = r.tolerances_file;
  j["gate"] = summary_json(r.gate);
  const std::set<std::string> spanned = spanned_tensors(r);
  for (const Unreachable& u : r.unreachable)
    j["unreachable"].push_back({{"tensor", u.tensor}, {"why", u.why}, {"state", tensor_state(u.tensor, spanned)}});
  j["derived"] = r.derived;
  j["spans"] = nlohmann::ordered_json::array();
  for (const SpanRow& s : span_rows(r))
    j["spans"].push_back({{"span", s.scope}, {"max_local_ratio", s.worst}, {"k", s.k}, {"sentences", s.sentences},
                          {"failed_sentences", s.failed}});
  for (const std::string& w : r.weights_differ) j["weights_differ"].push_back(w);
  if (r.display) {
    const DisplayVerdict& d = *r.display;
    nlohmann::ordered_json dj = {{"pass", d.pass()}, {"plan", d.instrument.plan_file.string()},
                                 {"display_file", d.instrument.display_file.string()},
                                 {"head_rule", d.instrument.head_rule.label()},
                                 {"decimals", d.instrument.display.decimals},
                                 {"top_targets", d.instrument.display.top_targets},
                                 {"sink_flags", d.instrument.display.sink_flags}, {"rows", d.rows}, {"wrong", d.wrong()},
                                 {"printed_differently", d.differing()}, {"within_arithmetic_error", d.explained()},
                                 {"undecidable", d.undecidable()},
                                 {"headline", d.headline(arithmetic_name(r.gate.arithmetic))},
                                 {"flagged", nlohmann::ordered_json::array()}};
    for (const DisplayRow& row : d.flagged) {
      nlohmann::ordered_json items = nlohmann::ordered_json::array();
      for (const DisplayItem& i : row.items)
        items.push_back({{"what", i.what}, {"candidate", i.candidate}, {"truth", i.truth}, {"differs", i.differs},
                         {"decidable", i.decidable}, {"margin", i.margin}, {"error", i.error}});
      dj["flagged"].push_back({{"sentence", row.sentence}, {"word", row.word}, {"at", row.at},
                               {"lens", lens_name(row.lens)}, {"wrong", row.wrong()}, {"items", items}});
    }
    j["display"] = std::move(dj);
  }
  j["sentences"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.sentences.size(); ++i) {
    const SentenceVerdict& v = r.sentences[i];
    if (in_detail(r, i))
      j["sentences"].push_back(
          {{"id", v.sentence.id}, {"text", v.sentence.text}, {"tokens", v.tokens}, {"gate", comparison_json(v.gate)}});
    else
      j["sentences"].push_back({{"id", v.sentence.id}, {"tokens", v.tokens.size()}, {"pass", v.gate.pass()}});
  }
  write_text_file(file, j.dump(1) + "\n");
}

void write_verify_junit(const VerifyResult& r, const std::filesystem::path& file) {
  size_t tests = 0, failures = 0;
  std::string suites;
  for (size_t i = 0; i < r.sentences.size(); ++i) {
    const SentenceVerdict& v = r.sentences[i];
    std::string cases;
    size_t suite_failures = 0, suite_tests = 0;
    auto add_case = [&](const std::string& name, bool pass, const std::string& message) {
      ++tests;
      ++suite_tests;
      cases += fmt::format("    <testcase classname=\"verify.{}\" name=\"{}\">", xml_escaped(v.sentence.id),
                           xml_escaped(name));
      if (!pass) {
        ++failures;
        ++suite_failures;
        cases += fmt::format("<failure message=\"{}\"/>", xml_escaped(message));
      }
      cases += "</testcase>\n";
    };
    if (!v.gate.problem.empty()) add_case("(whole trace)", false, v.gate.problem);
    if (in_detail(r, i))
      for (const TensorComparison& t : v.gate.tensors) add_case(t.name, t.pass, failure_text(t, r.gate.arithmetic));
    else  // a passing sentence beyond the first: one case for its whole trace
      add_case("gate", true, "");
    if (r.display) {
      std::string wrong;
      for (const DisplayRow& row : v.display)
        if (row.wrong()) wrong += fmt::format("{}{}@{} ({})", wrong.empty() ? "" : "; ", row.word, row.at, lens_name(row.lens));
      add_case("display", wrong.empty() && v.display_rows > 0,
               v.display_rows == 0 ? std::string("no row compared") : "the instrument shows other numbers for " + wrong);
    }
    suites += fmt::format("  <testsuite name=\"verify.{}\" tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n",
                          xml_escaped(v.sentence.id), suite_tests, suite_failures, cases);
  }
  // What was not judged as the candidate gave it: each tensor it cannot give a skipped case saying whether
  // a span covers it, the tensors lenscheck derived a property.
  if (!r.unreachable.empty() || !r.derived.empty()) {
    const std::set<std::string> spanned = spanned_tensors(r);
    std::string cases;
    for (const Unreachable& u : r.unreachable)
      cases += fmt::format(
          "    <testcase classname=\"verify.tensors\" name=\"{}\"><skipped message=\"{}\"/></testcase>\n",
          xml_escaped(u.tensor), xml_escaped(fmt::format("{}; {}", u.why, tensor_state(u.tensor, spanned))));
    tests += r.unreachable.size();
    suites += fmt::format("  <testsuite name=\"verify.tensors\" tests=\"{}\" failures=\"0\" skipped=\"{}\">\n"
                          "    <properties><property name=\"derived\" value=\"{}\"/></properties>\n{}  </testsuite>\n",
                          r.unreachable.size(), r.unreachable.size(),
                          xml_escaped(fmt::format("{}", fmt::join(r.derived, ", "))), cases);
  }
  // A candidate of other weights runs no sentence: its one test case fails, so that CI does not read an
  // empty suite as a pass.
  if (!r.weights_differ.empty()) {
    ++tests;
    ++failures;
    suites += fmt::format("  <testsuite name=\"verify.weights\" tests=\"1\" failures=\"1\">\n    <testcase "
                          "classname=\"verify.weights\" name=\"weights\"><failure message=\"{}\"/></testcase>\n"
                          "  </testsuite>\n",
                          xml_escaped(fmt::format("{} parameters differ from the checkpoint's; the first, {}",
                                                  r.weights_differ.size(), r.weights_differ.front())));
  }
  write_text_file(file, fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lenscheck "
                                    "verify\" tests=\"{}\" failures=\"{}\">\n{}</testsuites>\n",
                                    tests, failures, suites));
}

}  // namespace lenscheck
