#include "transformers/candidate.h"

#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/python_adapter.h"
#include "model/error.h"
#include "runtime/encoder.h"

namespace lenscheck::transformers {

Attention parse_candidate(const std::string& candidate) {
  if (candidate == "transformers" || candidate == "transformers:eager") return Attention::eager;
  if (candidate == "transformers:sdpa") return Attention::sdpa;
  throw InputError("--candidate", fmt::format("\"{}\" is not runtime, onnxruntime[:fp16|:int8], onnx:PATH or "
                                              "transformers[:eager|:sdpa]", candidate));
}

std::string parse_torch_dtype(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "fp16" || dtype == "bf16") return dtype;
  throw InputError("--torch-dtype", fmt::format("\"{}\" is not fp32, fp16 or bf16", dtype));
}

OpFault parse_op_fault(const std::string& text) {
  const size_t colon = text.rfind(':');
  OpFault f;
  try {
    size_t used = 0;
    if (colon == std::string::npos || colon == 0) throw std::invalid_argument("no colon");
    f.module = text.substr(0, colon);
    f.delta = std::stod(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw InputError("--fault-op", fmt::format("\"{}\" is not MODULE:DELTA (e.g. "
                                               "encoder.layer.1.attention.self.value:1e-3)", text));
  }
  return f;
}

Arithmetic declared_arithmetic(const std::string& torch_dtype) {
  return torch_dtype == "bf16" ? Arithmetic::bf16 : torch_dtype == "fp16" ? Arithmetic::fp16 : Arithmetic::fp32;
}

namespace {

const char* attention_name(Attention a) { return a == Attention::eager ? "eager" : "sdpa"; }

// How to install what the adapter found missing (its exit code 3): the set-up lenscheck pins, and what
// the cells it cannot run need (reports/verify-transformers.md).
std::string install_hint(const std::filesystem::path& env) {
  return fmt::format("scripts/install-deps.sh --data makes .deps/transformers, transformers and torch as pinned there "
                     "(4.49.0 on 2.5.1); another environment needs torch >= 2.1.1 for SDPA and a 2.x torch for fp16 "
                     "on the CPU: `{}/bin/pip install 'torch>=2.1.1' 'transformers>=4.41'` (PyPI's Linux torch brings "
                     "CUDA libraries of several GB; transformers/README.md)",
                     env.string());
}

// What an attention path hides from the adapter, and why: nothing under eager.
std::vector<Unreachable> unreachable_of(const BertConfig& config, Attention attention) {
  std::vector<Unreachable> hidden;
  for (const TensorSpec& spec : trace_schema(config, 1)) {
    const std::string& name = spec.name;
    if (attention == Attention::sdpa && name.ends_with(".attention.scores"))
      hidden.push_back({name, "SDPA fuses scores, softmax and the weighted sum in one call"});
    else if (attention == Attention::sdpa && name.ends_with(".attention.probs"))
      hidden.push_back({name, "SDPA computes no probabilities: torch's scaled_dot_product_attention fuses them"});
    else if (attention == Attention::sdpa && !runtime::lens_inputs(name).empty())
      hidden.push_back({name, "a lens tensor, derived from the candidate's attention.probs, which SDPA does not compute"});
  }
  return hidden;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

Candidate candidate(const CandidateSpec& spec) {
  Candidate c;
  c.name = fmt::format("transformers:{}", attention_name(spec.attention));
  c.arithmetic = declared_arithmetic(spec.torch_dtype);
  c.run = [spec, name = c.name, precision = arithmetic_name(c.arithmetic)](
              const Checkpoint& ck, const std::vector<Encoding>& inputs, const runtime::Stages* stages, unsigned) {
    if (stages) throw std::logic_error("transformers' stages cannot be replaced");
    const AdapterCall call{
        .runs = "transformers",
        .adapter = spec.adapter.empty() ? std::filesystem::path(LENSCHECK_HF_ADAPTER) : spec.adapter,
        .python_env = spec.python_env.empty() ? std::filesystem::path(LENSCHECK_TRANSFORMERS_ENV) : spec.python_env,
        .startup_seconds = spec.startup_seconds,
        .sentence_seconds = spec.sentence_seconds,
        .install_hint = install_hint(spec.python_env.empty() ? LENSCHECK_TRANSFORMERS_ENV : spec.python_env)};
    if (!std::filesystem::exists(python_of(call.python_env)))
      throw InputError(call.python_env, fmt::format("{}: no Python environment here (no bin/python3): {}", name,
                                                    call.install_hint));
    if (!has_package(call.python_env, "transformers"))
      throw InputError(call.python_env, fmt::format("{}: the Python package transformers is not installed in this "
                                                    "environment: {}", name, call.install_hint));
    const std::filesystem::path weights = spec.weights.empty() ? ck.dir : spec.weights;
    nlohmann::json request = {{"model", std::filesystem::absolute(weights).string()},
                              {"attention", attention_name(spec.attention)},
                              {"dtype", spec.torch_dtype},
                              {"threads", spec.threads},
                              {"producer", name},
                              {"precision", precision}};
    if (spec.fault) request["fault"] = {{"module", spec.fault->module}, {"delta", spec.fault->delta}};
    AdapterRun run = run_adapter(call, std::move(request), inputs, name, ck.vocab);

    CandidateRun r;
    r.traces = std::move(run.traces);
    r.unreachable = unreachable_of(ck.config, spec.attention);
    if (spec.attention == Attention::eager) {
      // Derived in fp32, then stored as the declared scheme stores every value (bf16, fp16): lenscheck's
      // lens code computes them, not the candidate, and its fp32 digits are none of the scheme's values.
      const runtime::Encoder lens_code(ck.config, ck.weights);
      const FloatFormat stored = scheme_of(declared_arithmetic(spec.torch_dtype)).stored;
      for (Trace& trace : r.traces) {
        r.derived = lens_code.derive_lenses(trace);  // the same for every trace: each holds what the hooks give
        for (const std::string& tensor : r.derived)
          for (double& v : trace.find(tensor)->values) v = round_to(stored, v);
      }
    }
    r.label = fmt::format("{} BertModel, {} attention, torch_dtype {} (CPU, {} thread{})", run.version,
                          attention_name(spec.attention), spec.torch_dtype, spec.threads, spec.threads == 1 ? "" : "s");
    r.notes.push_back(fmt::format("candidate: {}; loaded from {} in {:.0f} ms (imports included); forward with hooks "
                                  "{:.2f} ms per sentence (median of {})",
                                  r.label, weights.string(), run.startup_ms, median(run.sentence_ms),
                                  run.sentence_ms.size()));
    if (spec.fault)
      r.notes.push_back(fmt::format("fault: {}'s output times 1 + {:g}", spec.fault->module, spec.fault->delta));
    if (spec.attention == Attention::eager)
      r.notes.push_back("derived: the lens tensors (value_norm, transformed_norm, lens.*, mixing_ratio.*), which "
                        "BertModel does not compute, by lenscheck's runtime lens code in fp32 from the candidate's own "
                        "attention.value and attention.probs (the residual lens also its attention.pre_norm and each "
                        "layer's input) and the checkpoint's W_O and attention LayerNorm gain, each value rounded to the "
                        "scheme's format");
    return r;
  };
  return c;
}

}  // namespace lenscheck::transformers
