// lenscheck calibrate: the gate measured as a classifier, for each candidate under the scheme it declares.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "gate/calibrate.h"
#include "gate/calibrate_report.h"
#include "onnx/candidate.h"

namespace lenscheck::cli {

Command add_calibrate(CLI::App& app, const Shared& shared) {
  struct Options {
    CalibrationOptions calibration;
    std::vector<std::string> fixtures, candidates = {"runtime"};
    std::string sentences, tolerances, report, json, python_env;
  };
  auto o = std::make_shared<Options>();
  o->sentences = shared.data.sentences();
  o->tolerances = shared.data.tolerances();
  auto* command = app.add_subcommand("calibrate", "measure the derived gate: false alarms over random models "
                                                    "and fixtures, and the smallest graded fault it kills");
  command->add_option("--models", o->calibration.models, "random models in the false-alarm sweep")
      ->capture_default_str();
  command->add_option("--seed", o->calibration.seed, "sweep seed")->capture_default_str();
  command->add_option("--fixture", o->fixtures, "checkpoint directory to judge and inject faults into (repeatable)");
  command->add_option("--sentences", o->sentences, "sentences YAML for the fixtures")->capture_default_str();
  command->add_option("--tolerances", o->tolerances, "tolerances YAML")->capture_default_str();
  command->add_option("--report", o->report, "Markdown report path")->required();
  command->add_option("--json", o->json, "JSON report path");
  command->add_option("--candidate", o->candidates, "what to calibrate, each under the arithmetic it declares: "
                                                      "runtime, onnxruntime, onnxruntime:fp16, onnxruntime:int8 "
                                                      "(repeatable; one report)")
      ->capture_default_str();
  command->add_option("--python-env", o->python_env, kPythonEnvHelp);
  return {command, [o, &shared] {
            const Tolerances tol = load_tolerances(shared.data.checked(o->tolerances));
            CalibrationOptions calibration = o->calibration;
            calibration.sentences_file = shared.data.checked(o->sentences);
            calibration.threads = shared.threads;
            for (const std::string& f : o->fixtures) calibration.fixtures.emplace_back(f);
            std::vector<CalibrationOptions> runs;
            for (const std::string& c : o->candidates) {
              runs.push_back(calibration);
              if (c != "runtime") {
                onnx_export::CandidateSpec spec;
                spec.variant = onnx_export::parse_candidate(c);
                spec.ort.adapter = shared.data.ort_adapter();
                spec.ort.python_env = shared.data.python_env(o->python_env);
                runs.back().candidate = onnx_export::candidate(spec);
              }
            }
            std::vector<CalibrationResult> results;
            size_t false_alarms = 0;
            for (const CalibrationOptions& run : runs) {
              results.push_back(calibrate(tol, run, [&](const std::string& line) {
                fmt::print(stderr, "calibrate {}: {}\n", run.candidate.name, line);
              }));
              const CalibrationResult& r = results.back();
              false_alarms += r.false_alarms();
              fmt::print("{} (declared {}): false alarms {}\n", run.candidate.name,
                         arithmetic_name(run.candidate.arithmetic), r.false_alarms());
              for (const FixtureResult& f : r.fixtures)
                for (const auto& [fault, outcomes] : f.detection)
                  fmt::print("  {:<18} {:<16} smallest delta killed: {:g}\n", f.name, fault,
                             CalibrationResult::threshold(run.deltas, outcomes));
              // Written after every candidate: a later one that cannot run loses none of the earlier ones.
              write_calibration_markdown(results, o->report);
              if (!o->json.empty()) write_calibration_json(results, o->json);
            }
            fmt::print("false alarms: {}\nwrote {}\n", false_alarms, o->report);
            return false_alarms == 0 ? kPass : kFail;
          }};
}

}  // namespace lenscheck::cli
