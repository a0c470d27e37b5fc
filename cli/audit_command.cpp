// lenscheck audit and audit-merge: a pre-registered study run whole or in shards, and the shards merged.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "audit/audit_partial.h"
#include "audit/audit_report.h"
#include "cli/commands.h"
#include "model/checkpoint.h"

namespace lenscheck::cli {

namespace {

int report_audit(const AuditResult& r, const std::string& dir) {
  write_audit_reports(r, dir);
  print_audit_outcome(r, dir);
  return !r.recorded_hold() ? kFail : r.abandon() ? kAbandon : kPass;
}

std::string report_folder(const std::string& out, const StudyPlan& plan) {
  return out.empty() ? "reports/" + plan.study : out;
}

}  // namespace

Command add_audit(CLI::App& app, const Shared& shared) {
  struct Options {
    std::string plan_file, model_dir, out, shard = "0/1", partial;
  };
  auto o = std::make_shared<Options>();
  auto* audit = app.add_subcommand("audit", "run a pre-registered study; PROCEED exits 0, ABANDON 3");
  audit->add_option("--plan", o->plan_file, "study plan YAML (the bundled one: " + shared.data.study_plan().string() + ")")
      ->required();
  audit->add_option("--model", o->model_dir, "checkpoint directory (default: the plan's model)");
  audit->add_option("--out", o->out, "report folder (default: reports/<study>)");
  // Sharded audits: each shard writes a partial; audit-merge writes the reports of the whole.
  audit->add_option("--shard", o->shard, "K/N: only the sentences i (0-based) with i mod N = K")->needs(
      audit->add_option("--partial", o->partial, "write this shard's partial result (JSON) here, not the reports"));
  return {audit, [o, &shared] {
            const StudyPlan plan = load_study_plan(o->plan_file);
            const Checkpoint ck = load_checkpoint(study_model(plan, o->model_dir));
            for (const std::string& n : ck.notes) fmt::print(stderr, "note: {}\n", n);
            // Progress on stderr, about every 5 % (and not at all for a small study).
            size_t reported = 0;
            const auto progress = [&](size_t done, size_t total) {
              if (total >= 1000 && (done * 20 / total > reported || done == total)) {
                reported = done * 20 / total;
                fmt::print(stderr, "audit: {}/{} sentences\n", done, total);
              }
            };
            if (o->partial.empty())
              return report_audit(run_audit(plan, ck, {.threads = shared.threads, .progress = progress}),
                                  report_folder(o->out, plan));
            const AuditShard k = AuditShard::parse(o->shard);
            const AuditPartial p = audit_shard(plan, ck, k, {.threads = shared.threads, .progress = progress});
            write_partial(p, o->partial);
            fmt::print("audit: shard {} ({} of {} sentences) wrote {}\n", k.label(), p.sentences, p.corpus_sentences,
                       o->partial);
            return kPass;
          }};
}

Command add_audit_merge(CLI::App& app, const Shared&) {
  struct Options {
    std::string plan_file, out;
    std::vector<std::string> partials;
  };
  auto o = std::make_shared<Options>();
  auto* merge = app.add_subcommand("audit-merge", "merge the partials of every shard into the audit's reports");
  merge->add_option("--plan", o->plan_file, "study plan YAML the shards ran")->required();
  merge->add_option("--out", o->out, "report folder (default: reports/<study>)");
  merge->add_option("partials", o->partials, "one partial per shard")->required();
  return {merge, [o] {
            const StudyPlan plan = load_study_plan(o->plan_file);
            AuditMerge merged(plan);
            for (const std::string& p : o->partials) merged.add(read_partial(plan, p));
            return report_audit(merged.finish(), report_folder(o->out, plan));
          }};
}

}  // namespace lenscheck::cli
