// `lenscheck calibrate` over several candidates: each judged under the arithmetic it declares, one
// report holding them side by side.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gate/calibrate.h"
#include "gate/calibrate_report.h"
#include "oracle/oracle.h"
#include "tests/test_support.h"

using namespace lenscheck;

TEST(Calibrate, JudgesEachCandidateUnderItsDeclaredArithmeticInOneReport) {
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  CalibrationOptions fp32;
  fp32.models = 3;
  // Seed 40 draws three small models, one of each activation (1 layer of 320 with ReLU, 4 of 16 with
  // gelu_new, 3 of 96 with GELU): this test checks the report across candidates; the sweep's statistics
  // are the calibration's (reports/calibration.md, 200 models). The default seed's three have 32 M
  // parameters, and took 87 s of the sanitized run.
  fp32.seed = 40;
  // An implementation that computes in int8: libtorch's simulation of ONNX Runtime's quantize_dynamic.
  CalibrationOptions int8 = fp32;
  int8.candidate.name = "simulated int8";
  int8.candidate.arithmetic = Arithmetic::int8;
  int8.candidate.replaceable_stages = false;
  int8.candidate.run = [](const Checkpoint& ck, const std::vector<Encoding>& inputs, const runtime::Stages*, unsigned) {
    const oracle::Oracle simulated = oracle::Oracle::computing_in(ck.config, ck.weights, Arithmetic::int8);
    CandidateRun r;
    r.label = "libtorch int8 (simulated in fp64)";
    for (const Encoding& e : inputs) r.traces.push_back(simulated.forward(e));
    return r;
  };
  std::vector<CalibrationResult> results;
  for (const CalibrationOptions& o : {fp32, int8}) results.push_back(calibrate(tol, o, [](const std::string&) {}));
  for (const CalibrationResult& r : results) {
    ASSERT_EQ(r.sweep.size(), 3u);
    EXPECT_EQ(r.false_alarms(), 0u);
  }
  // The int8 candidate is its own benchmark, one of those its error is measured against: ratio 1 at most.
  for (const char* family : {"layer.*.attention.query", "layer.*.output"})
    EXPECT_LE(results[1].sweep_families.at(family).ratios.max(), 1.0) << family;

  const auto dir = test::temp_dir("calibrate_report");
  write_calibration_markdown(results, dir / "calibration.md");
  write_calibration_json(results, dir / "calibration.json");
  const std::string md = test::read_file(dir / "calibration.md");
  EXPECT_NE(md.find("| runtime | fp32 | 3 | **0** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| simulated int8 | int8 | 3 | **0** |"), std::string::npos) << md;
  EXPECT_NE(md.find("## simulated int8, declared int8"), std::string::npos);
  const auto json = nlohmann::json::parse(test::read_file(dir / "calibration.json"));
  ASSERT_EQ(json["candidates"].size(), 2u);
  EXPECT_EQ(json["candidates"][1]["arithmetic"], "int8");
}
