#pragma once
// ONNX Runtime as a candidate: PyPI's onnxruntime (CPU execution provider) in a Python environment,
// driven through onnx/ort-adapter.py, started as a subprocess with a bound on each step.
#include <filesystem>
#include <string>
#include <vector>

#include "common/python_adapter.h"
#include "model/arithmetic.h"
#include "model/tokenizer.h"
#include "model/trace.h"
#include "model/vocab.h"

namespace lenscheck::onnxruntime {

struct Options {
  std::filesystem::path adapter;        // ort-adapter.py; empty: the checkout's onnx/ort-adapter.py
  std::filesystem::path python_env;     // the environment whose bin/python3 imports onnxruntime; empty: the
                                        // checkout's .deps/venv
  unsigned intra_op_threads = 1;
  std::string graph_optimization = "all";  // disabled, basic, extended, layout or all (ORT's levels)
  // Bounds on each step, in seconds: session creation (the graph loaded and optimised), then each
  // sentence's run and trace written (cli/main.cpp says where the defaults come from).
  double startup_seconds = 120, sentence_seconds = 60;
  bool plain = false;                   // fetch last_hidden_state alone, write no trace (timing)
  std::filesystem::path optimized_model;  // if set, ORT writes the graph it runs, after its optimisations
  std::filesystem::path profile_prefix;   // if set, ORT's profiler writes every kernel it ran
};

struct Run {
  std::string version;               // onnxruntime's, as the package reports it
  double session_ms = 0;
  Int8Sums int8_sums = Int8Sums::exact;  // how its MatMulInteger sums uint8 · int8 here, as the adapter measured it
  std::vector<double> sentence_ms;   // ORT's session.run per sentence, as the adapter timed it
  std::vector<Trace> traces;         // one per sentence (none if plain)
};

// Runs `model` on every encoding. `candidate` names the candidate in every error (an InputError: ORT
// or its Python environment missing, the graph refused, a step past its bound, a trace unreadable or for other ids).
Run run(const std::filesystem::path& model, const std::vector<Encoding>& encodings, const Options& options,
        const std::string& candidate, const std::string& precision, const Vocab& vocab);

// What an int8 scheme's benchmark sums as, for a candidate's notes: "int8 sums: …".
std::string int8_sums_note(Int8Sums sums);

}  // namespace lenscheck::onnxruntime
