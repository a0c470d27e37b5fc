#include "audit/study_plan.h"

#include <fmt/format.h>

#include "common/yaml_input.h"
#include "model/error.h"

namespace lenscheck {

namespace Y = yaml_input;

namespace {

constexpr Stat kStats[] = {Stat::median_sink_share,        Stat::worst_row_sink_share,
                           Stat::rows_with_sink_above,     Stat::rows_worse_than_baseline,
                           Stat::largest_relative_worsening, Stat::heads_kept_fraction,
                           Stat::undefined_rows,           Stat::self_only_rows,
                           Stat::median_context_sink_share};

Lens read_lens(const std::filesystem::path& file, const YAML::Node& node) {
  try {
    return lens_from_name(Y::as_string(file, node, "lens"));
  } catch (const std::invalid_argument& e) {
    Y::fail(file, node, e.what());
  }
}

std::filesystem::path resolve(const std::filesystem::path& file, const std::string& path) {
  const std::filesystem::path p(path);
  return p.is_absolute() ? p : (file.parent_path() / p).lexically_normal();
}

}  // namespace

const char* stat_name(Stat stat) {
  switch (stat) {
    case Stat::median_sink_share: return "median_sink_share";
    case Stat::worst_row_sink_share: return "worst_row_sink_share";
    case Stat::rows_with_sink_above: return "rows_with_sink_above";
    case Stat::rows_worse_than_baseline: return "rows_worse_than_baseline";
    case Stat::largest_relative_worsening: return "largest_relative_worsening";
    case Stat::heads_kept_fraction: return "heads_kept_fraction";
    case Stat::undefined_rows: return "undefined_rows";
    case Stat::self_only_rows: return "self_only_rows";
    case Stat::median_context_sink_share: return "median_context_sink_share";
  }
  return "?";
}

std::string AbandonCriterion::describe() const {
  std::string s = fmt::format("{} {}", lens_name(lens), stat_name(stat));
  if (threshold) s += fmt::format(" (threshold {})", *threshold);
  return s + (above ? fmt::format(" above {}", *above) : fmt::format(" below {}", *below));
}

StudyPlan load_study_plan(const std::filesystem::path& file) {
  const YAML::Node root = Y::load(file);
  Y::require_map(file, root, "a study plan");
  Y::only_keys(file, root, {"study", "registered", "hypothesis", "baseline", "lenses", "head_rule",
                            "sentences", "model", "recorded", "abandon_if"});
  StudyPlan plan;
  plan.file = file;
  plan.study = Y::as_string(file, Y::required(file, root, "study"), "study");
  plan.registered = Y::as_string(file, Y::required(file, root, "registered"), "registered");
  plan.hypothesis = Y::as_string(file, Y::required(file, root, "hypothesis"), "hypothesis");
  plan.baseline = read_lens(file, Y::required(file, root, "baseline"));
  const YAML::Node lenses = Y::required(file, root, "lenses");
  Y::require_sequence(file, lenses, "lenses");
  plan.lenses.push_back(plan.baseline);
  for (const YAML::Node& l : lenses) {
    const Lens lens = read_lens(file, l);
    if (lens != plan.baseline) plan.lenses.push_back(lens);
  }
  if (plan.lenses.size() < 2) Y::fail(file, lenses, "a study compares at least one lens with the baseline");
  const YAML::Node rule = Y::required(file, root, "head_rule");
  try {
    plan.head_rule = HeadRule::parse(Y::as_string(file, rule, "head_rule"));
  } catch (const std::invalid_argument& e) {
    Y::fail(file, rule, e.what());
  }
  plan.sentences = resolve(file, Y::as_string(file, Y::required(file, root, "sentences"), "sentences"));
  plan.model = resolve(file, Y::as_string(file, Y::required(file, root, "model"), "model"));
  if (root["recorded"]) plan.recorded = resolve(file, Y::as_string(file, root["recorded"], "recorded"));

  const YAML::Node criteria = Y::required(file, root, "abandon_if");
  Y::require_sequence(file, criteria, "abandon_if");
  for (const YAML::Node& c : criteria) {
    Y::require_map(file, c, "an abandon criterion");
    Y::only_keys(file, c, {"lens", "stat", "threshold", "above", "below"});
    AbandonCriterion a;
    a.line = c.Mark().line + 1;
    a.lens = read_lens(file, Y::required(file, c, "lens"));
    const std::string stat = Y::as_string(file, Y::required(file, c, "stat"), "stat");
    bool known = false;
    for (Stat s : kStats)
      if (stat == stat_name(s)) {
        a.stat = s;
        known = true;
      }
    if (!known) Y::fail(file, c["stat"], fmt::format("unknown stat \"{}\"", stat));
    if (c["threshold"]) a.threshold = Y::as_number(file, c["threshold"], "threshold");
    if (c["above"]) a.above = Y::as_number(file, c["above"], "above");
    if (c["below"]) a.below = Y::as_number(file, c["below"], "below");
    if (a.above.has_value() == a.below.has_value()) Y::fail(file, c, "a criterion needs exactly one of above, below");
    if ((a.stat == Stat::rows_with_sink_above) != a.threshold.has_value())
      Y::fail(file, c, "threshold goes with rows_with_sink_above, and only with it");
    if (std::find(plan.lenses.begin(), plan.lenses.end(), a.lens) == plan.lenses.end())
      Y::fail(file, c, fmt::format("lens {} is not among the plan's lenses", lens_name(a.lens)));
    plan.abandon_if.push_back(a);
  }
  if (plan.abandon_if.empty()) Y::fail(file, criteria, "a plan without abandon criteria cannot be abandoned");

  return plan;
}

Instrument instrument_of(const StudyPlan& plan) {
  const std::filesystem::path display = display_file_beside(plan.file);
  if (!std::filesystem::exists(display))
    throw InputError(display, fmt::format("no such file: the display verdict on study plan {} reads what the "
                                          "instrument prints (decimals, top_targets, sink_flags) from this file "
                                          "beside it", plan.file.string()));
  return {plan.file, display, plan.head_rule, plan.lenses, load_display_spec(display)};
}

RecordedNumbers load_recorded_numbers(const std::filesystem::path& file) {
  const YAML::Node root = Y::load(file);
  Y::require_map(file, root, "recorded numbers");
  Y::only_keys(file, root, {"source", "numbers"});
  RecordedNumbers r;
  r.file = file;
  r.source = Y::as_string(file, Y::required(file, root, "source"), "source");
  const YAML::Node list = Y::required(file, root, "numbers");
  Y::require_sequence(file, list, "numbers");
  for (const YAML::Node& n : list) {
    Y::require_map(file, n, "a recorded number");
    Y::only_keys(file, n, {"sentence", "word", "at", "lens", "head", "target", "displayed", "sink_share",
                           "raw_share", "tolerance"});
    RecordedNumber x;
    x.line = n.Mark().line + 1;
    x.sentence = Y::as_string(file, Y::required(file, n, "sentence"), "sentence");
    x.word = Y::as_string(file, Y::required(file, n, "word"), "word");
    if (n["at"]) x.at = static_cast<int>(Y::as_integer(file, n["at"], "at"));
    x.lens = read_lens(file, Y::required(file, n, "lens"));
    if (n["head"]) x.head = Y::as_string(file, n["head"], "head");
    x.target = Y::as_string(file, Y::required(file, n, "target"), "target");
    if (n["displayed"]) x.displayed = Y::as_number(file, n["displayed"], "displayed");
    if (n["sink_share"]) x.sink_share = Y::as_number(file, n["sink_share"], "sink_share");
    if (n["raw_share"]) x.raw_share = Y::as_number(file, n["raw_share"], "raw_share");
    x.tolerance = Y::as_number(file, Y::required(file, n, "tolerance"), "tolerance");
    if (!x.displayed && !x.sink_share && !x.raw_share)
      Y::fail(file, n, "a recorded number needs displayed, sink_share or raw_share");
    r.numbers.push_back(x);
  }
  if (r.numbers.empty()) Y::fail(file, list, "no recorded numbers");
  return r;
}

}  // namespace lenscheck
