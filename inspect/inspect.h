#pragma once
// `lenscheck inspect`: what a checkpoint holds as loaded, for a user to check before trusting a verdict:
// the folder it was found in, its config, what the loader converted and ignored, its vocabulary and
// tokenizer settings (each with the file it came from), and per-parameter statistics.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace lenscheck {

struct GainOutlier {
  size_t dim;
  double gain;
};

struct ParamStats {
  std::string name;  // without the "bert." prefix, as for_each_param names it
  std::vector<int64_t> shape;
  size_t count = 0;
  double mean = 0, sd = 0, max_abs = 0;  // sd: of the population, the parameter's own spread
  // LayerNorm gains only: the "outlier dimensions" of Kovaleva et al. (2021), which dominate what a
  // layer passes on. Median and MAD, not mean and sd, so that one huge gain cannot hide itself by
  // widening the spread; 6 robust sd, so that a Gaussian's tails are not reported.
  std::vector<GainOutlier> gain_outliers{};
};

ParamStats param_stats(const std::string& name, const Param& param);
std::vector<ParamStats> parameter_stats(const Checkpoint& ck);  // in for_each_param's order

std::string inspection_text(const Checkpoint& ck, const std::vector<ParamStats>& stats);
void write_inspection_json(const Checkpoint& ck, const std::vector<ParamStats>& stats,
                           const std::filesystem::path& file);

}  // namespace lenscheck
