#include "instrument/display_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/yaml_input.h"

namespace lenscheck {

namespace Y = yaml_input;

DisplaySpec load_display_spec(const std::filesystem::path& file) {
  const YAML::Node d = Y::load(file);
  Y::require_map(file, d, "a display file");
  Y::only_keys(file, d, {"decimals", "top_targets", "sink_flags", "head_scores"});
  DisplaySpec spec;
  spec.decimals = static_cast<int>(Y::as_integer(file, Y::required(file, d, "decimals"), "decimals"));
  if (spec.decimals < 0 || spec.decimals > 6) Y::fail(file, d["decimals"], "decimals must be 0 to 6");
  spec.top_targets = static_cast<int>(Y::as_integer(file, Y::required(file, d, "top_targets"), "top_targets"));
  if (spec.top_targets < 1) Y::fail(file, d["top_targets"], "top_targets must be at least 1");
  const YAML::Node flags = Y::required(file, d, "sink_flags");
  Y::require_sequence(file, flags, "sink_flags");
  for (const YAML::Node& f : flags) {
    const double t = Y::as_number(file, f, "a sink flag");
    if (!(t > 0 && t < 1)) Y::fail(file, f, "a sink flag is a share strictly between 0 and 1");
    if (!spec.sink_flags.empty() && t <= spec.sink_flags.back()) Y::fail(file, f, "sink_flags must ascend");
    spec.sink_flags.push_back(t);
  }
  if (spec.sink_flags.empty()) Y::fail(file, flags, "sink_flags needs at least one threshold");
  if (const YAML::Node h = d["head_scores"]) {
    const std::string how = Y::as_string(file, h, "head_scores");
    if (how != "printed" && how != "exact") Y::fail(file, h, "head_scores is printed or exact");
    spec.head_on_printed_scores = how == "printed";
  }
  return spec;
}

std::filesystem::path display_file_beside(const std::filesystem::path& plan_file) {
  std::filesystem::path p = plan_file;
  return p.replace_extension(".display.yaml");
}

std::vector<int> content_words(size_t words, int word) {
  std::vector<int> all;
  for (int w = 0; w < int(words); ++w)
    if (w != word || words == 1) all.push_back(w);
  return all;
}

PrintedRow printed_row(const WordRow& row, int word, const DisplaySpec& spec) {
  PrintedRow p;
  if (const std::optional<double> s = row.sink_share()) {
    p.sink = printed(*s, spec.decimals);
    for (double threshold : spec.sink_flags) p.flags.push_back(*s > threshold);
  }
  if (const auto shown = row.displayed()) {
    std::vector<std::pair<double, int>> ranked;  // printed weight, word
    for (int w : content_words(shown->size(), word))
      ranked.emplace_back(std::stod(printed((*shown)[size_t(w)], spec.decimals)), w);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    ranked.resize(std::min(ranked.size(), size_t(spec.top_targets)));
    for (const auto& [weight, w] : ranked) p.targets.emplace_back(w, printed((*shown)[size_t(w)], spec.decimals));
  }
  return p;
}

}  // namespace lenscheck
