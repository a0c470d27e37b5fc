#include "cli/data_paths.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "model/error.h"

namespace lenscheck::cli {

namespace fs = std::filesystem;

DataPaths locate_data() {
  DataPaths paths;
  std::error_code error;
  const fs::path binary = fs::read_symlink("/proc/self/exe", error);
  if (error) {  // data stays empty, and checked() names where lenscheck looked
    paths.located_from = "/proc/self/exe";
    return paths;
  }
  const fs::path marker = binary.parent_path() / "lenscheck.paths";
  std::ifstream in(marker);
  if (!in) {
    paths.data = binary.parent_path().parent_path() / "share/lenscheck";
    paths.located_from = binary;
    return paths;
  }
  std::string data, checkpoints;
  std::getline(in, data);
  std::getline(in, checkpoints);
  // A marker without both lines leaves data empty, and checked() names it.
  if (!checkpoints.empty()) {
    paths.data = data;
    paths.checkpoints = checkpoints;
  }
  paths.located_from = marker;
  return paths;
}

fs::path DataPaths::ort_adapter() const {
  // A build tree's data is its checkout's fixtures/, beside onnx/.
  return checkpoints.empty() ? data / "ort-adapter.py" : data.parent_path() / "onnx/ort-adapter.py";
}

fs::path DataPaths::python_env(const std::string& option) const {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("LENSCHECK_PYTHON_ENV"); env && *env) return env;
  if (checkpoints.empty())
    throw InputError("--python-env", "an installed lenscheck knows no Python environment with onnxruntime: name "
                                     "one with --python-env DIR or LENSCHECK_PYTHON_ENV (`python3 -m venv DIR && "
                                     "DIR/bin/pip install onnxruntime`)");
  return data.parent_path() / ".deps/venv";
}

fs::path DataPaths::hf_adapter() const {
  return checkpoints.empty() ? data / "hf-adapter.py" : data.parent_path() / "transformers/hf-adapter.py";
}

fs::path DataPaths::transformers_env(const std::string& option) const {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("LENSCHECK_TRANSFORMERS_ENV"); env && *env) return env;
  if (checkpoints.empty())
    throw InputError("--python-env", "an installed lenscheck knows no Python environment with transformers: name "
                                     "one with --python-env DIR or LENSCHECK_TRANSFORMERS_ENV (`python3 -m venv "
                                     "DIR && DIR/bin/pip install torch transformers`)");
  return data.parent_path() / ".deps/transformers";
}

fs::path DataPaths::bert_mini() const {
  if (checkpoints.empty())
    throw InputError("--model", "an installed lenscheck bundles no checkpoint: pass --model DIR");
  return checkpoints / "bert-mini";
}

std::string DataPaths::bert_mini_help() const {
  return checkpoints.empty() ? "required: an installed lenscheck bundles no checkpoint"
                             : "default " + (checkpoints / "bert-mini").string();
}

fs::path DataPaths::checked(const fs::path& file) const {
  if (file != tolerances() && file != sentences() && file != study_plan()) return file;
  if (data.empty())
    throw InputError(located_from, "lenscheck found no data directory from here (a build tree's marker "
                                   "holds two lines, the data directory and the checkpoints: re-run cmake)");
  if (!fs::is_regular_file(file))
    throw InputError(file, fmt::format("lenscheck's default is missing: its data directory {} {} (found from "
                                       "{}); reinstall lenscheck, or name the file with its option",
                                       data.string(), fs::is_directory(data) ? "is incomplete" : "does not exist",
                                       located_from.string()));
  return file;
}

fs::path study_model(const StudyPlan& plan, const std::string& model_option) {
  if (!model_option.empty()) return model_option;
  if (!fs::is_directory(plan.model))
    throw InputError(plan.model, fmt::format("no checkpoint here, and study plan {} names it as its model; "
                                             "make that checkpoint (the plan says how), or pass --model DIR",
                                             plan.file.string()));
  return plan.model;
}

}  // namespace lenscheck::cli
