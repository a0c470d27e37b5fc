#include "audit/audit_partial.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/error.h"

namespace lenscheck {

namespace {

using Json = nlohmann::ordered_json;
constexpr const char* kFormat = "lenscheck audit partial 4";

// JSON has no infinity (a norm ratio over content norms of 0) nor NaN: those go as strings.
Json number(double x) { return std::isfinite(x) ? Json(x) : Json(fmt::format("{}", x)); }
double number(const Json& j) { return j.is_string() ? std::stod(j.get<std::string>()) : j.get<double>(); }

Json row_max_json(const RowMax& m) {
  return {{"value", number(m.value)}, {"where", m.where},      {"sentence", m.at.sentence},
          {"word", m.at.word},        {"baseline", number(m.baseline)}, {"share", number(m.share)}};
}
RowMax row_max(const Json& j) {
  return {number(j.at("value")), j.at("where"), {j.at("sentence"), j.at("word")}, number(j.at("baseline")),
          number(j.at("share"))};
}

// Buckets as two arrays, [bucket…] and [count…]: the occupied ones only.
Json histogram_json(const Histogram& h) {
  Json buckets = Json::array(), counts = Json::array();
  for (const auto& [b, n] : h.buckets()) {
    buckets.push_back(b);
    counts.push_back(n);
  }
  return {{"buckets", buckets}, {"counts", counts}};
}
void read_histogram(const Json& j, Histogram& h) {
  const Json &buckets = j.at("buckets"), &counts = j.at("counts");
  if (buckets.size() != counts.size()) throw std::out_of_range("buckets and counts differ in length");
  for (size_t i = 0; i < buckets.size(); ++i) h.set(buckets[i].get<int64_t>(), counts[i].get<uint64_t>());
}

Json ratio_json(const RatioTally& t) { return {{"below_one", t.below_one}, {"values", histogram_json(t.values)}}; }
void read_ratio(const Json& j, RatioTally& t) {
  t.below_one = j.at("below_one");
  read_histogram(j.at("values"), t.values);
}

Json row_json(const AuditRow& row) {
  Json lenses = Json::array();
  for (const WordRow& w : row.by_lens)
    lenses.push_back({{"word", w.word}, {"layer", w.head.layer}, {"head", w.head.head}, {"cls", number(w.cls)},
                      {"sep", number(w.sep)}, {"content", w.content}});
  return {{"sentence", row.sentence}, {"ordinal", row.ordinal}, {"word", row.word}, {"words", row.words},
          {"by_lens", lenses}};
}
AuditRow audit_row(const Json& j, size_t lenses) {
  AuditRow row{j.at("sentence"), j.at("word"), j.at("words"), {}, j.at("ordinal")};
  for (const Json& w : j.at("by_lens"))
    row.by_lens.push_back({w.at("word"), {w.at("layer"), w.at("head")}, number(w.at("cls")), number(w.at("sep")),
                           w.at("content")});
  if (row.by_lens.size() != lenses || row.word < 0 || size_t(row.word) >= row.words.size())
    throw std::out_of_range(fmt::format("row {} of {} does not fit the plan", row.word, row.sentence));
  return row;
}

Json ratio_row_json(const NormRatio& n) {
  return {{"sentence", n.sentence}, {"ordinal", n.ordinal}, {"layer", n.head.layer}, {"head", n.head.head},
          {"value_cls", number(n.cls_value)}, {"value_sep", number(n.sep_value)},
          {"transformed_cls", number(n.cls_transformed)}, {"transformed_sep", number(n.sep_transformed)}};
}
NormRatio norm_ratio(const Json& j) {
  return {j.at("sentence"), {j.at("layer"), j.at("head")}, number(j.at("value_cls")), number(j.at("value_sep")),
          number(j.at("transformed_cls")), number(j.at("transformed_sep")), j.at("ordinal")};
}

}  // namespace

void write_partial(const AuditPartial& p, const std::filesystem::path& out) {
  Json j;
  j["format"] = kFormat;
  j["shard"] = {{"index", p.shard.index}, {"count", p.shard.count}};
  j["hashes"] = {{"plan", p.plan_sha256},         {"model", p.model_sha256}, {"sentences", p.sentences_sha256},
                 {"recorded", p.recorded_sha256}, {"build", p.build_sha256}};
  j["build"] = p.version;
  j["model"] = {{"dir", p.model_dir}, {"generator", p.model_generator}};
  j["corpus_sentences"] = p.corpus_sentences;
  j["sentences"] = p.sentences;
  const AuditTally& t = p.tally;
  for (size_t li = 0; li < t.stats.size(); ++li) {
    const LensStats& s = t.stats[li];
    j["lenses"].push_back({{"lens", lens_name(s.lens)},
                           {"rows", s.rows},
                           {"undefined", s.undefined},
                           {"self_only", s.self_only},
                           {"worst", row_max_json(s.worst)},
                           {"above_50", s.above_50},
                           {"above_90", s.above_90},
                           {"worse", s.worse},
                           {"worse_by_resolution", s.worse_by_resolution},
                           {"relative_worsening", row_max_json(s.relative_worsening)},
                           {"points_worsening", row_max_json(s.points_worsening)},
                           {"kept_head", s.kept_head},
                           {"sink_shares", histogram_json(t.shares[li])},
                           {"context_rows", s.context_rows},
                           {"context_above_50", s.context_above_50},
                           {"context_worst", row_max_json(s.context_worst)},
                           {"context_sink_shares", histogram_json(t.context_shares[li])}});
  }
  j["thresholds"] = Json::array();
  for (const auto& c : t.thresholds)
    j["thresholds"].push_back(c ? Json{{"lens", c->lens}, {"threshold", c->threshold}, {"rows", c->rows}} : Json());
  j["norm_ratios"] = {{"value_cls", ratio_json(t.cls_value)},
                      {"value_sep", ratio_json(t.sep_value)},
                      {"transformed_cls", ratio_json(t.cls_transformed)},
                      {"transformed_sep", ratio_json(t.sep_transformed)}};
  j["mixing_ratios"] = Json::array();
  for (const LayerMixing& m : t.mixing)
    j["mixing_ratios"].push_back({{"attention", histogram_json(m.attention)},
                                  {"residual", histogram_json(m.residual)},
                                  {"residual_layernorm", histogram_json(m.residual_layernorm)}});
  j["depth"] = Json::array();
  for (const LayerDepth& d : t.depth) {
    Json lenses = Json::array();
    for (size_t li = 0; li < d.shares.size(); ++li)
      lenses.push_back({{"sink_shares", histogram_json(d.shares[li])}, {"undefined", d.undefined[li]}});
    j["depth"].push_back({{"value_cls", ratio_json(d.cls_value)}, {"value_sep", ratio_json(d.sep_value)}, {"lenses", lenses}});
  }
  j["shown_rows"] = Json::array();
  for (const AuditRow& row : p.shown_rows) j["shown_rows"].push_back(row_json(row));
  j["shown_ratios"] = Json::array();
  for (const NormRatio& n : p.shown_ratios) j["shown_ratios"].push_back(ratio_row_json(n));
  j["named_rows"] = Json::array();
  for (const AuditRow& row : p.named_rows) j["named_rows"].push_back(row_json(row));

  const std::filesystem::path temporary = out.string() + fmt::format(".tmp-{}", ::getpid());
  {
    std::ofstream f(temporary);
    if (!f) throw InputError(out, fmt::format("cannot be written (temporary {})", temporary.string()));
    f << j.dump() << '\n';
    if (!f.flush()) throw InputError(out, fmt::format("write failed (temporary {})", temporary.string()));
  }
  std::error_code error;
  std::filesystem::rename(temporary, out, error);
  if (error) throw InputError(out, fmt::format("cannot be replaced: {}", error.message()));
}

AuditPartial read_partial(const StudyPlan& plan, const std::filesystem::path& file) {
  std::ifstream f(file);
  if (!f) throw InputError(file, "cannot be opened");
  AuditPartial p(plan);
  p.file = file;
  try {
    const Json j = Json::parse(f);
    if (j.at("format") != kFormat) throw InputError(file, fmt::format("not a partial audit: format is not \"{}\"", kFormat));
    p.shard = {j.at("shard").at("index"), j.at("shard").at("count")};
    if (p.shard.index >= p.shard.count)
      throw InputError(file, fmt::format("shard {} does not exist", p.shard.label()));
    const Json& h = j.at("hashes");
    p.plan_sha256 = h.at("plan");
    p.model_sha256 = h.at("model");
    p.sentences_sha256 = h.at("sentences");
    p.recorded_sha256 = h.at("recorded");
    p.build_sha256 = h.at("build");
    p.version = j.at("build");
    p.model_dir = j.at("model").at("dir");
    p.model_generator = j.at("model").at("generator");
    p.corpus_sentences = j.at("corpus_sentences");
    p.sentences = j.at("sentences");
    AuditTally& t = p.tally;
    const Json& lenses = j.at("lenses");
    if (lenses.size() != t.stats.size()) throw InputError(file, "has other lenses than the plan");
    for (size_t li = 0; li < t.stats.size(); ++li) {
      const Json& l = lenses[li];
      LensStats& s = t.stats[li];
      if (l.at("lens") != lens_name(s.lens)) throw InputError(file, "has other lenses than the plan");
      s.rows = l.at("rows");
      s.undefined = l.at("undefined");
      s.self_only = l.at("self_only");
      s.worst = row_max(l.at("worst"));
      s.above_50 = l.at("above_50");
      s.above_90 = l.at("above_90");
      s.worse = l.at("worse");
      s.worse_by_resolution = l.at("worse_by_resolution");
      s.relative_worsening = row_max(l.at("relative_worsening"));
      s.points_worsening = row_max(l.at("points_worsening"));
      s.kept_head = l.at("kept_head");
      read_histogram(l.at("sink_shares"), t.shares[li]);
      s.context_rows = l.at("context_rows");
      s.context_above_50 = l.at("context_above_50");
      s.context_worst = row_max(l.at("context_worst"));
      read_histogram(l.at("context_sink_shares"), t.context_shares[li]);
    }
    const Json& thresholds = j.at("thresholds");
    if (thresholds.size() != t.thresholds.size()) throw InputError(file, "has other criteria than the plan");
    for (size_t c = 0; c < t.thresholds.size(); ++c) {
      if (thresholds[c].is_null() != !t.thresholds[c] ||
          (t.thresholds[c] && (thresholds[c].at("lens") != t.thresholds[c]->lens ||
                               thresholds[c].at("threshold") != t.thresholds[c]->threshold)))
        throw InputError(file, "has other criteria than the plan");
      if (t.thresholds[c]) t.thresholds[c]->rows = thresholds[c].at("rows");
    }
    const Json& ratios = j.at("norm_ratios");
    read_ratio(ratios.at("value_cls"), t.cls_value);
    read_ratio(ratios.at("value_sep"), t.sep_value);
    read_ratio(ratios.at("transformed_cls"), t.cls_transformed);
    read_ratio(ratios.at("transformed_sep"), t.sep_transformed);
    for (const Json& m : j.at("mixing_ratios")) {
      LayerMixing& layer = t.mixing.emplace_back();
      read_histogram(m.at("attention"), layer.attention);
      read_histogram(m.at("residual"), layer.residual);
      read_histogram(m.at("residual_layernorm"), layer.residual_layernorm);
    }
    for (const Json& d : j.at("depth")) {
      LayerDepth& layer = t.depth.emplace_back(t.stats.size());
      read_ratio(d.at("value_cls"), layer.cls_value);
      read_ratio(d.at("value_sep"), layer.sep_value);
      const Json& lenses = d.at("lenses");
      if (lenses.size() != t.stats.size()) throw InputError(file, "has other lenses than the plan");
      for (size_t li = 0; li < lenses.size(); ++li) {
        read_histogram(lenses[li].at("sink_shares"), layer.shares[li]);
        layer.undefined[li] = lenses[li].at("undefined");
      }
    }
    for (const Json& row : j.at("shown_rows")) p.shown_rows.push_back(audit_row(row, t.stats.size()));
    for (const Json& n : j.at("shown_ratios")) p.shown_ratios.push_back(norm_ratio(n));
    for (const Json& row : j.at("named_rows")) p.named_rows.push_back(audit_row(row, t.stats.size()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, fmt::format("not a partial audit: {}", e.what()));
  } catch (const std::logic_error& e) {  // std::stod, out_of_range from the checks above
    throw InputError(file, fmt::format("not a partial audit: {}", e.what()));
  }
  return p;
}

}  // namespace lenscheck
