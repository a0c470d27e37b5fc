#include "instrument/rows.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "model/error.h"

namespace lenscheck {

double WordRow::total() const {
  double s = cls + sep;
  for (double c : content) s += c;
  return s;
}

std::optional<double> WordRow::sink_share() const {
  const double t = total();
  if (!std::isfinite(t))
    throw NonFiniteError(fmt::format("head {} word {}: the row's weights sum to {}", head.label(), word, t));
  if (t == 0) return std::nullopt;
  return (cls + sep) / t;
}

std::optional<double> WordRow::context_sink_share() const {
  const double context = total() - content.at(size_t(word));
  if (!(context > 0)) return std::nullopt;
  return (cls + sep) / context;
}

std::optional<std::vector<double>> WordRow::displayed() const {
  double sum = 0;
  for (double c : content) sum += c;
  if (!(sum > 0)) return std::nullopt;
  std::vector<double> d(content.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = content[i] / sum;
  return d;
}

int WordRow::top_target() const {
  int best = -1;
  for (int w = 0; w < static_cast<int>(content.size()); ++w)
    if (w != word && (best < 0 || content[size_t(w)] > content[size_t(best)])) best = w;
  return best;
}

double WordRow::top_share() const {
  const int t = top_target();
  const double tot = total();
  return t < 0 || !(tot > 0) ? 0.0 : content[size_t(t)] / tot;
}

bool WordRow::self_only() const {
  if (!(content.at(size_t(word)) > 0) || cls != 0 || sep != 0) return false;
  for (size_t w = 0; w < content.size(); ++w)
    if (w != size_t(word) && content[w] != 0) return false;
  return true;
}

std::string HeadRule::label() const {
  switch (kind) {
    case Kind::max_content_peak: return "max_content_peak";
    case Kind::min_sink: return "min_sink";
    case Kind::fixed: return "fixed: " + fixed.label();
  }
  return "?";
}

double HeadRule::score(const WordRow& row) const {
  switch (kind) {
    case Kind::max_content_peak: return row.top_share();
    case Kind::min_sink: return -row.sink_share().value_or(2.0);
    case Kind::fixed: return 0;
  }
  return 0;
}

HeadRule HeadRule::parse(const std::string& text) {
  HeadRule r;
  if (text == "max_content_peak") return r;
  if (text == "min_sink") {
    r.kind = Kind::min_sink;
    return r;
  }
  int layer = -1, head = -1;
  char tail = 0;
  if (std::sscanf(text.c_str(), "fixed: %d.%d%c", &layer, &head, &tail) == 2 && layer >= 0 && head >= 0) {
    r.kind = Kind::fixed;
    r.fixed = {layer, head};
    return r;
  }
  throw std::invalid_argument("unknown head rule \"" + text +
                              "\" (known: max_content_peak, min_sink, \"fixed: L.H\")");
}

WordLayout WordLayout::of(const Trace& trace) {
  const size_t T = trace.tokens.size();
  if (T < 2 || trace.word_ids.size() != T || trace.word_ids.front() != -1 || trace.word_ids.back() != -1)
    throw std::invalid_argument("a trace for word rows needs word ids with [CLS] first and [SEP] last");
  WordLayout l;
  l.sep = T - 1;
  for (size_t t = 1; t + 1 < T; ++t) {
    const int w = trace.word_ids[t];
    if (w < 0 || static_cast<size_t>(w) > l.words.size() || (static_cast<size_t>(w) < l.words.size() &&
                                                              static_cast<size_t>(w) + 1 != l.words.size()))
      throw std::invalid_argument("word ids must count up from 0 in token order");
    if (static_cast<size_t>(w) == l.words.size()) l.words.emplace_back();
    l.words[size_t(w)].push_back(t);
  }
  return l;
}

WordRow word_row(const WordLayout& layout, const Tensor& w, HeadRef head, int word, const RowEdit& edit) {
  const bool whole_layer = head.head == HeadRef::kWholeLayer;
  if (w.shape.size() != (whole_layer ? 2u : 3u) || (!whole_layer && (head.head < 0 || head.head >= w.shape[0])))
    throw std::invalid_argument(fmt::format("head {} of a lens tensor of {} axes", head.label(), w.shape.size()));
  const size_t T = static_cast<size_t>(w.shape.back());
  const double* base = w.values.data() + (whole_layer ? 0 : static_cast<size_t>(head.head) * T * T);
  const std::vector<size_t>& queries = layout.words.at(static_cast<size_t>(word));
  // Mean of the word's subword rows, column by column, in token order.
  std::vector<double> row(T, 0.0);
  for (size_t q : queries)
    for (size_t k = 0; k < T; ++k) row[k] += base[q * T + k];
  for (double& x : row) x /= static_cast<double>(queries.size());

  WordRow r;
  r.word = word;
  r.head = head;
  r.cls = row[layout.cls];
  r.sep = row[layout.sep];
  r.content.assign(layout.words.size(), 0.0);
  for (size_t target = 0; target < layout.words.size(); ++target)
    for (size_t k : layout.words[target]) r.content[target] += row[k];
  if (edit) edit(layout, r);
  return r;
}

std::vector<WordRow> head_rows(const Trace& trace, const WordLayout& layout, Lens lens, int word, int layers,
                               int heads, const RowEdit& edit) {
  const auto tokens = static_cast<int64_t>(trace.input_ids.size());
  const bool per_layer = lens_per_layer(lens);
  const std::vector<int64_t> shape =
      per_layer ? std::vector<int64_t>{tokens, tokens} : std::vector<int64_t>{heads, tokens, tokens};
  std::vector<WordRow> rows;
  for (int l = 0; l < layers; ++l) {
    const std::string name = lens_tensor(lens, l);
    const Tensor* w = trace.find(name);
    if (!w) throw std::invalid_argument(name + " is missing");
    if (w->shape != shape) throw std::invalid_argument(name + (per_layer ? " is not [T, T]" : " is not [heads, T, T]"));
    if (per_layer) rows.push_back(word_row(layout, *w, {l, HeadRef::kWholeLayer}, word, edit));
    for (int h = 0; !per_layer && h < heads; ++h) rows.push_back(word_row(layout, *w, {l, h}, word, edit));
  }
  return rows;
}

std::string printed(double x, int decimals) { return fmt::format("{:.{}f}", x, decimals); }

long long printed_level(double x, int decimals) {
  return std::llround(std::stod(printed(x, decimals)) * std::pow(10.0, decimals));
}

size_t opened_head(const std::vector<WordRow>& rows, const HeadRule& rule, int heads, std::optional<int> decimals) {
  if (rule.kind == HeadRule::Kind::fixed) {
    for (size_t i = 0; rule.fixed.head < heads && i < rows.size(); ++i)
      if (rows[i].head.same_place(rule.fixed)) return i;
    throw std::invalid_argument("head rule " + rule.label() + " names a head the model lacks");
  }
  auto score = [&](const WordRow& row) {
    const double x = rule.score(row);
    return decimals ? double(printed_level(x, *decimals)) : x;
  };
  size_t best = 0;
  double top = score(rows[0]);
  for (size_t i = 1; i < rows.size(); ++i)
    if (const double x = score(rows[i]); x > top) {
      best = i;
      top = x;
    }
  return best;
}

WordRow instrument_row(const Trace& trace, const WordLayout& layout, Lens lens, int word,
                       const HeadRule& rule, int layers, int heads, const RowEdit& edit) {
  std::vector<WordRow> rows = head_rows(trace, layout, lens, word, layers, heads, edit);
  return std::move(rows[opened_head(rows, rule, heads)]);
}

}  // namespace lenscheck
