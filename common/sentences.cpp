#include "common/sentences.h"

#include <fmt/format.h>

#include <set>

#include "common/yaml_input.h"
#include "model/error.h"

namespace lenscheck {

std::vector<Sentence> load_sentences(const std::filesystem::path& file) {
  namespace Y = yaml_input;
  const YAML::Node root = Y::load(file);
  Y::require_map(file, root, "the sentences file");
  Y::only_keys(file, root, {"sentences"});
  const YAML::Node list = Y::required(file, root, "sentences");
  Y::require_sequence(file, list, "sentences");
  std::vector<Sentence> out;
  std::set<std::string> ids;
  for (const YAML::Node& item : list) {
    Y::require_map(file, item, "a sentence");
    Y::only_keys(file, item, {"id", "text"});
    Sentence s;
    s.id = Y::as_string(file, Y::required(file, item, "id"), "id");
    s.text = Y::as_string(file, Y::required(file, item, "text"), "text");
    s.line = item.Mark().line + 1;
    if (!ids.insert(s.id).second) Y::fail(file, item, fmt::format("duplicate sentence id \"{}\"", s.id));
    out.push_back(std::move(s));
  }
  if (out.empty()) Y::fail(file, list, "no sentences");
  return out;
}

namespace {

bool is_blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

SentenceStream::SentenceStream(const std::filesystem::path& file) {
  if (file.extension() != ".txt") {
    loaded_ = load_sentences(file);
    total_ = loaded_.size();
    return;
  }
  // One pass to count, so that progress can say "of how many"; the second pass streams.
  std::ifstream count(file);
  if (!count) throw InputError(file, "cannot be opened");
  for (std::string line; std::getline(count, line);) total_ += !is_blank(line);
  if (total_ == 0) throw InputError(file, "no sentences");
  corpus_.open(file);
}

std::vector<Sentence> SentenceStream::next(size_t max) {
  std::vector<Sentence> out;
  if (!corpus_.is_open()) {
    for (; taken_ < loaded_.size() && out.size() < max; ++taken_) out.push_back(loaded_[taken_]);
    return out;
  }
  for (std::string line; out.size() < max && std::getline(corpus_, line);) {
    ++line_;
    if (is_blank(line)) continue;
    if (line.back() == '\r') line.pop_back();
    out.push_back({fmt::format("line-{}", line_), std::move(line), line_});
  }
  return out;
}

Encoding encode_sentence(const BertTokenizer& tokenizer, const Sentence& s, size_t max_tokens,
                         const std::filesystem::path& file) {
  try {
    return tokenizer.encode(s.text, max_tokens);
  } catch (const TokenizerError& e) {
    // A sentence from the command line (--text) has no line.
    const std::string at = s.line > 0 ? fmt::format("line {}: ", s.line) : "";
    throw InputError(file, fmt::format("{}sentence \"{}\": {}", at, s.id, e.what()));
  }
}

}  // namespace lenscheck
