#include "harness/sentences.h"

#include <fmt/format.h>

#include <set>

#include "harness/yaml_input.h"
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
