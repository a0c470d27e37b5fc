// Sharded audits: the histograms' medians hold their stated bounds, the merge of every shard's
// partial equals the single run, and merge refuses partials that do not make up one audit.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <sstream>

#include "audit/audit.h"
#include "audit/audit_partial.h"
#include "audit/audit_report.h"
#include "synth/corpus.h"
#include "model/checkpoint.h"
#include "model/error.h"
#include "tests/test_support.h"

using namespace lenscheck;
namespace fs = std::filesystem;

namespace {

double exact_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const Checkpoint& planted() {
  static const Checkpoint ck = load_checkpoint(test::fixture("planted-sink"));
  return ck;
}

const fs::path kPlan = test::source_dir() / "fixtures/studies/norm-weighted-attention.yaml";

// The registered plan over `corpus`, without its recorded numbers (they name fixture sentences).
fs::path corpus_plan(const fs::path& dir, const fs::path& corpus) {
  std::istringstream in(test::read_file(kPlan));
  std::string text;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("sentences:", 0) && line.rfind("model:", 0) && line.rfind("recorded:", 0)) text += line + "\n";
  text += fmt::format("sentences: {}\nmodel: {}\n", corpus.string(), test::fixture("planted-sink").string());
  test::write_file(dir / "plan.yaml", text);
  return dir / "plan.yaml";
}

void expect_same_row_max(const RowMax& a, const RowMax& b) {
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.where, b.where);
  EXPECT_EQ(a.at, b.at);
  EXPECT_EQ(a.baseline, b.baseline);
  EXPECT_EQ(a.share, b.share);
}

void expect_same_ratio(const RatioSummary& a, const RatioSummary& b) {
  EXPECT_EQ(a.median, b.median);
  EXPECT_EQ(a.below_one, b.below_one);
  EXPECT_EQ(a.count, b.count);
}

// The partials of `shards` shards, each written to a file and read back, merged.
AuditResult merged(const StudyPlan& plan, const Checkpoint& ck, size_t shards, const fs::path& dir,
                   const AuditOptions& options) {
  std::vector<AuditPartial> partials;
  for (size_t k = shards; k-- > 0;) {  // in reverse: merge does not depend on the order
    const fs::path file = dir / fmt::format("shard-{}-of-{}.json", k, shards);
    write_partial(audit_shard(plan, ck, {k, shards}, options), file);
    partials.push_back(read_partial(plan, file));
  }
  return merge_audit(plan, partials);
}

