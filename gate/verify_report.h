#pragma once
// What `lenscheck verify` writes: Markdown for people, JSON for tools, JUnit for CI.
#include <filesystem>

#include "gate/verify.h"

namespace lenscheck {

// Each report details the first kSentencesInDetail sentences and every failing one (Markdown: a row of
// the sentence table; JSON: each tensor's comparison; JUnit: a test case per tensor), and gives every
// other sentence one line (JSON and JUnit) or a count (Markdown): a corpus of a thousand sentences would
// otherwise write some 80 MB of JSON, where the summary over sentences already holds each tensor's worst.
inline constexpr size_t kSentencesInDetail = 20;
bool in_detail(const VerifyResult& result, size_t sentence);

// Also writes the heat map of bound used per layer and tensor family beside it (F.md -> F.svg), and
// links it.
void write_verify_markdown(const VerifyResult& result, const std::filesystem::path& file);
// The heat map alone: one cell per layer x tensor family, the share of its bound the worst sentence
// used (under the derived rule: the error ratio over k), so a failing or nearly failing region shows.
// Why a tensor failed, in one line: the local verdict where it failed, then the global one (the rule's
// figures under the absolute rule; the problem where it could not be compared).
std::string failure_text(const TensorComparison& tensor, Arithmetic arithmetic);
std::string verify_heat_map(const VerifyResult& result);
void write_verify_json(const VerifyResult& result, const std::filesystem::path& file);
void write_verify_junit(const VerifyResult& result, const std::filesystem::path& file);

}  // namespace lenscheck
