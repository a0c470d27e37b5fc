// lenscheck mutate: the mutation catalogue (metric cases and runtime faults) on one or more checkpoints.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "model/error.h"
#include "mutations/mutate.h"

namespace lenscheck::cli {

Command add_mutate(CLI::App& app, const Shared& shared) {
  struct Options {
    std::vector<std::string> models;
    std::string sentences, tolerances, plan, only, report, json;
    bool list = false;
  };
  auto o = std::make_shared<Options>();
  o->sentences = shared.data.sentences();
  o->tolerances = shared.data.tolerances();
  o->plan = shared.data.study_plan();
  auto* mutate = app.add_subcommand("mutate", "run the mutation catalogue: metric cases and runtime faults");
  mutate->add_option("--model", o->models,
                     "checkpoint directory, repeatable: one report over all (" + shared.data.bert_mini_help() + ")");
  mutate->add_option("--sentences", o->sentences, "sentences YAML")->capture_default_str();
  mutate->add_option("--tolerances", o->tolerances, "tolerances YAML")->capture_default_str();
  mutate->add_option("--plan", o->plan, "study plan whose recorded numbers check the rows")->capture_default_str();
  mutate->add_option("--only", o->only, "run one case");
  mutate->add_flag("--list", o->list, "print the catalogue");
  mutate->add_option("--report", o->report, "Markdown report path");
  mutate->add_option("--json", o->json, "JSON report path");
  return {mutate, [o, &shared] {
            if (o->list) {
              for (const mutation::Case* c : mutation::sorted_catalogue())
                fmt::print("{:<28} {:<14} {}{}\n", c->name,
                           c->kind == mutation::Kind::metric ? "metric" : "implementation", c->description,
                           c->equivalence ? " [equivalence decided per model]" : "");
              return kPass;
            }
            const DataPaths& data = shared.data;
            if (o->models.empty()) o->models.push_back(data.bert_mini().string());
            const Tolerances tol = load_tolerances(data.checked(o->tolerances));
            const auto sentences = load_sentences(data.checked(o->sentences));
            const StudyPlan plan = load_study_plan(data.checked(o->plan));
            const Checkpoint plan_ck = load_checkpoint(study_model(plan, ""));
            std::vector<mutation::MutateResult> results;
            for (const std::string& dir : o->models) {
              const Checkpoint ck = load_checkpoint(dir);
              try {
                results.push_back(mutation::run_mutations(
                    {ck, sentences, o->sentences, tol, plan, plan_ck, o->only, shared.threads}));
              } catch (const std::invalid_argument& e) {
                throw InputError("--only", e.what());
              }
              const mutation::MutateResult& r = results.back();
              if (o->models.size() > 1) fmt::print("model {}\n", dir);
              for (const mutation::CaseResult& c : r.cases)
                fmt::print("{:<28} {:<34} {}{}\n", c.mutation->name, c.ok() ? c.status() : c.status() + "  <-- ",
                           c.outcome.evidence, c.mutation->equivalence ? " [" + c.equivalence.why + "]" : "");
              fmt::print("mutation score {}/{} ordinary mutants killed, {} equivalent here, {} borderline; {:.2f} s "
                         "(set-up {:.2f} s)\n",
                         r.killed(), r.non_equivalent(), r.with(mutation::Equivalence::Verdict::equivalent),
                         r.with(mutation::Equivalence::Verdict::borderline), r.total_seconds, r.setup_seconds);
            }
            if (!o->report.empty()) mutation::write_mutate_markdown(results, o->report);
            if (!o->json.empty()) mutation::write_mutate_json(results, o->json);
            for (const std::string& f : {o->report, o->json})
              if (!f.empty()) fmt::print("wrote {}\n", f);
            const bool pass = std::all_of(results.begin(), results.end(), [](const auto& r) { return r.pass(); });
            fmt::print("mutate: {}\n", pass ? "PASS" : "FAIL");
            return pass ? kPass : kFail;
          }};
}

}  // namespace lenscheck::cli
