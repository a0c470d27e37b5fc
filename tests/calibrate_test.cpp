// `lenscheck calibrate` over several candidates: each judged under the arithmetic it declares, one
// report holding them side by side.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gate/calibrate.h"
#include "tests/test_support.h"

using namespace lenscheck;

TEST(Calibrate, JudgesEachCandidateUnderItsDeclaredArithmeticInOneReport) {
  const Tolerances tol = load_tolerances(test::source_dir() / "fixtures/tolerances.yaml");
  CalibrationOptions fp32;
  fp32.models = 3;
  CalibrationOptions int8 = fp32;
  int8.candidate.name = "runtime declared int8";
  int8.candidate.arithmetic = Arithmetic::int8;
  std::vector<CalibrationResult> results;
  for (const CalibrationOptions& o : {fp32, int8}) results.push_back(calibrate(tol, o, [](const std::string&) {}));
  for (const CalibrationResult& r : results) {
    ASSERT_EQ(r.sweep.size(), 3u);
    EXPECT_EQ(r.false_alarms(), 0u);
  }
  // The fp32 runtime errs far less than int8 may: where int8 quantizes (the linear layers), its error
  // ratios fall by orders of magnitude.
  for (const char* family : {"layer.*.attention.query", "layer.*.output"})
    EXPECT_LT(results[1].sweep_families.at(family).ratios.max(), results[0].sweep_families.at(family).ratios.median() / 10)
        << family;

  const auto dir = test::temp_dir("calibrate_report");
  write_calibration_markdown(results, dir / "calibration.md");
  write_calibration_json(results, dir / "calibration.json");
  const std::string md = test::read_file(dir / "calibration.md");
  EXPECT_NE(md.find("| runtime | fp32 | 3 | **0** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| runtime declared int8 | int8 | 3 | **0** |"), std::string::npos) << md;
  EXPECT_NE(md.find("## runtime declared int8, declared int8"), std::string::npos);
  const auto json = nlohmann::json::parse(test::read_file(dir / "calibration.json"));
  ASSERT_EQ(json["candidates"].size(), 2u);
  EXPECT_EQ(json["candidates"][1]["arithmetic"], "int8");
}