// Verdict, every count and maximum identical; the medians too, since a single run reads them from
// the same histograms; and the reports byte for byte. `single` is run_audit(plan, ck) on two threads with
// the shards' shown_sentences; the shards run on one.
void expect_merge_equals_single(const StudyPlan& plan, const fs::path& dir, const Checkpoint& ck,
                                const AuditResult& single, const AuditOptions& options = {}) {
  write_audit_reports(single, dir / "single");
  for (size_t shards : {1, 2, 7}) {
    SCOPED_TRACE(fmt::format("{} shards", shards));
    const AuditResult m = merged(plan, ck, shards, dir, options);
    EXPECT_EQ(m.abandon(), single.abandon());
    EXPECT_EQ(m.recorded_hold(), single.recorded_hold());
    EXPECT_EQ(m.sentences, single.sentences);
    EXPECT_EQ(m.total_rows, single.total_rows);
    ASSERT_EQ(m.criteria.size(), single.criteria.size());
    for (size_t c = 0; c < m.criteria.size(); ++c) {
      EXPECT_EQ(m.criteria[c].value, single.criteria[c].value);
      EXPECT_EQ(m.criteria[c].triggered, single.criteria[c].triggered);
    }
    ASSERT_EQ(m.stats.size(), single.stats.size());
    for (size_t li = 0; li < m.stats.size(); ++li) {
      const LensStats &a = m.stats[li], &b = single.stats[li];
      EXPECT_EQ(a.rows, b.rows);
      EXPECT_EQ(a.undefined, b.undefined);
      EXPECT_EQ(a.median, b.median);
      expect_same_row_max(a.worst, b.worst);
      EXPECT_EQ(a.above_50, b.above_50);
      EXPECT_EQ(a.above_90, b.above_90);
      EXPECT_EQ(a.worse, b.worse);
      expect_same_row_max(a.relative_worsening, b.relative_worsening);
      expect_same_row_max(a.points_worsening, b.points_worsening);
      EXPECT_EQ(a.kept_head, b.kept_head);
      EXPECT_EQ(a.self_only, b.self_only);
      EXPECT_EQ(a.context_median, b.context_median);
      EXPECT_EQ(a.context_rows, b.context_rows);
      EXPECT_EQ(a.context_above_50, b.context_above_50);
      expect_same_row_max(a.context_worst, b.context_worst);
    }
    ASSERT_EQ(m.mixing.size(), single.mixing.size());
    for (size_t l = 0; l < m.mixing.size(); ++l) {
      EXPECT_EQ(m.mixing[l].attention.buckets(), single.mixing[l].attention.buckets());
      EXPECT_EQ(m.mixing[l].residual.buckets(), single.mixing[l].residual.buckets());
      EXPECT_EQ(m.mixing[l].residual_layernorm.buckets(), single.mixing[l].residual_layernorm.buckets());
    }
    ASSERT_EQ(m.depth.size(), single.depth.size());
    for (size_t l = 0; l < m.depth.size(); ++l) {
      expect_same_ratio(m.depth[l].cls_value.summary(), single.depth[l].cls_value.summary());
      expect_same_ratio(m.depth[l].sep_value.summary(), single.depth[l].sep_value.summary());
      EXPECT_EQ(m.depth[l].undefined, single.depth[l].undefined);
      for (size_t li = 0; li < m.depth[l].shares.size(); ++li)
        EXPECT_EQ(m.depth[l].shares[li].buckets(), single.depth[l].shares[li].buckets());
    }
    expect_same_ratio(m.cls_value, single.cls_value);
    expect_same_ratio(m.sep_value, single.sep_value);
    expect_same_ratio(m.cls_transformed, single.cls_transformed);
    expect_same_ratio(m.sep_transformed, single.sep_transformed);
    ASSERT_EQ(m.recorded.size(), single.recorded.size());
    for (size_t i = 0; i < m.recorded.size(); ++i) EXPECT_EQ(m.recorded[i].problem, single.recorded[i].problem);
    const fs::path out = dir / fmt::format("merged-{}", shards);
    write_audit_reports(m, out);
    for (const char* file : {"audit.md", "audit.json", "sink-shares.svg"})
      EXPECT_EQ(test::read_file(out / file), test::read_file(dir / "single" / file)) << file;
  }
}

}  // namespace

TEST(Histogram, ShareMedianIsWithinHalfABucketOfTheExactMedian) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> share(0, 1);
  for (size_t n : {1, 2, 3, 10, 101, 1000, 4096}) {
    std::vector<double> values;
    Histogram h(Histogram::Scale::share);
    for (size_t i = 0; i < n; ++i) {
      values.push_back(i % 3 ? share(rng) : std::pow(share(rng), 6));  // crowded near 0, and spread
      h.add(values.back());
    }
    EXPECT_EQ(h.count(), n);
    EXPECT_NEAR(h.median(), exact_median(values), Histogram::kShareWidth / 2) << n;
  }
  Histogram ends(Histogram::Scale::share);
  ends.add(0);
  ends.add(1);
  ends.add(1);
  EXPECT_NEAR(ends.median(), 1.0, Histogram::kShareWidth / 2);  // 1.0 falls into the last bucket
}

TEST(Histogram, RatioMedianIsWithinTheRelativeErrorOfTheExactMedian) {
  std::mt19937_64 rng(12);
  std::lognormal_distribution<double> ratio(-0.5, 1.5);
  for (size_t n : {1, 2, 7, 100, 999, 5000}) {
    std::vector<double> values;
    Histogram h(Histogram::Scale::ratio);
    for (size_t i = 0; i < n; ++i) {
      values.push_back(ratio(rng));
      h.add(values.back());
    }
    const double exact = exact_median(values);
    EXPECT_LE(std::fabs(h.median() - exact), Histogram::kRatioError * exact) << n;
  }
  Histogram zero(Histogram::Scale::ratio);
  zero.add(0);
  EXPECT_EQ(zero.median(), 0);
  Histogram infinite(Histogram::Scale::ratio);  // the end bucket, at 1e9
  infinite.add(INFINITY);
  EXPECT_NEAR(infinite.median(), 1e9, 1e9 * 2 * Histogram::kRatioError);
}

