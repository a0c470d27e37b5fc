#pragma once
// The reference: the same encoder written with libtorch's own ops and modules, in fp32 or fp64.
// torch headers stay in oracle/*.cpp and oracle/'s private headers; this header is torch-free.
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "model/arithmetic.h"
#include "model/checkpoint.h"
#include "model/quantize.h"
#include "model/tokenizer.h"
#include "model/trace.h"

namespace lenscheck::oracle {

enum class Precision { fp32, fp64 };

// libtorch could not run the model (out of memory, above all): what it said, and in which precision.
class OracleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Oracle {
 public:
  // `rounding_probe` non-zero: every parameter and every LayerNorm output moved one float step, up or
  // down as that seed draws (the derived gate's sensitivity probe, gate/verify.h); 0: the model as it is.
  // Every oracle borrows `weights.word_embeddings`, reading only the rows a sentence names: `weights`
  // must outlive it.
  Oracle(const BertConfig& config, const BertWeights& weights, Precision precision, uint64_t rounding_probe = 0);

  // libtorch computing in `arithmetic`: fp32 is libtorch's own fp32 (the constructor above). The others
  // have no CPU kernels in libtorch and are simulated in fp64 as Higham and Pranesh's "chop" does (SIAM
  // J. Sci. Comput. 2019): every parameter stored in the format, every op computed in fp64 from inputs
  // in the format and its output rounded to it (model/arithmetic.h says which values each format rounds,
  // int8 as ONNX Runtime's quantize_dynamic does, w8a32's weights re-quantized by model/quantize.h's rule, or
  // a graph's own, and dequantized to fp32). A rounding probe moves every stored parameter and LayerNorm
  // output one step of the format it is stored in (one quantization step for int8 weights). `quantized`:
  // the weights as a graph's quantizer holds them (any rule), which the simulated schemes read in place of
  // their own rule: int8's and w8a32's linear layers, and any embedding table the graph quantizes,
  // dequantized as a DequantizeLinear does ((q − zero point) · scale, one fp32 rounding); and the activations
  // a graph quantizes statically, which int8 quantizes at their fixed scales (QuantizedParams::activations,
  // products requantized as QLinearMatMul does) in place of DynamicQuantizeLinear's. `int8_sums`: how int8's linear
  // layers sum their integer products, as the candidate's kernel does (model/arithmetic.h).
  static Oracle computing_in(const BertConfig& config, const BertWeights& weights, Arithmetic arithmetic,
                             uint64_t rounding_probe = 0,
                             std::shared_ptr<const QuantizedParams> quantized = nullptr,
                             Int8Sums int8_sums = Int8Sums::exact);
  // The simulated forward of computing_in for every scheme, fp32 included: what recompute_locally runs on.
  static Oracle recomputing_in(const BertConfig& config, const BertWeights& weights, Arithmetic arithmetic,
                               std::shared_ptr<const QuantizedParams> quantized = nullptr,
                               Int8Sums int8_sums = Int8Sums::exact);
  ~Oracle();
  Oracle(Oracle&&) noexcept;

  // Record::everything: every tensor of trace_schema(); Record::output: a plain libtorch forward.
  Trace forward(const Encoding& encoding, Record record = Record::everything) const;

