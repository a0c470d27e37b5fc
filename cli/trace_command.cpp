// lenscheck trace and export-onnx: one sentence's trace as safetensors; the checkpoint as an ONNX graph.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/parallel.h"
#include "common/sentences.h"
#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "model/error.h"
#include "model/trace_io.h"
#include "onnx/export.h"
#include "oracle/oracle.h"
#include "runtime/encoder.h"

namespace lenscheck::cli {

Command add_trace(CLI::App& app, const Shared& shared) {
  struct Options {
    std::string model_dir, text, impl = "runtime", precision = "fp32", out;
  };
  auto o = std::make_shared<Options>();
  auto* trace = app.add_subcommand("trace", "write one trace as safetensors");
  trace->add_option("--model", o->model_dir, "checkpoint directory")->required();
  trace->add_option("--text", o->text, "the sentence")->required();
  trace->add_option("--impl", o->impl, "runtime or oracle")->check(CLI::IsMember({"runtime", "oracle"}));
  trace->add_option("--precision", o->precision, "the oracle's: fp32 or fp64, or fp64 simulating tf32, bf16, fp16, "
                                                 "fp16-ort-cpu, fp16-ort-fused, int8 or w8a32 (the derived rule's benchmark for a candidate "
                                                 "declaring it)")
      ->capture_default_str();
  trace->add_option("--out", o->out, "output .safetensors")->required();
  return {trace, [o, &shared] {
            const Checkpoint ck = load_checkpoint(o->model_dir);
            const BertTokenizer tokenizer(ck.vocab, ck.tokenizer);
            const Encoding enc = encode_sentence(tokenizer, {"text", o->text, 0},
                                                 static_cast<size_t>(ck.config.max_position_embeddings), "--text");
            if (o->impl == "runtime" && o->precision != "fp32")
              throw InputError("--precision", "the runtime computes in fp32 only");
            const Trace t =
                o->impl == "runtime"
                    ? runtime::Encoder(ck.config, ck.weights, split_cores(1, shared.threads).inside).forward(enc)
                : o->precision == "fp64"
                    ? oracle::Oracle(ck.config, ck.weights, oracle::Precision::fp64).forward(enc)
                    : oracle::Oracle::computing_in(ck.config, ck.weights, parse_arithmetic(o->precision, "--precision"))
                          .forward(enc);
            save_trace(o->out, t);
            fmt::print("wrote {} ({}, {} tokens, {} tensors)\n", o->out, t.producer, t.tokens.size(), t.tensors.size());
            return kPass;
          }};
}

Command add_export_onnx(CLI::App& app, const Shared&) {
  struct Options {
    std::string model_dir, out, variant = "fp32";
    bool with_trace = false;
  };
  auto o = std::make_shared<Options>();
  auto* export_onnx = app.add_subcommand("export-onnx", "write the checkpoint's BertModel graph as ONNX (opset " +
                                                        std::to_string(onnx_export::kOpset) + ")");
  export_onnx->add_option("--model", o->model_dir, "checkpoint directory")->required();
  export_onnx->add_option("--out", o->out, "output .onnx")->required();
  export_onnx->add_option("--variant", o->variant, "fp32, fp16 (weights and activations) or int8 (linear layers "
                                                   "dynamically quantized: DynamicQuantizeLinear + MatMulInteger)")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "int8"}));
  export_onnx->add_flag("--trace", o->with_trace, "every tensor of the trace schema as a named graph output");
  return {export_onnx, [o] {
            const Checkpoint ck = load_checkpoint(o->model_dir);
            const auto started = std::chrono::steady_clock::now();
            const onnx_export::ExportSummary e = onnx_export::export_onnx(
                ck, {.variant = onnx_export::parse_variant(o->variant), .trace = o->with_trace}, o->out);
            fmt::print("wrote {} (BertModel, {}, opset {}, {} nodes, {} initializers, {} outputs, {:.1f} MB, {:.2f} s)\n",
                       o->out, o->variant, onnx_export::kOpset, e.nodes, e.initializers, e.outputs,
                       double(e.bytes) / 1e6,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
            return kPass;
          }};
}

}  // namespace lenscheck::cli