TEST(Histogram, MergedPartsEqualTheWholeAndTheSizeIsBounded) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> share(0, 1);
  std::lognormal_distribution<double> ratio(0, 8);  // wide: many values beyond [1e-9, 1e9]
  Histogram whole_share(Histogram::Scale::share), whole_ratio(Histogram::Scale::ratio);
  std::vector<Histogram> share_parts(7, Histogram(Histogram::Scale::share)),
      ratio_parts(7, Histogram(Histogram::Scale::ratio));
  for (size_t i = 0; i < 300000; ++i) {
    const double s = share(rng), r = ratio(rng);
    whole_share.add(s);
    whole_ratio.add(r);
    share_parts[i % 7].add(s);
    ratio_parts[i % 7].add(r);
  }
  Histogram merged_share(Histogram::Scale::share), merged_ratio(Histogram::Scale::ratio);
  for (size_t k = 0; k < 7; ++k) {
    merged_share.merge(share_parts[k]);
    merged_ratio.merge(ratio_parts[k]);
  }
  EXPECT_EQ(merged_share.buckets(), whole_share.buckets());
  EXPECT_EQ(merged_ratio.buckets(), whole_ratio.buckets());
  EXPECT_EQ(merged_share.median(), whole_share.median());
  EXPECT_EQ(whole_share.buckets().size(), 10000u);  // every bucket filled, and no more
  EXPECT_LE(whole_ratio.buckets().size(), 20725u);
  EXPECT_THROW(whole_share.set(10000, 1), std::out_of_range);
  EXPECT_THROW(whole_ratio.set(20000, 1), std::out_of_range);
}

// A single pass keeps the first row with the largest value; merging shards in any order does too.
TEST(RowMax, OnATieTheEarlierRowWinsWhateverTheMergeOrder) {
  const AuditRow first{"line-3", 1, {"a", "b"}, {}, 2}, later{"line-9", 0, {"c"}, {}, 8};
  RowMax pass, early, late;
  pass.offer(0.7, first, 0.1, 0.7);
  pass.offer(0.7, later, 0.2, 0.7);
  early.offer(0.7, first, 0.1, 0.7);
  late.offer(0.7, later, 0.2, 0.7);
  for (RowMax m : {late, early}) {
    m.merge(m.at == late.at ? early : late);
    EXPECT_EQ(m.where, "line-3: b");
    EXPECT_EQ(m.where, pass.where);
    EXPECT_EQ(m.baseline, 0.1);
  }
  late.offer(0.8, later, 0.2, 0.8);
  early.merge(late);
  EXPECT_EQ(early.where, "line-9: c");
}

TEST(AuditShard, ParsesKOverNAndSharesRoundRobin) {
  const AuditShard s = AuditShard::parse("2/7");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 7u);
  EXPECT_TRUE(s.owns(9));
  EXPECT_FALSE(s.owns(10));
  for (const char* bad : {"7/7", "1", "a/2", "-1/2", "1/0", "/3", "1/ 2"})
    EXPECT_THROW(AuditShard::parse(bad), InputError) << bad;
}

// A corpus longer than the shown sentences (12 here, where the CLI shows 200): the shown rows come from
// every shard, and so, one sentence each over 7 shards, do the rows past them.
TEST(AuditMerge, EqualsTheSingleRunOnAGeneratedCorpusFor1And2And7Shards) {
  const fs::path dir = test::temp_dir("corpus");
  const AuditOptions options{.shown_sentences = 12};
  write_corpus(dir / "corpus.txt", options.shown_sentences + 7, 5);
  const StudyPlan plan = load_study_plan(corpus_plan(dir, dir / "corpus.txt"));
  expect_merge_equals_single(
      plan, dir, planted(), run_audit(plan, planted(), {.threads = 2, .shown_sentences = options.shown_sentences}),
      options);
  EXPECT_NE(test::read_file(dir / "single/audit.md").find("rows of the first 12 sentences"), std::string::npos);
}

