#include "model/trace_io.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/safetensors.h"

namespace lenscheck {

void save_trace(const std::filesystem::path& file, const Trace& trace) {
  std::vector<OutputTensor> out;
  std::vector<double> ids(trace.input_ids.begin(), trace.input_ids.end());
  out.push_back({"input_ids", DType::I64, {static_cast<int64_t>(ids.size())}, ids});
  const DType dtype = trace.precision == "fp64" ? DType::F64 : DType::F32;
  for (const auto& [name, t] : trace.tensors) out.push_back({name, dtype, t.shape, t.values});
  const std::map<std::string, std::string> metadata = {
      {"format", "lenscheck-trace-1"},
      {"producer", trace.producer},
      {"precision", trace.precision},
      {"tokens", nlohmann::json(trace.tokens).dump()},
      {"word_ids", nlohmann::json(trace.word_ids).dump()}};
  write_safetensors(file, out, metadata);
}

Trace load_trace(const std::filesystem::path& file, const Vocab& vocab) {
  const SafetensorsFile st = SafetensorsFile::open(file);
  Trace trace;
  const TensorEntry* ids = st.find("input_ids");
  if (!ids) throw InputError(file, "a trace needs an I64 tensor \"input_ids\"");
  if (ids->shape.size() != 1 && !(ids->shape.size() == 2 && ids->shape[0] == 1))
    throw InputError(file, "input_ids must have shape [T] or [1, T]");
  trace.input_ids = st.read_i64(*ids);
  if (trace.input_ids.empty()) throw InputError(file, "input_ids is empty");
  for (int64_t id : trace.input_ids)
    if (id < 0 || id >= static_cast<int64_t>(vocab.size()))
      throw InputError(file, fmt::format("input_ids holds {}, outside the vocabulary", id));

  const auto& meta = st.metadata();
  auto get = [&](const char* key) { auto it = meta.find(key); return it == meta.end() ? "" : it->second; };
  trace.producer = get("producer").empty() ? file.filename().string() : get("producer");
  trace.precision = get("precision");
  try {
    if (!get("tokens").empty()) trace.tokens = nlohmann::json::parse(get("tokens")).get<std::vector<std::string>>();
    if (!get("word_ids").empty()) {
      // Checked element by element: nlohmann converts a non-integral or huge number to int unchecked.
      for (const auto& w : nlohmann::json::parse(get("word_ids")).get<std::vector<nlohmann::json>>()) {
        if (!w.is_number_integer() || w.get<int64_t>() < -1 ||
            w.get<int64_t>() >= static_cast<int64_t>(trace.input_ids.size()))
          throw InputError(file, fmt::format("__metadata__ word_ids holds {}, not -1 or a word index", w.dump()));
        trace.word_ids.push_back(static_cast<int>(w.get<int64_t>()));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, fmt::format("__metadata__ tokens/word_ids are not JSON arrays: {}", e.what()));
  }
  if (trace.tokens.empty())
    for (int64_t id : trace.input_ids) trace.tokens.push_back(vocab.token(static_cast<int>(id)));
  if (trace.tokens.size() != trace.input_ids.size())
    throw InputError(file, "__metadata__ tokens and input_ids differ in length");
  if (!trace.word_ids.empty() && trace.word_ids.size() != trace.input_ids.size())
    throw InputError(file, "__metadata__ word_ids and input_ids differ in length");

  for (const TensorEntry& e : st.entries()) {
    if (e.name == "input_ids") continue;
    Tensor t;
    t.shape = e.shape;
    t.values = st.read_f64(e);
    trace.add(e.name, std::move(t));
  }
  return trace;
}

}  // namespace lenscheck
