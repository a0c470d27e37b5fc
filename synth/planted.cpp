#include "synth/planted.h"

#include <cmath>
#include <stdexcept>

namespace lenscheck {

namespace {

constexpr double kContentValueSpread = 0.5;  // μ

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A ±1 vector with as many +1 as −1 in each half: a seeded Fisher–Yates shuffle of each half.
std::vector<int8_t> balanced(size_t D, uint64_t key) {
  std::vector<int8_t> v(D);
  const size_t half = D / 2;
  uint64_t state = mix(key);
  for (size_t start : {size_t(0), half}) {
    for (size_t i = 0; i < half; ++i) v[start + i] = i < half / 2 ? 1 : -1;
    for (size_t i = half; i-- > 1;) {
      state = mix(state + 0x9e3779b97f4a7c15ULL);
      std::swap(v[start + i], v[start + state % (i + 1)]);
    }
  }
  return v;
}

double dot(const std::vector<int8_t>& a, const std::vector<int8_t>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// κ0, the W_O gain of the specials' value dimension: ‖f(x)‖ / ‖v‖ of the specials over √D. A sink
// that carries no value (ρ = 0) has no f(x) either, whatever κ0; then κ0 = κ1.
double special_output_gain(const PlantedHead& h, double sqrtD) {
  return h.value_ratio > 0 ? h.transformed_ratio / (h.value_ratio * sqrtD) : 1.0 / sqrtD;
}

Param zeros(std::vector<int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return {std::move(shape), std::vector<float>(n, 0.0f)};
}

}  // namespace

BertConfig planted_config(int vocab_size) {
  BertConfig c;
  c.hidden_size = 256;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.intermediate_size = 1024;
  c.hidden_act = "gelu";
  c.layer_norm_eps = 1e-12;
  c.max_position_embeddings = 512;
  c.type_vocab_size = 2;
  c.vocab_size = vocab_size;
  return c;
}

PlantedSink::PlantedSink(const BertConfig& config, uint64_t seed, SinkHeads heads) : config_(config), seed_(seed) {
  if (config.num_hidden_layers != 4 || config.num_attention_heads != 4 || config.hidden_size % 4 != 0 ||
      config.head_dim() < 3)
    throw std::invalid_argument("the planted heads are laid out for 4 layers x 4 heads");
  // σ, γ, ρ, ρ_f per layer and head: sinks from none (σ = 0) to strong (σ = 5), value ratios
  // around 0.6, as on a small trained BERT.
  if (heads == SinkHeads::planted)
    heads_ = {{{3.5, 1.00, 0.50, 0.55}, {4.0, 1.25, 0.70, 0.75}, {5.0, 0.75, 0.60, 0.65}, {4.5, 1.50, 0.80, 0.85}},
              {{4.5, 1.00, 0.60, 0.70}, {3.0, 1.25, 0.40, 0.45}, {4.0, 1.50, 0.90, 0.95}, {5.5, 0.75, 0.60, 0.60}},
              {{5.5, 1.25, 0.55, 0.60}, {3.5, 1.00, 0.65, 0.70}, {4.5, 1.50, 0.70, 0.80}, {4.0, 0.75, 0.50, 0.55}},
              {{4.0, 1.25, 0.60, 0.65}, {6.0, 1.00, 0.75, 0.80}, {3.0, 1.50, 0.50, 0.55}, {5.0, 1.25, 0.65, 0.70}}};
  else if (heads == SinkHeads::peaked)  // γ of 12 gives peaks about 0.99, 30 and more within 1e-5 of 1.
    heads_ = {{{0, 60, 0.60, 0.65}, {0, 60, 0.60, 0.65, 0}, {0, 24, 0.50, 0.55}, {120, 1.00, 0.00, 0.00}},
              {{0, 150, 0.70, 0.75}, {0, 18, 0.60, 0.60}, {0, 90, 0.40, 0.45}, {0, 90, 0.40, 0.45, 2}},
              {{0, 30, 0.55, 0.60}, {100, 1.00, 0.01, 0.012}, {0, 200, 0.65, 0.70}, {2.0, 1.50, 0.60, 0.70}},
              {{0, 40, 0.60, 0.65}, {0, 40, 0.60, 0.65, 0}, {0, 120, 0.50, 0.55}, {0, 12, 0.80, 0.85}}};
  else  // Saturated: content attention exp(-σ) below fp32's smallest subnormal (e^-103.3) at σ ≥ 110.
    heads_ = {{{120, 1.00, 0.00, 0.00}, {30, 1.25, 0.02, 0.025}, {12, 1.00, 0.05, 0.06}, {3.0, 1.50, 0.60, 0.65}},
              {{100, 1.00, 0.01, 0.012}, {20, 1.25, 0.03, 0.035}, {8.0, 1.50, 0.10, 0.12}, {0.0, 1.00, 0.60, 0.60}},
              {{95, 0.75, 0.02, 0.02}, {16, 1.00, 0.04, 0.05}, {6.0, 1.25, 0.20, 0.25}, {2.0, 1.50, 0.60, 0.70}},
              {{110, 1.25, 0.005, 0.006}, {25, 1.00, 0.02, 0.03}, {10, 1.50, 0.08, 0.10}, {4.0, 1.00, 0.50, 0.55}}};
}

std::vector<int8_t> PlantedSink::embedding(int64_t token, int cls_id, int sep_id) const {
  const size_t D = size_t(config_.hidden_size);
  if (token == cls_id || token == sep_id) {
    std::vector<int8_t> s(D, 1);
    for (size_t i = D / 2; i < D; ++i) s[i] = -1;
    return s;
  }
  return balanced(D, seed_ * 0x100000001b3ULL + uint64_t(token));
}

std::vector<int8_t> PlantedSink::direction(int layer, int h, int which) const {
  if (h < config_.num_attention_heads && head(layer, h).twin >= 0) h = head(layer, h).twin;
  return balanced(size_t(config_.hidden_size),
                  ~seed_ ^ (uint64_t(layer) << 40 | uint64_t(h) << 20 | uint64_t(which)));
}

BertWeights PlantedSink::weights(int cls_id, int sep_id) const {
  const BertConfig& c = config_;
  const int64_t D = c.hidden_size, I = c.intermediate_size, Dh = c.head_dim();
  const double sqrtD = std::sqrt(double(D)), sqrtDh = std::sqrt(double(Dh));
  BertWeights w;
  for_each_param(c, w, [](const std::string&, Param& p, const std::vector<int64_t>& shape) { p = zeros(shape); });
  for (int64_t t = 0; t < c.vocab_size; ++t) {
    const auto e = embedding(t, cls_id, sep_id);
    for (int64_t d = 0; d < D; ++d) w.word_embeddings.values[size_t(t * D + d)] = e[size_t(d)];
  }
  auto ones = [](Param& p) { std::fill(p.values.begin(), p.values.end(), 1.0f); };
  ones(w.embeddings_ln_g);
  const std::vector<int8_t> s = embedding(cls_id, cls_id, sep_id);

  for (int l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights& L = w.layers[size_t(l)];
    ones(L.attention_ln_g);
    ones(L.output_ln_g);
    for (int h = 0; h < c.num_attention_heads; ++h) {
      const PlantedHead& ph = head(l, h);
      const auto p = direction(l, h, 0), r = direction(l, h, 1), m = direction(l, h, 2);
      const int64_t base = h * Dh;
      auto row = [&](Param& W, int64_t out, const std::vector<int8_t>& dir, double scale) {
        for (int64_t d = 0; d < D; ++d) W.values[size_t(out * D + d)] = float(scale * dir[size_t(d)]);
      };
      // Scores: q = (1, p·x/√D), k = √Dh (σ s·x/D, γ r·x/√D).
      L.query_b.values[size_t(base)] = 1.0f;
      row(L.query_w, base + 1, p, 1.0 / sqrtD);
      row(L.key_w, base, s, sqrtDh * ph.sink_logit / double(D));
      row(L.key_w, base + 1, r, sqrtDh * ph.content_gain / sqrtD);
      // Values: ρ e0 for the specials, e1 + μ (m·x/D) e2 for content tokens.
      row(L.value_w, base, s, ph.value_ratio / double(D));
      row(L.value_w, base + 1, s, -1.0 / double(D));
      L.value_b.values[size_t(base + 1)] = 1.0f;
      row(L.value_w, base + 2, m, kContentValueSpread / double(D));
      // W_O: every column of the head's first three dimensions constant, κ = (κ0, κ1, κ1/2).
      const double k1 = 1.0 / sqrtD, k0 = special_output_gain(ph, sqrtD);
      for (int64_t o = 0; o < D; ++o) {
        L.attention_out_w.values[size_t(o * D + base)] = float(k0);
        L.attention_out_w.values[size_t(o * D + base + 1)] = float(k1);
        L.attention_out_w.values[size_t(o * D + base + 2)] = float(k1 / 2);
      }
    }
    std::fill(L.attention_out_b.values.begin(), L.attention_out_b.values.end(), 0.125f);
    // The FFN computes, but every output row is the same vector, so its output is a multiple of 1.
    const auto q = direction(l, 9, 3);
    std::vector<std::vector<int8_t>> rows;
    for (int k = 0; k < 7; ++k) rows.push_back(direction(l, 9, 4 + k));
    for (int64_t i = 0; i < I; ++i)
      for (int64_t d = 0; d < D; ++d)
        L.intermediate_w.values[size_t(i * D + d)] = float(0.02 * rows[size_t(i % 7)][size_t(d)]);
    for (int64_t o = 0; o < D; ++o)
      for (int64_t i = 0; i < I; ++i) L.output_w.values[size_t(o * I + i)] = float(0.01 * q[size_t(i % D)]);
  }
  return w;
}

PlantedSink::Answer PlantedSink::answer(const std::vector<int64_t>& ids, int cls_id, int sep_id,
                                        int layer, int h) const {
  const size_t T = ids.size();
  const double D = config_.hidden_size, sqrtD = std::sqrt(D);
  const PlantedHead& ph = head(layer, h);
  const auto p = direction(layer, h, 0), r = direction(layer, h, 1), m = direction(layer, h, 2);
  std::vector<std::vector<int8_t>> x;
  for (int64_t id : ids) x.push_back(embedding(id, cls_id, sep_id));
  auto special = [&](size_t j) { return ids[j] == cls_id || ids[j] == sep_id; };

  Answer a;
  a.attention.resize(T * T);
  for (size_t i = 0; i < T; ++i) {
    double sum = 0;
    for (size_t j = 0; j < T; ++j) {
      const double score = (special(j) ? ph.sink_logit : 0.0) +
                           ph.content_gain * (dot(p, x[i]) / sqrtD) * (dot(r, x[j]) / sqrtD);
      a.attention[i * T + j] = std::exp(score);
      sum += a.attention[i * T + j];
    }
    for (size_t j = 0; j < T; ++j) a.attention[i * T + j] /= sum;
  }
  const double k1 = 1.0 / sqrtD, k0 = special_output_gain(ph, sqrtD);
  for (size_t j = 0; j < T; ++j) {
    if (special(j)) {
      a.value_norm.push_back(ph.value_ratio);
      a.transformed_norm.push_back(sqrtD * k0 * ph.value_ratio);
    } else {
      const double spread = kContentValueSpread * dot(m, x[j]) / D;
      a.value_norm.push_back(std::sqrt(1 + spread * spread));
      a.transformed_norm.push_back(sqrtD * std::fabs(k1 + k1 / 2 * spread));
    }
  }
  return a;
}

}  // namespace lenscheck