// The registered plan: 14 sentences over 7 shards, with the recorded numbers re-derived.
TEST(AuditMerge, EqualsTheSingleRunOnTheRegisteredPlanWithItsRecordedNumbers) {
  const StudyPlan plan = load_study_plan(kPlan);
  expect_merge_equals_single(plan, test::temp_dir("registered"), planted(), run_audit(plan, planted(), {.threads = 2}));
}

// The residual lens's plan on trained-mini, whose AttnResLn-N rows and mixing ratios spread over many buckets
// (on the planted sinks they are all 0): the mixing ratios per layer and the context shares merge exactly too.
TEST(AuditMerge, EqualsTheSingleRunOnTheResidualLayerNormPlanWithItsMixingRatios) {
  const StudyPlan plan = load_study_plan(test::source_dir() / "fixtures/studies/residual-layernorm-sink.yaml");
  const Checkpoint trained = load_checkpoint(test::fixture("trained-mini"));
  const AuditResult single = run_audit(plan, trained, {.threads = 2});
  ASSERT_EQ(single.mixing.size(), size_t(trained.config.num_hidden_layers));
  EXPECT_GT(single.mixing[0].residual_layernorm.buckets().size(), 10u);
  EXPECT_GT(single.context_shares.back().buckets().size(), 10u);
  expect_merge_equals_single(plan, test::temp_dir("residual"), trained, single);
}

TEST(AuditMerge, RefusesPartialsOfAnotherPlanModelCorpusOrBuildAndMissingOrRepeatedShards) {
  const fs::path dir = test::temp_dir("refuse");
  write_corpus(dir / "corpus.txt", 40, 5);
  const StudyPlan plan = load_study_plan(corpus_plan(dir, dir / "corpus.txt"));
  const AuditPartial zero = audit_shard(plan, planted(), {0, 3}), one = audit_shard(plan, planted(), {1, 3}),
                     two = audit_shard(plan, planted(), {2, 3});
  auto refusal = [&](const std::vector<AuditPartial>& partials) {
    try {
      merge_audit(plan, partials);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("merged");
  };
  EXPECT_NE(refusal({zero, two}).find("shard 1/3 is missing"), std::string::npos) << refusal({zero, two});
  EXPECT_NE(refusal({zero, one, one, two}).find("shard 1/3 again"), std::string::npos);
  EXPECT_EQ(refusal({two, zero, one}), "merged");

  write_corpus(dir / "other.txt", 40, 6);
  StudyPlan other = plan;
  other.sentences = dir / "other.txt";
  EXPECT_NE(refusal({zero, audit_shard(other, planted(), {1, 3}), two}).find("corpus SHA-256"), std::string::npos);

  const Checkpoint bert_mini = load_checkpoint(test::bert_mini());
  EXPECT_NE(refusal({zero, audit_shard(plan, bert_mini, {1, 3}), two}).find("model SHA-256"), std::string::npos);

  AuditPartial other_build = one;
  other_build.build_sha256 = std::string(64, '0');
  EXPECT_NE(refusal({zero, other_build, two}).find("build SHA-256"), std::string::npos);

  AuditPartial of_two = audit_shard(plan, planted(), {1, 2});
  EXPECT_NE(refusal({zero, of_two, two}).find("is shard 1/2, but"), std::string::npos);

  test::write_file(dir / "plan.yaml", test::read_file(dir / "plan.yaml") + "# edited after the shards ran\n");
  const StudyPlan edited = load_study_plan(dir / "plan.yaml");
  EXPECT_THROW(merge_audit(edited, {zero, one, two}), InputError);
}

// Through the CLI, as a cluster runs it: a shard that fails leaves no partial, merge names the
// missing shard and exits 2, a rerun replaces what is there, and the merge then gives the single
// run's reports and exit code.
TEST(AuditMerge, CliFaultsLeaveNoPartialAndARerunReplacesIt) {
  const fs::path dir = test::temp_dir("cli");
  write_corpus(dir / "corpus.txt", 15, 5);
  // Sentence 4 (shard 1 of 3) is too long for the model: shard 1 fails on it.
  std::string corpus = test::read_file(dir / "corpus.txt");
  std::string too_long;
  for (int i = 0; i < 600; ++i) too_long += "word ";
  std::istringstream lines(corpus);
  std::string text;
  int at = 0;
  for (std::string line; std::getline(lines, line); ++at) text += (at == 4 ? too_long : line) + "\n";
  test::write_file(dir / "corpus.txt", text);
  const std::string plan = corpus_plan(dir, dir / "corpus.txt").string();
  auto shard = [&](int k) {
    return test::run_cli(fmt::format("audit --plan '{}' --shard {}/3 --partial '{}'", plan, k,
                                     (dir / fmt::format("p{}.json", k)).string()));
  };
  auto merge = [&](const std::string& partials) {
    return test::run_cli(fmt::format("audit-merge --plan '{}' --out '{}' {}", plan, (dir / "merged").string(), partials));
  };
  const std::string all = fmt::format("'{0}/p0.json' '{0}/p1.json' '{0}/p2.json'", dir.string());

  auto r = shard(1);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("corpus.txt: line 5"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "p1.json"));
  EXPECT_EQ(shard(0).exit_code, 0);
  EXPECT_EQ(shard(2).exit_code, 0);
  r = merge(fmt::format("'{0}/p0.json' '{0}/p2.json'", dir.string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("shard 1/3 is missing"), std::string::npos) << r.output;

  // The corpus mended: shard 1 runs, but shards 0 and 2 saw the old corpus.
  test::write_file(dir / "corpus.txt", corpus);
  EXPECT_EQ(shard(1).exit_code, 0);
  r = merge(all);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("corpus SHA-256"), std::string::npos) << r.output;
  EXPECT_EQ(shard(0).exit_code, 0);
  EXPECT_EQ(shard(2).exit_code, 0);

  // A partial cut short is refused by name; a rerun replaces it.
  test::write_file(dir / "p1.json", test::read_file(dir / "p1.json").substr(0, 100));
  r = merge(all);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("p1.json: not a partial audit"), std::string::npos) << r.output;
  EXPECT_EQ(shard(1).exit_code, 0);
  EXPECT_EQ(merge(fmt::format("'{0}/p0.json' '{0}/p0.json' '{0}/p1.json' '{0}/p2.json'", dir.string())).exit_code, 2);

  const auto single = test::run_cli(fmt::format("audit --plan '{}' --out '{}'", plan, (dir / "single").string()));
  r = merge(all);
  EXPECT_EQ(r.exit_code, single.exit_code) << r.output;
  EXPECT_NE(single.exit_code, 2) << single.output;
  EXPECT_EQ(test::read_file(dir / "merged/audit.json"), test::read_file(dir / "single/audit.json"));
  EXPECT_EQ(test::read_file(dir / "merged/audit.md"), test::read_file(dir / "single/audit.md"));
  EXPECT_EQ(std::count_if(fs::directory_iterator(dir), fs::directory_iterator(),
                          [](const fs::directory_entry& e) { return e.path().string().find(".tmp-") != std::string::npos; }),
            0);
}

