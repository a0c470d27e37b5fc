#include "gate/candidate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "common/parallel.h"
#include "gate/verify.h"
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

namespace {

// "layer.*.lens.residual_norm, embeddings.output": each family once, in forward order.
std::string families_of(const std::vector<std::string>& names) {
  std::vector<std::string> families;
  for (const std::string& n : names)
    if (std::find(families.begin(), families.end(), family_of(n)) == families.end()) families.push_back(family_of(n));
  return fmt::format("{}", fmt::join(families, ", "));
}

// What a reference trace lacks of the schema: the lens tensors derived where it holds their inputs, the rest
// unreachable but the last layer's output, which stays missing and fails: there is nothing to judge without it.
struct Coverage {
  std::vector<std::string> derived;
  std::vector<Unreachable> unreachable;
  bool only_the_output = false;  // it held no tensor of the schema but the last layer's output
  bool operator==(const Coverage& other) const {
    auto names = [](const std::vector<Unreachable>& u) {
      std::vector<std::string> n;
      for (const Unreachable& x : u) n.push_back(x.tensor);
      return n;
    };
    return derived == other.derived && names(unreachable) == names(other.unreachable);
  }
};

Coverage fill_in(Trace& trace, const runtime::Encoder& lens_code, const BertConfig& config,
                 const std::filesystem::path& file) {
  const std::vector<TensorSpec> schema = trace_schema(config, int64_t(trace.input_ids.size()));
  const std::string last = trace_name(config.num_hidden_layers - 1, LayerTensor::output);
  std::set<std::string> held;
  for (const TensorSpec& spec : schema)
    if (trace.find(spec.name)) held.insert(spec.name);
  Coverage c;
  try {
    c.derived = lens_code.derive_lenses(trace);
  } catch (const std::invalid_argument& e) {
    throw InputError(file, e.what());
  }
  c.only_the_output = held == std::set<std::string>{last};
  for (const TensorSpec& spec : schema) {
    if (trace.find(spec.name) || spec.name == last) continue;
    std::vector<std::string> lacking;  // by family: the reports group what is unreachable by family and why
    for (const std::string& input : runtime::lens_inputs(spec.name))
      if (!held.count(input)) lacking.push_back(input);
    c.unreachable.push_back({spec.name, lacking.empty() ? "not in the trace"
                                                         : fmt::format("not in the trace, nor derivable without {}",
                                                                       families_of(lacking))});
  }
  return c;
}

}  // namespace

ReferenceTraces reference_traces(const Checkpoint& ck, const std::filesystem::path& reference,
                                 std::optional<Arithmetic> declared, bool require_all) {
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
  const runtime::Encoder lens_code(ck.config, ck.weights);
  std::optional<Coverage> coverage;  // the first trace's; every other must lack the same
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
    if (!require_all) {
      const Coverage c = fill_in(t, lens_code, ck.config, file);
      if (coverage && !(c == *coverage))
        throw InputError(file, fmt::format("lacks other tensors of the schema than {} does: judge traces that hold "
                                           "the same tensors together", files.front().filename().string()));
      coverage = c;
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
  if (coverage && !coverage->derived.empty())
    r.notes.push_back(fmt::format("derived: {} tensors the traces lack ({}), by lenscheck's runtime lens code in fp32 "
                                  "from the traces' own attention.value and attention.probs (the residual lens also "
                                  "their attention.pre_norm and each layer's input), as for onnx:PATH",
                                  coverage->derived.size(), families_of(coverage->derived)));
  if (coverage && coverage->only_the_output)
    r.notes.push_back(fmt::format("the traces hold no tensor of the schema but {}: it is judged as one span, "
                                  "recomputed from the input ids through the whole forward",
                                  trace_name(ck.config.num_hidden_layers - 1, LayerTensor::output)));
  std::vector<Unreachable> unreachable = coverage ? coverage->unreachable : std::vector<Unreachable>{};
  std::vector<std::string> derived = coverage ? coverage->derived : std::vector<std::string>{};
  // Each request of an input takes the next of its traces, in file order: verify asks for every input
  // once, in order, so each sentence gets its own file's trace.
  r.candidate.run = [held, producer, unreachable, derived](const Checkpoint&, const std::vector<Encoding>& inputs,
                                                           const runtime::Stages* stages, unsigned) {
    if (stages) throw std::logic_error("a reference trace's stages cannot be replaced");
    CandidateRun run;
    run.label = producer;
    run.unreachable = unreachable;
    run.derived = derived;
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
