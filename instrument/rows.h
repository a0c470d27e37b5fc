#pragma once
// Rows as the instrument shows them: one row per word (not per subword), for the head it opens.
// A word's row is the mean of its subword rows; a target word's weight is the sum of its subword
// columns (Clark et al. 2019). [CLS] and [SEP] are the sink.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/trace.h"
#include "runtime/lens.h"

namespace lenscheck {

struct HeadRef {
  // The head of a row under a per-layer lens (runtime/lens.h lens_per_layer): the layer's heads summed.
  static constexpr int kWholeLayer = -1;
  int layer = 0;
  int head = 0;
  bool operator==(const HeadRef&) const = default;
  // "L.H", or "L.*" for a whole layer.
  std::string label() const { return std::to_string(layer) + "." + (head == kWholeLayer ? "*" : std::to_string(head)); }
  // The same head, or the same layer where either is a whole layer: what "keeps its head" means when a
  // per-layer lens is compared with a per-head one.
  bool same_place(const HeadRef& other) const {
    return layer == other.layer && (head == other.head || head == kWholeLayer || other.head == kWholeLayer);
  }
};

struct WordRow {
  int word = 0;                 // query word, an index into the sentence's words
  HeadRef head;
  double cls = 0, sep = 0;      // aggregated weight on [CLS] and on [SEP]
  std::vector<double> content;  // aggregated weight on each word (the query word itself included)

  double total() const;                     // cls + sep + sum(content)
  // (cls + sep) / total; empty (undefined) when the row carries no weight at all (e.g. every ‖v‖ of
  // the tokens it attends to is 0). A NaN or Inf total is a NonFiniteError (model/error.h), not that.
  std::optional<double> sink_share() const;
  // (cls + sep) / (total − the word's own weight): the sink's share of what the row takes from the other
  // tokens, which a lens that adds the word's own residual does not dilute. Empty where the row takes
  // nothing from them (self_only, or no weight at all).
  std::optional<double> context_sink_share() const;
  // Weights over content words renormalised to sum to 1; empty when no content weight.
  std::optional<std::vector<double>> displayed() const;
  // The content word (other than the query word itself, when there is another) with the largest
  // share of the row; -1 when the sentence has a single word.
  int top_target() const;
  double top_share() const;  // that word's weight / total (0 when undefined)
  // Every weight of the row on the query word itself, none on another word or the sink: the row shows no
  // context at all (a residual lens where every other token's term is constant across features).
  bool self_only() const;
};

// How the instrument picks a row's head out of all layers x heads, or, under a per-layer lens, its layer out of
// all layers: max_content_peak and min_sink rank the layers' rows as they rank the heads', and "fixed: L.H"
// opens layer L (the layer holding head H).
struct HeadRule {
  enum class Kind { max_content_peak, min_sink, fixed };
  Kind kind = Kind::max_content_peak;
  HeadRef fixed;  // for Kind::fixed
  std::string label() const;  // "max_content_peak", "min_sink", "fixed: 2.1"
  // How much the rule prefers a head's row, larger first: top_share() for max_content_peak, minus the
  // sink share for min_sink (a row with no weight ranks last); 0 for fixed.
  double score(const WordRow& row) const;
  static HeadRule parse(const std::string& text);  // the labels above; throws std::invalid_argument
};

// Token positions grouped by word, from the trace's word ids; [CLS] first and [SEP] last.
struct WordLayout {
  std::vector<std::vector<size_t>> words;  // token positions of each word
  size_t cls = 0, sep = 0;
  static WordLayout of(const Trace& trace);
};

// A change made to every row once computed: a mutation case's (mutations/cases/); the shipped rows
// take none.
using RowEdit = std::function<void(const WordLayout& layout, WordRow& row)>;

// The row of `word` under one head of a lens weight tensor [H, T, T], or under a [T, T] one (head kWholeLayer).
WordRow word_row(const WordLayout& layout, const Tensor& lens_weights, HeadRef head, int word,
                 const RowEdit& edit = {});

// The rows of `word` under every layer x head of a lens, layer-major; one per layer under a per-layer lens.
// Throws std::invalid_argument where the trace cannot give them (a lens tensor missing or of another shape).
std::vector<WordRow> head_rows(const Trace& trace, const WordLayout& layout, Lens lens, int word, int layers,
                               int heads, const RowEdit& edit = {});

// x printed with `decimals` decimals, as the instrument prints it.
std::string printed(double x, int decimals);
// x as printed with `decimals` decimals, in units of its last decimal: 0.996 → 100 at 2.
long long printed_level(double x, int decimals);

// The head a rule opens among one word's head_rows: the largest score, ties to the lowest layer, then the
// lowest head, so selection is deterministic; the fixed head (or its layer) for Kind::fixed. Its index in
// `rows`. With `decimals`, scores compare as printed to that many decimals (printed_level), so scores that
// print alike tie and the tie-break decides: what a reader of the printed scores sees. Throws
// std::invalid_argument when a fixed head is not among the model's `heads` or its layer not among the rows.
size_t opened_head(const std::vector<WordRow>& rows, const HeadRule& rule, int heads,
                   std::optional<int> decimals = std::nullopt);

// The row the instrument shows: the head the rule opens, among every layer x head of the trace.
WordRow instrument_row(const Trace& trace, const WordLayout& layout, Lens lens, int word,
                       const HeadRule& rule, int layers, int heads, const RowEdit& edit = {});

}  // namespace lenscheck