// A shard killed mid-run (SIGKILL: no handler runs) leaves no partial behind.
TEST(AuditMerge, AKilledShardLeavesNoPartial) {
  const fs::path dir = test::temp_dir("killed");
  // 2 000 sentences: the CLI shows progress from 1 000 on, every 5 %, here after its second batch of
  // 32 (sentence 128), with over 900 of its own still to run when the kill comes.
  write_corpus(dir / "corpus.txt", 2000, 5);
  const std::string plan = corpus_plan(dir, dir / "corpus.txt").string();
  // Killed once its progress shows it is under way.
  test::write_file(dir / "kill.sh", fmt::format(R"(
"{}" audit --plan '{}' --shard 0/2 --partial '{}/p0.json' --threads 1 2> '{}/progress' &
pid=$!
for i in $(seq 600); do grep -q sentences '{}/progress' && break; sleep 0.05; done
kill -KILL $pid
wait $pid
echo $? > '{}/status'
)", LENSCHECK_CLI, plan, dir.string(), dir.string(), dir.string(), dir.string()));
  ASSERT_EQ(std::system(("bash '" + (dir / "kill.sh").string() + "'").c_str()), 0);
  EXPECT_EQ(test::read_file(dir / "status"), "137\n") << test::read_file(dir / "progress");
  EXPECT_NE(test::read_file(dir / "progress").find("audit: "), std::string::npos);
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find("p0.json"), std::string::npos) << e.path();
}
