#pragma once
// vocab.txt: one WordPiece token a line, the line number is the id.
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lenscheck {

class Vocab {
 public:
  // Validates UTF-8, duplicates and the special tokens [PAD] [UNK] [CLS] [SEP] [MASK].
  static Vocab load(const std::filesystem::path& file);
  static Vocab from_tokens(std::vector<std::string> tokens, const std::filesystem::path& origin);

  int id(std::string_view token) const;  // -1 when absent
  const std::string& token(int id) const { return tokens_.at(static_cast<size_t>(id)); }
  size_t size() const { return tokens_.size(); }
  const std::vector<std::string>& tokens() const { return tokens_; }

  int pad_id() const { return pad_; }
  int unk_id() const { return unk_; }
  int cls_id() const { return cls_; }
  int sep_id() const { return sep_; }
  int mask_id() const { return mask_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> ids_;
  int pad_ = -1, unk_ = -1, cls_ = -1, sep_ = -1, mask_ = -1;
};

// Whether `s` is well-formed UTF-8: the vocabulary's tokens and a torch archive's tensor names must be.
bool valid_utf8(std::string_view s);

void write_vocab(const std::filesystem::path& file, const std::vector<std::string>& tokens);

}  // namespace lenscheck
