#include "properties/generators.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "runtime/kernels.h"

namespace lenscheck {

void showValue(const BertConfig& c, std::ostream& os) {
  os << fmt::format("layers {}, heads {} x head dim {} (hidden {}), intermediate {}, vocab {}, "
                    "max_position_embeddings {}, type_vocab {}, hidden_act {}, layer_norm_eps {:g}",
                    c.num_hidden_layers, c.num_attention_heads, c.head_dim(), c.hidden_size,
                    c.intermediate_size, c.vocab_size, c.max_position_embeddings,
                    c.type_vocab_size, c.hidden_act, c.layer_norm_eps);
}

void showValue(const Encoding& e, std::ostream& os) {
  std::string pieces;
  for (size_t t = 0; t < e.tokens.size(); ++t) {
    const bool new_word = t == 0 || e.word_ids[t] != e.word_ids[t - 1] || e.word_ids[t] < 0;
    pieces += (t == 0 ? "" : new_word ? " | " : " ") + e.tokens[t];
  }
  os << fmt::format("ids [{}]  {}", fmt::join(e.ids, ", "), pieces);
}

void showValue(const Trace& t, std::ostream& os) {
  os << fmt::format("producer {:?}, precision {:?}, input_ids [{}], word_ids [{}], tokens [{}]",
                    t.producer, t.precision, fmt::join(t.input_ids, " "), fmt::join(t.word_ids, " "),
                    fmt::join(t.tokens, "|"));
  for (const auto& [name, tensor] : t.tensors)
    os << fmt::format("\n  {:?} [{}]: [{:.17g}]", name, fmt::join(tensor.shape, ", "),
                      fmt::join(tensor.values, " "));
}

namespace prop {

namespace {

constexpr int kFirstPiece = 5;  // after [PAD] [UNK] [CLS] [SEP] [MASK]

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string piece_name(int id) {
  static const char* const kSpecial[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  if (id < kFirstPiece) return kSpecial[id];
  return fmt::format("{}a{}", id % 2 == 0 ? "##" : "", id);
}

}  // namespace

bool default_max_success(int cases) {
  const char* current = std::getenv("RC_PARAMS");
  const std::string params = current ? current : "";
  if (params.find("max_success") == std::string::npos) {
    const std::string amended =
        fmt::format("max_success={}{}{}", cases, params.empty() ? "" : " ", params);
    setenv("RC_PARAMS", amended.c_str(), 1);
  }
  return true;
}

rc::Gen<BertConfig> small_config(int max_layers) {
  return rc::gen::exec([max_layers] {
    BertConfig c;
    c.num_hidden_layers = *rc::gen::inRange(1, max_layers + 1);
    c.num_attention_heads = *rc::gen::inRange(1, 5);
    // Hidden 8 or more: a LayerNorm over 2 features is a sign function (each output is +-gamma +
    // beta) and over 3 nearly one, so where a token's features nearly coincide the last bit of its
    // input flips the output, and fp32 is at the mercy of one rounding: no model anyone trains.
    const int heads = c.num_attention_heads;
    c.hidden_size = heads * *rc::gen::inRange(std::max(2, (8 + heads - 1) / heads), 17);
    c.intermediate_size = *rc::gen::inRange(2, 65);
    c.vocab_size = *rc::gen::inRange(8, 65);
    c.max_position_embeddings = *rc::gen::inRange(3, 33);
    c.type_vocab_size = *rc::gen::inRange(1, 3);
    c.hidden_act = *rc::gen::element<std::string>("gelu", "gelu_new", "relu");
    c.layer_norm_eps = *rc::gen::element(1e-12, 1e-5);
    validate_config(c, "properties/generators.cpp");
    return c;
  });
}

// The scale. Every LayerNorm makes its output's features roughly unit variance, so a linear weight
// [out, in] drawn N(0, 1/in) gives outputs of unit variance too (LeCun's rule), and then
// q·k / sqrt(head_dim) is a sum of head_dim unit products scaled back to unit variance: attention
// logits of standard deviation about 1. Over 3-26 keys that puts a row's peak at a few times 1/T,
// far from uniform (std -> 0) and from one-hot (std >> log T). BERT's initialiser scale N(0, 0.02)
// would not do here: at hidden 2-64 it gives logits of std D * 0.0004 < 0.03, uniform rows.
// Embeddings are unit normal (the LayerNorm that follows removes their scale); LayerNorm gains are
// 1 + N(0, 0.1), biases N(0, 0.1), seeded like a trained model's so dropping one is visible.
// Trained models are sharper and carry outliers: `spread` scales the linear weights (logits by its
// square) and outlier dimensions of large gain sit in every LayerNorm, as in trained BERTs.
BertWeights random_weights(const BertConfig& config, uint64_t seed, const Statistics& s) {
  BertWeights w = seeded_weights(config, seed, [&](const std::string& name, const std::vector<int64_t>& shape) {
    if (ends_with(name, "LayerNorm.weight")) return Spread{1, 0.1};
    if (ends_with(name, "embeddings.weight")) return Spread{0, 1};
    const double gain = ends_with(name, "attention.self.query.weight") || ends_with(name, "attention.self.key.weight")
                            ? s.query_key_gain : 1.0;
    if (ends_with(name, ".weight")) return Spread{0, gain * s.spread / std::sqrt(static_cast<double>(shape[1]))};
    return Spread{0, 0.1};
  });
  plant_outlier_dimensions(config, w, std::min(s.outlier_dims, config.hidden_size), s.outlier_gain, ~seed);
  return w;
}

void showValue(const Statistics& s, std::ostream& os) {
  os << fmt::format("spread {:g} x LeCun, W_Q and W_K x{:g}, {} outlier dimensions of gain {:g}", s.spread,
                    s.query_key_gain, s.outlier_dims, s.outlier_gain);
}

rc::Gen<Statistics> trained_statistics() {
  return rc::gen::exec([] {
    Statistics s;
    s.spread = 1 + *rc::gen::inRange(0, 31) / 10.0;
    s.outlier_dims = *rc::gen::inRange(0, 3);
    s.outlier_gain = s.outlier_dims ? *rc::gen::inRange(1, 21) : 1;
    s.query_key_gain = *rc::gen::element(1.0, 2.0, 3.0);
    return s;
  });
}

Vocab model_vocab(int vocab_size) {
  std::vector<std::string> tokens;
  for (int id = 0; id < vocab_size; ++id) tokens.push_back(piece_name(id));
  return Vocab::from_tokens(std::move(tokens), "properties/generators.cpp");
}

rc::Gen<Encoding> token_sequence(const BertConfig& config) {
  const int max_content = std::min(24, config.max_position_embeddings - 2);
  // Word-initial pieces at odd ids from 5, continuations at even ids from 6 (vocab >= 8: both exist).
  const int initial = (config.vocab_size - kFirstPiece + 1) / 2;
  const int continuation = (config.vocab_size - kFirstPiece) / 2;
  return rc::gen::exec([=] {
    Encoding e;
    auto add = [&](int id, int word) {
      e.ids.push_back(id);
      e.tokens.push_back(piece_name(id));
      e.word_ids.push_back(word);
    };
    add(2, -1);  // [CLS]
    const int n = *rc::gen::inRange(1, max_content + 1);
    bool open_word = false;  // the last word can take a continuation: it is not [UNK]
    for (int t = 0; t < n; ++t) {
      if (open_word && *rc::gen::arbitrary<bool>()) {
        const int id = kFirstPiece + 1 + 2 * *rc::gen::inRange(0, continuation);
        add(id, e.word_ids.back());
        e.words.back() += piece_name(id).substr(2);
      } else if (*rc::gen::inRange(0, 16) == 15) {  // a word no piece covers
        add(1, static_cast<int>(e.words.size()));
        e.words.push_back("[UNK]");
        open_word = false;
      } else {
        const int id = kFirstPiece + 2 * *rc::gen::inRange(0, initial);
        add(id, static_cast<int>(e.words.size()));
        e.words.push_back(piece_name(id));
        open_word = true;
      }
    }
    add(3, -1);  // [SEP]
    return e;
  });
}

size_t LensCase::tokens() const {
  size_t t = 2;
  for (int n : word_lengths) t += static_cast<size_t>(n);
  return t;
}

Trace LensCase::sentence() const {
  Trace trace;
  auto add = [&](std::string token, int word) {
    trace.input_ids.push_back(static_cast<int64_t>(trace.tokens.size()));
    trace.tokens.push_back(std::move(token));
    trace.word_ids.push_back(word);
  };
  add("[CLS]", -1);
  for (size_t w = 0; w < word_lengths.size(); ++w)
    for (int piece = 0; piece < word_lengths[w]; ++piece)
      add(fmt::format("{}w{}", piece == 0 ? "" : "##", w), static_cast<int>(w));
  add("[SEP]", -1);
  return trace;
}

void showValue(const LensCase& c, std::ostream& os) {
  const size_t T = c.tokens();
  os << fmt::format("layers {}, heads {}, logit step {:g}, subwords per word [{}] (T = {})", c.layers, c.heads, c.logit_step,
                    fmt::join(c.word_lengths, " "), T);
  for (int l = 0; l < c.layers; ++l)
    for (int h = 0; h < c.heads; ++h) {
      const size_t H = static_cast<size_t>(h);
      const auto& p = c.probs[size_t(l)];
      const auto& n = c.norms[size_t(l)];
      os << fmt::format("\n  layer {} head {}: key norms [{}]", l, h,
                        fmt::join(n.begin() + long(H * T), n.begin() + long((H + 1) * T), " "));
      for (size_t q = 0; q < T; ++q)
        os << fmt::format("\n    probs row {}: [{:.9g}]", q,
                          fmt::join(p.begin() + long((H * T + q) * T),
                                    p.begin() + long((H * T + q + 1) * T), " "));
    }
}

rc::Gen<LensCase> lens_case(int max_layers, bool single_subword_words) {
  return rc::gen::exec([=] {
    LensCase c;
    c.layers = *rc::gen::inRange(1, max_layers + 1);
    c.heads = *rc::gen::inRange(1, 5);
    const int content = *rc::gen::inRange(1, 25);
    for (int t = 0; t < content; ++t) {
      // Shrinks towards false: every word a single subword.
      if (t > 0 && !single_subword_words && *rc::gen::arbitrary<bool>()) ++c.word_lengths.back();
      else c.word_lengths.push_back(1);
    }
    const size_t T = c.tokens(), H = static_cast<size_t>(c.heads);
    // Logit steps of 0.5 give soft rows; of 40, saturated ones as trained sinks have: every key 3
    // steps below the row's top gets exp(-120), 0 in fp32, so rows are often exactly one-hot, and
    // one-hot on a key of norm 0 they carry no weight at all under a norm lens. Shrinks towards soft.
    c.logit_step = *rc::gen::element(0.5, 4.0, 40.0);
    for (int l = 0; l < c.layers; ++l) {
      const auto logits = *rc::gen::container<std::vector<int>>(H * T * T, rc::gen::inRange(-6, 7));
      std::vector<float> probs(H * T * T);
      for (size_t row = 0; row < H * T; ++row) {
        const int* x = logits.data() + row * T;
        const int top = *std::max_element(x, x + T);
        double sum = 0;
        for (size_t k = 0; k < T; ++k) sum += std::exp(c.logit_step * (x[k] - top));
        for (size_t k = 0; k < T; ++k)
          probs[row * T + k] = static_cast<float>(std::exp(c.logit_step * (x[k] - top)) / sum);
      }
      c.probs.push_back(std::move(probs));
      const auto quarters = *rc::gen::container<std::vector<int>>(H * T, rc::gen::inRange(0, 41));
      std::vector<float> norms(H * T);
      for (size_t i = 0; i < norms.size(); ++i) norms[i] = static_cast<float>(quarters[i]) / 4;
      c.norms.push_back(std::move(norms));
    }
    return c;
  });
}

rc::Gen<std::string> unicode_text(int max_fragments) {
  static const std::vector<std::string> kFragments = {
      "a", "z", "q", "the", "un", "##", "E", "Q", "7", "0", ".", ",", "!", "?", "'", "\"", "-", "$",
      "^", "`", "(", "[", "]", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u200b",
      "\x01", "\x7f", "\ufffd", "\u00e9", "\u00c9", "e\u0301", "\u00df", "\u0130",
      "\u00f1", "\u039f\u0394\u039f\u03a3", "\u0436", "\u4e2d", "\u6587", "\u3072", "\u30ab",
      "\ud55c", "\U0001F600", "\u2192", "\u00bf", "[SEP]", "[CLS]", "[MASK]", "[UNK]", "[PAD]",
      "[unused0]", "[sep]"};
  return rc::gen::exec([max_fragments] {
    const int n = *rc::gen::inRange(0, max_fragments + 1);
    std::string text;
    for (const std::string& part :
         *rc::gen::container<std::vector<std::string>>(size_t(n), rc::gen::elementOf(kFragments)))
      text += part;
    return text;
  });
}

Tensor tensor_of(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t(std::move(shape));
  std::copy(values.begin(), values.end(), t.values.begin());
  return t;
}

std::vector<float> weighted(const std::vector<float>& probs, const std::vector<float>& norms,
                            int heads, size_t tokens) {
  std::vector<float> out(probs.size());
  runtime::weight_by_key(probs.data(), norms.data(), static_cast<size_t>(heads), tokens, out.data());
  return out;
}

}  // namespace prop
}  // namespace lenscheck
