#pragma once
// What `lenscheck calibrate` writes: one Markdown report and its JSON over every candidate calibrated.
#include <filesystem>
#include <vector>

#include "gate/calibrate.h"

namespace lenscheck {

// One report over every candidate calibrated: false alarms and detection thresholds side by side, then
// a section per candidate.
void write_calibration_markdown(const std::vector<CalibrationResult>& results, const std::filesystem::path& file);
void write_calibration_json(const std::vector<CalibrationResult>& results, const std::filesystem::path& file);

}  // namespace lenscheck
