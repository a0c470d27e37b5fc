#pragma once
// Where the CLI finds its default data: beside its own binary, never in the current directory, so that
// lenscheck runs the same from anywhere. An installed binary, <prefix>/bin/lenscheck, reads
// <prefix>/share/lenscheck/. A binary in a build tree reads the marker lenscheck.paths that CMake writes
// beside it: two lines, the source tree's fixtures/ and the build's generated checkpoints.
#include <filesystem>
#include <string>

#include "audit/study_plan.h"

namespace lenscheck::cli {

struct DataPaths {
  std::filesystem::path data;         // tolerances.yaml, sentences.yaml, studies/, recorded/
  std::filesystem::path checkpoints;  // the generated bert-mini and planted-sink; empty when installed
  std::filesystem::path located_from;  // the marker, or the binary itself

  std::filesystem::path tolerances() const { return data / "tolerances.yaml"; }
  std::filesystem::path sentences() const { return data / "sentences.yaml"; }
  std::filesystem::path study_plan() const { return data / "studies/norm-weighted-attention.yaml"; }
  // ONNX Runtime's adapter and the Python environment that imports onnxruntime, for an onnxruntime or
  // onnx:PATH candidate. An installed lenscheck reads its own share/lenscheck/ort-adapter.py and knows no
  // environment: --python-env or LENSCHECK_PYTHON_ENV names it (python_env() throws an InputError saying
  // so). A build tree's binary uses its checkout's onnx/ort-adapter.py and .deps/venv.
  std::filesystem::path ort_adapter() const;
  std::filesystem::path python_env(const std::string& option) const;
  // The same for a transformers candidate: transformers/hf-adapter.py (share/lenscheck/hf-adapter.py when
  // installed), and the environment whose python3 imports transformers and torch: --python-env, else
  // LENSCHECK_TRANSFORMERS_ENV, else the checkout's .deps/transformers.
  std::filesystem::path hf_adapter() const;
  std::filesystem::path transformers_env(const std::string& option) const;
  // The default checkpoint of `mutate`; an InputError for an installed lenscheck, which bundles none.
  std::filesystem::path bert_mini() const;
  std::string bert_mini_help() const;  // what --help says of that default

  // Returns `file` unchanged; throws an InputError naming it when it is one of these defaults and
  // missing, so that a broken install or a moved source tree reads as such and not as a typo.
  std::filesystem::path checked(const std::filesystem::path& file) const;
};

DataPaths locate_data();

// What --help says of --python-env, the option of every command that can run ONNX Runtime.
inline constexpr const char* kPythonEnvHelp =
    "onnxruntime: the Python environment (a venv folder) whose bin/python3 imports onnxruntime (default: "
    "LENSCHECK_PYTHON_ENV, else the checkout's .deps/venv; an installed lenscheck needs one); transformers: the "
    "one that imports transformers and torch (default: LENSCHECK_TRANSFORMERS_ENV, else .deps/transformers)";

// The checkpoint an audit runs on: --model when given, else the plan's model, which must exist.
std::filesystem::path study_model(const StudyPlan& plan, const std::string& model_option);

}  // namespace lenscheck::cli