  // The local verdict's references (gate/verify.h): every tensor of the forward, each op recomputed from
  // the tensors `candidate` holds in this oracle's scheme (an oracle made by recomputing_in); where it
  // lacks an op's input, the recomputation runs on through it from the last tensors it holds (a span). `exact`: the op's own arithmetic in fp64, its output rounded where
  // the scheme rounds; `fp32`: the same op in fp32; `probes`: the fp32 op with each sum of a linear
  // layer (x·Wᵀ + b) moved by one rounding at the terms' scale where that
  // exceeds a step of the sum, and each result moved one fp32 step before it is stored (the seeds 1 …
  // probes draw which way). Where the scheme passes a value on in fp32 that the trace holds rounded
  // (fp16-ort-cpu), the op runs on from the last stored values, as the candidate does between its casts.
  // A tensor the candidate lacks, or holds misshapen or not finite, counts as lacking.
  // `fused`, for fp16-ort-fused: `exact` rounded where ONNX Runtime's fused ops may round instead
  // (Arithmetic::fp16_ort_fused): where their kernels round is not documented, and the values in question
  // (Q, K, V, the LayerNorms' inputs, the products before the bias) are in no trace, so both ends belong
  // to the spread. Measured on trained-mini and all-MiniLM-L6-v2's fused fp16 graphs: either alone as the
  // reference leaves a clean graph's local ratios at 11-62 (context, pre_norm), both at most 1.4.
  // `attention_in_one_kernel`, where the scheme rounds its ops coarser than fp32 and the candidate holds
  // no probabilities of some layer: `exact` with the scores and probabilities not rounded, the context
  // the attention's only rounded value. Nothing in such a trace shows the two were stored, and a fused
  // attention kernel keeps them in fp32: torch's scaled_dot_product_attention on the CPU (its flash
  // kernel, aten/src/ATen/native/cpu/FlashAttentionKernel.cpp: q·k, the softmax and p·v accumulate in
  // float for Half and BFloat16, the output alone stored in the format). Both ends belong to the span's
  // spread. Measured on transformers' SDPA in fp16 and bf16 (reports/verify-transformers.md): with the
  // all-rounded end alone the clean context's local ratio is 17-43, with both at most a few.
  // `requantized_other_way`, where a graph requantizes products (static int8, QLinearMatMul): `exact` with
  // each requantized product that lies within √n · u · Σ|terms| of a rounding boundary (n terms, u = 2^-24) on
  // the boundary's other side, one integer away. The graph as written dequantizes the operands and sums them
  // in fp32 before it rounds the product to integers (ONNX Runtime runs it so below its `all` optimization, and
  // there on operands it leaves int8): that fp32 sum errs, and where it crosses a boundary the integer moves by
  // one, a whole step, which no rounding probe need draw. √n · u · Σ|terms| is the probabilistic size of a sum's
  // rounding error (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019, λ = 1), not its worst case; measured on
  // trained-mini's static QDQ graph at `disabled`: 72 integers of 43.8 M moved, each at most 3.55 · u ·
  // Σ|terms| from its boundary, where √n is 16 or more.
  struct LocalReferences {
    Trace exact, fp32;
    std::vector<Trace> probes;
    std::optional<Trace> fused;
    std::optional<Trace> requantized_other_way;
    std::optional<Trace> attention_in_one_kernel;
    std::map<std::string, TraceSpan> spans;  // each tensor recomputed through tensors the candidate lacks
  };
  LocalReferences recompute_locally(const Trace& candidate, int probes) const;

  // Which BLAS libtorch runs on and its thread count, for reports ("OpenBLAS 0.3.21, 1 thread").
  static std::string backend();
  static void set_threads(int threads);

 private:
  Oracle();
  static Oracle simulating(const BertConfig& config, const BertWeights& weights, Arithmetic arithmetic,
                           uint64_t rounding_probe, std::shared_ptr<const QuantizedParams> quantized,
                           Int8Sums int8_sums);
  void load(const BertConfig& config, const BertWeights& weights, Precision precision);
  void load_simulated(const BertConfig& config, const BertWeights& weights, Arithmetic arithmetic);
  Trace run(const Encoding& encoding, Record record) const;
  struct SumMagnitudes;
  struct Local {
    const Trace* feed;   // the candidate, whose tensors each op reads as its inputs
    bool fp32_ops;       // each op in fp32, else fp64
    uint64_t probe;      // non-zero: a rounding probe of the fp32 ops (LocalReferences::probes), this its seed
    // The probes' Σ|terms| of each linear layer's sums, in the pass's order: the first probe computes
    // them, the others read them (a matrix product each, as dear as the layer).
    SumMagnitudes* magnitudes = nullptr;
    bool as_fused_graph = false;  // LocalReferences::fused
    bool attention_in_one_kernel = false;  // LocalReferences::attention_in_one_kernel
    bool requantized_other_way = false;    // LocalReferences::requantized_other_way
  };
  // `spans`: where a local pass writes LocalReferences::spans.
  Trace run_simulated(const Encoding& encoding, const Local* local,
                      std::map<std::string, TraceSpan>* spans = nullptr) const;
  class SimulatedPass;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lenscheck::oracle
