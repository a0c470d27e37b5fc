// lenscheck inspect, make-fixture and make-corpus: what a checkpoint holds, and the generated inputs.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "inspect/inspect.h"
#include "model/checkpoint.h"
#include "synth/corpus.h"
#include "synth/fixture.h"

namespace lenscheck::cli {

Command add_inspect(CLI::App& app, const Shared&) {
  struct Options {
    std::string model_dir, json;
  };
  auto o = std::make_shared<Options>();
  auto* inspect = app.add_subcommand("inspect", "what a checkpoint holds as loaded: config, dtypes, ignored "
                                                "tensors, vocabulary, per-parameter statistics");
  inspect->add_option("--model", o->model_dir, "checkpoint directory")->required();
  inspect->add_option("--json", o->json, "JSON report path");
  return {inspect, [o] {
            const Checkpoint ck = load_checkpoint(o->model_dir);
            const std::vector<ParamStats> stats = parameter_stats(ck);
            fmt::print("{}", inspection_text(ck, stats));
            if (!o->json.empty()) {
              write_inspection_json(ck, stats, o->json);
              fmt::print("wrote {}\n", o->json);
            }
            return kPass;
          }};
}

Command add_make_fixture(CLI::App& app, const Shared&) {
  struct Options {
    FixtureOptions fixture;
    std::string out, vocab;
  };
  auto o = std::make_shared<Options>();
  FixtureOptions& f = o->fixture;
  auto* make = app.add_subcommand("make-fixture", "write a deterministic BERT checkpoint (HF layout)");
  make->add_option("--out", o->out, "output directory")->required();
  make->add_option("--seed", f.seed, "weight seed")->capture_default_str();
  make->add_option("--vocab", o->vocab, "the WordPiece vocab.txt to ship (BERT uncased: its size is the "
                                       "embedding table's)")->required();
  make->add_flag("--tiny", f.tiny, "2 layers, hidden 32 instead of BERT-mini's shape");
  make->add_flag("--bert-base", f.bert_base, "BERT-base's shape: 12 layers, hidden 768, 12 heads, "
                                             "intermediate 3072 (440 MB)");
  make->add_flag("--trained", f.trained, "trained BERT's weight statistics: spread 0.05, LayerNorm gains "
                                         "0.5-1.5 with two outlier dimensions at 8");
  make->add_flag("--prefixed", f.prefixed, "BertForMaskedLM names: bert. prefix, pooler, cls heads");
  make->add_flag("--float64", f.float64, "store weights as F64");
  make->add_flag("--planted-sink", f.planted_sink,
                 "constructed weights whose [CLS]/[SEP] sink and value norms are known");
  make->add_flag("--saturated-sink", f.saturated_sink,
                 "the same construction with saturated sinks: scores up to 120 (past fp32's exp range), "
                 "content attention exactly 0 in fp32, sink value norms 0-0.1");
  make->add_flag("--saturated-peaks", f.saturated_peaks,
                 "the same construction with saturated content peaks: rows one-hot on content words (score "
                 "gaps past fp32's exp range) in most heads, twin heads that tie exactly");
  return {make, [o] {
            FixtureOptions fixture = o->fixture;
            fixture.out = o->out;
            fixture.vocab = o->vocab;
            make_fixture(fixture);
            fmt::print("wrote {}\n", o->out);
            return kPass;
          }};
}

Command add_make_corpus(CLI::App& app, const Shared&) {
  struct Options {
    std::string out;
    size_t sentences = 1000, max_words = 100;
    uint64_t seed = 1;
    std::vector<std::string> texts;
  };
  auto o = std::make_shared<Options>();
  auto* corpus = app.add_subcommand("make-corpus", "write a corpus for audits at scale, one sentence per line: "
                                                   "generated sentences, or the sentences of English text files");
  corpus->add_option("--out", o->out, "output .txt")->required();
  auto* sentences = corpus->add_option("--sentences", o->sentences, "how many generated sentences")
                        ->capture_default_str()->check(CLI::Range(1, 100000000));
  auto* seed = corpus->add_option("--seed", o->seed, "sentence seed")->capture_default_str();
  auto* from = corpus->add_option("--from", o->texts, "English text file(s) to split into sentences instead (a "
                                                      "blank line ends a paragraph)")
                   ->excludes(sentences)->excludes(seed);
  corpus->add_option("--max-words", o->max_words, "with --from: leave out longer sentences (counted)")
      ->capture_default_str()->check(CLI::Range(1, 400))->needs(from);
  return {corpus, [o] {
            if (o->texts.empty()) {
              write_corpus(o->out, o->sentences, o->seed);
              fmt::print("wrote {} ({} sentences)\n", o->out, o->sentences);
              return kPass;
            }
            const TextCorpus text = write_corpus_from_text({o->texts.begin(), o->texts.end()}, o->out, o->max_words);
            fmt::print("wrote {} ({} sentences from {} text files; {} of more than {} words left out)\n", o->out,
                       text.sentences, o->texts.size(), text.too_long, o->max_words);
            return kPass;
          }};
}

}  // namespace lenscheck::cli
