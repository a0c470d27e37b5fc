#include "gate/calibrate_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/report_file.h"

namespace lenscheck {

namespace {

std::string delta_text(double d) { return d == 0 ? "none" : fmt::format("{:.0e}", d); }

std::string families_table(const std::map<std::string, FamilyRatios>& families) {
  MarkdownTable table({"tensor family", "tensors", "global: worst ratio", "99th percentile", "median",
                       "floor binding", "local: judged", "worst ratio", "99th percentile", "median", "floor binding"});
  auto ratio = [](double r) { return fmt::format("{:.2f}×", r); };
  for (const auto& [name, f] : families) {
    std::vector<std::string> cells = {fmt::format("`{}`", name),        fmt::to_string(f.ratios.values.size()),
                                      ratio(f.ratios.max()),            ratio(f.ratios.quantile(0.99)),
                                      ratio(f.ratios.quantile(0.5)),    fmt::to_string(f.floored),
                                      fmt::to_string(f.local.values.size())};
    if (f.local.values.empty())
      cells.insert(cells.end(), {"—", "—", "—", "—"});
    else
      cells.insert(cells.end(), {ratio(f.local.max()), ratio(f.local.quantile(0.99)), ratio(f.local.quantile(0.5)),
                                 fmt::to_string(f.local_floored)});
    table.row(cells);
  }
  return table.markdown();
}

std::string candidate_section(const CalibrationResult& r) {
  const CalibrationOptions& o = r.options;
  std::string s = fmt::format("## {}, declared {}\n\n- false alarms: **{}**\n- benchmark: {} and its rounding probes\n\n",
                              o.candidate.name, arithmetic_name(o.candidate.arithmetic), r.false_alarms(),
                              benchmark_label(o.candidate.arithmetic));
  size_t sweep_failed = 0, max_layers = 0, max_width = 0, max_tokens = 0;
  double max_gain = 0;
  for (const SweepResult& m : r.sweep) {
    sweep_failed += !m.pass;
    max_layers = std::max(max_layers, size_t(m.model.config.num_hidden_layers));
    max_width = std::max(max_width, size_t(m.model.config.hidden_size));
    max_tokens = std::max(max_tokens, m.model.input.ids.size());
    if (m.model.statistics.outlier_dims > 0) max_gain = std::max(max_gain, m.model.statistics.outlier_gain);
  }
  s += fmt::format("### False alarms on random models\n\n"
                   "{} random models (seed {}), each judged on one random sentence: **{} failed**. Layers up to {}, "
                   "width up to {}, up to {} tokens, weight spread 0.02–0.08, LayerNorm gain outliers up to {:.1f}. "
                   "{:.1f} s.\n\nThe error ratios per family, over every model and layer (fixtures/tolerances.yaml): "
                   "global, the candidate's error against the fp64 truth over the benchmark's; local, its error "
                   "against each op recomputed from its own inputs over the op's own rounding spread; \"floor "
                   "binding\" counts tensors whose benchmark error was below the floor:\n\n{}\n",
                   r.sweep.size(), o.seed, sweep_failed, max_layers, max_width, max_tokens, max_gain,
                   r.sweep_seconds, families_table(r.sweep_families));
  std::vector<const SweepResult*> closest;
  for (const SweepResult& m : r.sweep) closest.push_back(&m);
  std::sort(closest.begin(), closest.end(),
            [](const SweepResult* a, const SweepResult* b) { return a->worst_bound_used > b->worst_bound_used; });
  closest.resize(std::min<size_t>(closest.size(), 10));
  MarkdownTable nearest(
      {"seed", "layers × width (heads)", "tokens", "weight spread", "outliers", "bound used", "at", "result"});
  for (const SweepResult* m : closest) {
    const SweepModel& model = m->model;
    nearest.row({fmt::to_string(model.seed),
                 fmt::format("{} × {} ({})", model.config.num_hidden_layers, model.config.hidden_size,
                             model.config.num_attention_heads),
                 fmt::to_string(model.input.ids.size()), fmt::format("{:.3f}", model.statistics.weight_sd),
                 fmt::format("{} × {:.1f}", model.statistics.outlier_dims, model.statistics.outlier_gain),
                 fmt::format("{:.1f} %", 100 * m->worst_bound_used), fmt::format("`{}`", m->worst_at),
                 m->pass ? "pass" : "**FALSE ALARM**: " + m->failure});
  }
  s += "The models nearest to a false alarm:\n\n" + nearest.markdown();

  MarkdownTable fixtures({"fixture", "SHA-256", "sentences", "false alarms"});
  for (const FixtureResult& f : r.fixtures)
    fixtures.row({fmt::format("`{}`", f.name), fmt::format("`{}`", f.sha256.substr(0, 16)),
                  fmt::to_string(f.sentences), fmt::format("**{}**", f.failed_sentences)});
  s += "\n### Fixtures\n\n" + fixtures.markdown();
  for (const FixtureResult& f : r.fixtures)
    s += fmt::format("\n#### `{}`: error ratios of the fault-free candidate\n\n{}", f.name, families_table(f.families));

  std::vector<std::string> header = {"fixture", "fault", "threshold"};
  for (double d : o.deltas) header.push_back("δ = " + delta_text(d));
  MarkdownTable detection(header);
  for (const FixtureResult& f : r.fixtures)
    for (const auto& [fault, outcomes] : f.detection) {
      std::vector<std::string> cells = {fmt::format("`{}`", f.name), fmt::format("`{}`", fault),
                                        fmt::format("**{}**", delta_text(CalibrationResult::threshold(o.deltas, outcomes)))};
      for (const auto& [killed, used] : outcomes)
        cells.push_back(killed ? fmt::format("killed ({:.3g}×)", used) : fmt::format("survived ({:.0f} %)", 100 * used));
      detection.row(cells);
    }
  return s + "\n### Detection threshold\n\n" + detection.markdown();
}


}  // namespace

void write_calibration_markdown(const std::vector<CalibrationResult>& results, const std::filesystem::path& file) {
  if (results.empty()) throw std::invalid_argument("no calibration to write");
  const CalibrationResult& first = results.front();
  size_t alarms = 0;
  for (const CalibrationResult& r : results) alarms += r.false_alarms();
  std::string s = fmt::format("# lenscheck calibrate — the derived gate as a classifier\n\n"
                              "- build: `{}`\n- oracle: {}\n- tolerances: `{}`\n- false alarms: **{}** over {} "
                              "candidate(s)\n\n",
                              first.version, first.backend, first.tolerances_file, alarms, results.size());
  s += "Each candidate declares the scheme it computes in (README, \"Schemes\"), and each tensor is judged twice, "
       "with the same k for every scheme: globally, against the fp64 truth with libtorch computing in the scheme "
       "as the benchmark (fp32 natively, the others simulated in fp64, oracle/oracle.h); locally, against its op "
       "recomputed in the scheme from the candidate's own inputs, with the op's own rounding spread as the "
       "benchmark. False alarms: the fault-free candidate on the random-model sweep and on every sentence of every "
       "fixture. Detection: graded faults, judged on every sentence by both verdicts (the mutant is killed when "
       "one sentence fails the gate); the threshold is the smallest δ at which the fault and every larger one were "
       "killed:\n\n"
       "- `weight-scaled`: the last layer's W_V times (1 + δ)\n"
       "- `bias-shifted`: the last layer's FFN output bias plus δ · rms(bias), signs alternating\n"
       "- `layer-norm-eps`: every LayerNorm's eps plus δ\n"
       "- `probs-scaled`: the last layer's head 0 attention probabilities times (1 + δ) (in fp32: 1 + δ rounds "
       "to the nearest float); a fault of the runtime's own seam, which another implementation does not have\n\n"
       "Weight and eps faults are applied to the checkpoint, so every candidate computes them as it computes "
       "anything (ONNX Runtime from the exported faulty checkpoint).\n\n";
  MarkdownTable summary({"candidate", "declared", "sweep models", "sweep false alarms", "fixture sentences",
                         "fixture false alarms", "worst bound used (sweep)"});
  for (const CalibrationResult& r : results) {
    size_t sweep_failed = 0, sentences = 0, fixture_failed = 0;
    double worst = 0;
    for (const SweepResult& m : r.sweep) {
      sweep_failed += !m.pass;
      worst = std::max(worst, m.worst_bound_used);
    }
    for (const FixtureResult& f : r.fixtures) {
      sentences += f.sentences;
      fixture_failed += f.failed_sentences;
    }
    summary.row({r.options.candidate.name, arithmetic_name(r.options.candidate.arithmetic),
                 fmt::to_string(r.sweep.size()), fmt::format("**{}**", sweep_failed), fmt::to_string(sentences),
                 fmt::format("**{}**", fixture_failed), fmt::format("{:.1f} %", 100 * worst)});
  }
  s += "## Summary\n\n" + summary.markdown();
  std::vector<std::string> header = {"fixture", "fault"};
  for (const CalibrationResult& r : results)
    header.push_back(fmt::format("{} ({})", r.options.candidate.name, arithmetic_name(r.options.candidate.arithmetic)));
  MarkdownTable thresholds(header);
  for (const FixtureResult& f : first.fixtures)
    for (GradedFault g : graded_faults()) {
      std::vector<std::string> cells = {fmt::format("`{}`", f.name), fmt::format("`{}`", fault_name(g))};
      for (const CalibrationResult& r : results) {
        const auto fixture = std::find_if(r.fixtures.begin(), r.fixtures.end(),
                                          [&](const FixtureResult& x) { return x.dir == f.dir; });
        const bool measured = fixture != r.fixtures.end() && fixture->detection.count(fault_name(g));
        cells.push_back(measured ? fmt::format("**{}**", delta_text(CalibrationResult::threshold(
                                                             r.options.deltas, fixture->detection.at(fault_name(g)))))
                                 : "—");
      }
      thresholds.row(cells);
    }
  s += "\nDetection thresholds (δ), per fixture and fault, for each candidate:\n\n" + thresholds.markdown();
  s += "\n(—: not measured; a runtime fault for another implementation.)\n\n";
  for (const CalibrationResult& r : results) s += candidate_section(r);
  s += "\n(killed: the bound used on the sentence that failed, as a multiple of the bound; survived: the largest "
       "bound used over every sentence.)\n";
  write_text_file(file, s);
}

namespace {

nlohmann::ordered_json candidate_json(const CalibrationResult& r) {
  nlohmann::ordered_json j;
  j["candidate"] = r.options.candidate.name;
  j["arithmetic"] = arithmetic_name(r.options.candidate.arithmetic);
  j["false_alarms"] = r.false_alarms();
  j["deltas"] = r.options.deltas;
  auto families = [](const std::map<std::string, FamilyRatios>& fs) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [name, f] : fs)
      out[name] = {{"tensors", f.ratios.values.size()}, {"max", f.ratios.max()},
                   {"p99", f.ratios.quantile(0.99)}, {"median", f.ratios.quantile(0.5)}, {"floor_binding", f.floored},
                   {"local", {{"tensors", f.local.values.size()}, {"max", f.local.max()}, {"p99", f.local.quantile(0.99)},
                              {"median", f.local.quantile(0.5)}, {"floor_binding", f.local_floored}}}};
    return out;
  };
  j["sweep"] = {{"models", r.sweep.size()}, {"seed", r.options.seed}, {"seconds", r.sweep_seconds},
                {"families", families(r.sweep_families)}};
  for (const SweepResult& m : r.sweep)
    j["sweep"]["results"].push_back({{"seed", m.model.seed}, {"layers", m.model.config.num_hidden_layers},
                                     {"hidden", m.model.config.hidden_size},
                                     {"heads", m.model.config.num_attention_heads},
                                     {"tokens", m.model.input.ids.size()},
                                     {"weight_sd", m.model.statistics.weight_sd},
                                     {"outlier_dims", m.model.statistics.outlier_dims},
                                     {"outlier_gain", m.model.statistics.outlier_gain}, {"pass", m.pass},
                                     {"bound_used", m.worst_bound_used}, {"failure", m.failure}});
  for (const FixtureResult& f : r.fixtures) {
    nlohmann::ordered_json fj = {{"name", f.name}, {"dir", f.dir}, {"sha256", f.sha256}, {"sentences", f.sentences},
                                 {"false_alarms", f.failed_sentences}, {"seconds", f.seconds},
                                 {"families", families(f.families)}};
    for (const auto& [fault, outcomes] : f.detection) {
      nlohmann::ordered_json runs = nlohmann::ordered_json::array();
      for (size_t i = 0; i < outcomes.size(); ++i)
        runs.push_back({{"delta", r.options.deltas[i]}, {"killed", outcomes[i].first}, {"bound_used", outcomes[i].second}});
      fj["detection"][fault] = {{"threshold", CalibrationResult::threshold(r.options.deltas, outcomes)}, {"runs", runs}};
    }
    j["fixtures"].push_back(std::move(fj));
  }
  return j;
}

}  // namespace

void write_calibration_json(const std::vector<CalibrationResult>& results, const std::filesystem::path& file) {
  if (results.empty()) throw std::invalid_argument("no calibration to write");
  nlohmann::ordered_json j;
  j["tool"] = "lenscheck calibrate";
  j["build"] = results.front().version;
  j["oracle_backend"] = results.front().backend;
  j["tolerances_file"] = results.front().tolerances_file;
  j["candidates"] = nlohmann::ordered_json::array();
  for (const CalibrationResult& r : results) j["candidates"].push_back(candidate_json(r));
  write_text_file(file, j.dump(1) + "\n");
}

}  // namespace lenscheck
