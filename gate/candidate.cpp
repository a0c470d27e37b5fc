#include "gate/candidate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "common/parallel.h"
#include "model/error.h"
#include "model/trace_io.h"
#include "runtime/encoder.h"

namespace lenscheck {

Candidate runtime_candidate() {
  Candidate c;
  c.replaceable_stages = true;
  c.run = [](const Checkpoint& ck, const std::vector<Encoding>& inputs, const runtime::Stages* stages,
             unsigned threads) {
    const runtime::Encoder encoder(ck.config, ck.weights, 1, stages ? *stages : runtime::shipped_stages());
    CandidateRun r;
    r.traces.resize(inputs.size());
    r.label = "runtime fp32";
    parallel_for(inputs.size(), threads, [&](size_t i) { r.traces[i] = encoder.forward(inputs[i]); });
    return r;
  };
  return c;
}

ReferenceTraces reference_traces(const Checkpoint& ck, const std::filesystem::path& reference,
                                 std::optional<Arithmetic> declared) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(reference)) {
    for (const auto& entry : std::filesystem::directory_iterator(reference))
      if (entry.path().extension() == ".safetensors") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(reference, "the directory holds no .safetensors trace");
  } else {
    files.push_back(reference);
  }
  ReferenceTraces r;
  // By input ids, in file order: a folder may hold traces of one sentence in several precisions.
  struct Held {
    std::map<std::vector<int64_t>, std::vector<Trace>> traces;
    std::map<std::vector<int64_t>, size_t> served;
  };
  auto held = std::make_shared<Held>();
  std::string producer;
  for (const std::filesystem::path& file : files) {
    Trace t = load_trace(file, ck.vocab);
    if (t.input_ids.size() > size_t(ck.config.max_position_embeddings))
      throw InputError(file, fmt::format("input_ids has {} tokens, more than max_position_embeddings {}",
                                         t.input_ids.size(), ck.config.max_position_embeddings));
    // What the traces declare, unless the caller declares for them: all alike, or the verdict would mix rules.
    if (declared) {
      r.candidate.arithmetic = *declared;
    } else {
      std::optional<std::string> note;  // a trace that says nothing declares fp32
      const Arithmetic a = declared_in_trace(t.precision, file.string(), note);
      if (note && std::find(r.notes.begin(), r.notes.end(), *note) == r.notes.end()) r.notes.push_back(*note);
      if (file != files.front() && a != r.candidate.arithmetic)
        throw InputError(file, fmt::format("declares {}, {} declares {}: judge traces of one precision at a time "
                                           "(or give --precision)", t.precision, files.front().filename().string(),
                                           arithmetic_name(r.candidate.arithmetic)));
      r.candidate.arithmetic = a;
    }
    if (t.word_ids.empty() && !r.without_words) r.without_words = file;
    if (producer.empty()) producer = t.producer.empty() ? "reference trace" : t.producer;
    r.sentences.push_back({file.filename().string(), "(input ids of the reference trace)", 0});
    Encoding& input = r.inputs.emplace_back();
    input.ids = t.input_ids;
    input.tokens = t.tokens;
    input.word_ids = t.word_ids;
    held->traces[t.input_ids].push_back(std::move(t));
  }
  r.candidate.name = reference.string();
  // Each request of an input takes the next of its traces, in file order: verify asks for every input
  // once, in order, so each sentence gets its own file's trace.
  r.candidate.run = [held, producer](const Checkpoint&, const std::vector<Encoding>& inputs,
                                     const runtime::Stages* stages, unsigned) {
    if (stages) throw std::logic_error("a reference trace's stages cannot be replaced");
    CandidateRun run;
    run.label = producer;
    for (const Encoding& e : inputs) {
      const auto it = held->traces.find(e.ids);
      if (it == held->traces.end()) throw std::logic_error("no reference trace of these input ids");
      run.traces.push_back(it->second[held->served[e.ids]++ % it->second.size()]);
    }
    return run;
  };
  return r;
}

}  // namespace lenscheck
