#pragma once
// A candidate that runs in Python: an adapter script (onnx/ort-adapter.py, transformers/hf-adapter.py)
// started as a subprocess of an environment's bin/python3, with a bound on each step. The protocol,
// written once here: the adapter reads REQUEST.json (the caller's fields, and out_dir and sentences,
// which run_adapter adds), says on stdout `ready <what runs, one or more words> <start-up ms>`, then
// `done <i> <ms>` per sentence, and writes sentence i's trace to <out_dir>/<i>.safetensors. Before `ready` it
// may say `fact <key> <value>` lines: what it measured of the runtime (onnx/ort-adapter.py: int8_sums).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tokenizer.h"
#include "model/trace.h"
#include "model/vocab.h"

namespace lenscheck {

// A fresh folder under /tmp for one candidate run's files (graph, request, traces), removed with
// everything in it when the run ends, however it ends. An InputError naming `what` if none can be made.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& what);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct AdapterCall {
  std::string runs;                           // what the adapter runs, for errors: "ONNX Runtime", "transformers"
  std::filesystem::path adapter, python_env;  // runs python_env/bin/python3 -I adapter REQUEST.json
  // Bounds on each step, in seconds: start-up (imports, a model loaded), then each sentence's run and
  // trace written.
  double startup_seconds = 120, sentence_seconds = 60;
  bool plain = false;  // the adapter writes no trace (timing)
  // Said after the adapter's own words where it exits with code 3, its word for "what I need is missing":
  // how to install it.
  std::string install_hint;
};

struct AdapterRun {
  std::string version;  // the words between `ready` and the start-up time: what ran
  double startup_ms = 0;
  std::map<std::string, std::string> facts;  // its `fact` lines: key → value
  std::vector<double> sentence_ms;  // per sentence, as the adapter timed it
  std::vector<Trace> traces;        // one per sentence (none if plain), with the encodings' tokens and word ids
};

std::filesystem::path python_of(const std::filesystem::path& env);
// Whether the environment itself holds the package (lib/pythonX.Y/site-packages/<package>).
bool has_package(const std::filesystem::path& env, const std::string& package);

// Runs the adapter on every encoding. `candidate` names the candidate in every error (an InputError: the
// adapter missing or failing, a step past its bound, a trace unreadable or for other ids).
AdapterRun run_adapter(const AdapterCall& call, nlohmann::json request, const std::vector<Encoding>& encodings,
                       const std::string& candidate, const Vocab& vocab);

}  // namespace lenscheck
