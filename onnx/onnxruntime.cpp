#include "onnx/onnxruntime.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace lenscheck::onnxruntime {

Run run(const std::filesystem::path& model, const std::vector<Encoding>& encodings, const Options& options,
        const std::string& candidate, const std::string& precision, const Vocab& vocab) {
  AdapterCall call{.runs = "ONNX Runtime",
                   .adapter = options.adapter.empty() ? std::filesystem::path(LENSCHECK_ORT_ADAPTER) : options.adapter,
                   .python_env = options.python_env.empty() ? std::filesystem::path(LENSCHECK_PYTHON_ENV)
                                                            : options.python_env,
                   .startup_seconds = options.startup_seconds,
                   .sentence_seconds = options.sentence_seconds,
                   .plain = options.plain,
                   .install_hint = "scripts/install-deps.sh installs the pinned onnxruntime"};
  if (!std::filesystem::exists(python_of(call.python_env)))
    throw InputError(call.python_env, fmt::format("{}: no Python environment here (no bin/python3): create one with "
                                                  "`python3 -m venv {}` and install onnxruntime into it "
                                                  "(scripts/install-deps.sh does both)", candidate, call.python_env.string()));
  if (!has_package(call.python_env, "onnxruntime"))
    throw InputError(call.python_env, fmt::format("{}: the Python package onnxruntime is not installed in this "
                                                  "environment: install it with `{}/bin/pip install onnxruntime` "
                                                  "(scripts/install-deps.sh installs the pinned version)",
                                                  candidate, call.python_env.string()));
  nlohmann::json request = {{"model", std::filesystem::absolute(model).string()},
                            {"intra_op_threads", options.intra_op_threads},
                            {"graph_optimization", options.graph_optimization},
                            {"producer", candidate},
                            {"precision", precision},
                            {"plain", options.plain}};
  if (!options.optimized_model.empty())
    request["optimized_model"] = std::filesystem::absolute(options.optimized_model).string();
  if (!options.profile_prefix.empty())
    request["profile_prefix"] = std::filesystem::absolute(options.profile_prefix).string();
  AdapterRun a = run_adapter(call, std::move(request), encodings, candidate, vocab);
  Int8Sums int8_sums = Int8Sums::exact;  // only int8 reads it
  if (precision == arithmetic_name(Arithmetic::int8)) {
    const auto said = a.facts.find("int8_sums");
    if (said == a.facts.end() || (said->second != "exact" && said->second != "int16_pairs_saturated"))
      throw InputError(call.adapter, fmt::format("{}: the adapter did not say how MatMulInteger sums (`fact "
                                                 "int8_sums exact|int16_pairs_saturated`)",
                                                 candidate));
    int8_sums = said->second == "exact" ? Int8Sums::exact : Int8Sums::int16_pairs_saturated;
  }
  return {.version = a.version, .session_ms = a.startup_ms, .int8_sums = int8_sums,
          .sentence_ms = std::move(a.sentence_ms), .traces = std::move(a.traces)};
}

std::string int8_sums_note(Int8Sums sums) {
  return sums == Int8Sums::exact
             ? "int8 sums: exact, in int32 (ONNX Runtime's MatMulInteger on this CPU, as its adapter measured it)"
             : "int8 sums: ONNX Runtime's MatMulInteger on this CPU (MLAS's u8·s8 kernel without VNNI, as its adapter "
               "measured it) sums each pair of neighbouring products in int16 with saturation; int8's benchmark and "
               "local recomputation sum so (a reduced-range weight, |q| <= 64, never saturates)";
}

}  // namespace lenscheck::onnxruntime
