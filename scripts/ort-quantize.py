"""A third party's int8 graph: ONNX Runtime's quantizer (onnxruntime.quantization) on an fp32 BERT graph, as people
quantize one to ship it.

Dynamic (quantize_dynamic): with its defaults, the weights int8 per tensor in the full range and the embedding
tables uint8 with a zero point, dequantized after their Gather; --per-channel --reduce-range gives every linear
layer a scale per output channel in the reduced range [-64, 64].

Static (quantize_static, --static qdq or --static qoperator): every MatMul's operands quantized at fixed scales that
MinMax calibration finds on the sentences of --calibrate (fixtures/sentences.yaml's `text:` lines, split by BERT's
WordPiece on --vocab: lower case, accents stripped, punctuation apart, greedy longest match), uint8 activations with
a zero point and int8 weights: QuantizeLinear → DequantizeLinear pairs (QDQ, the quantizer's default format), or
QLinearMatMul between a QuantizeLinear and a DequantizeLinear (QOperator). Which sentences calibrate it is the
quantizer's user's choice; lenscheck reads the scales from the graph, whatever found them.

lenscheck judges each against the checkpoint, with the graph's own integers, scales and zero points
(onnx/shipped_graph.h).

Usage: ort-quantize.py [--per-channel] [--reduce-range] [--static qdq|qoperator --vocab VOCAB --calibrate YAML]
                       IN.onnx OUT.onnx   (in .deps/venv: onnxruntime, onnx, ml_dtypes).
Exit 2 naming the file on a graph or file it cannot read.
"""
import argparse
import logging
import re
import sys
import unicodedata


def wordpiece(text, vocab):
    """BERT's uncased tokenizer, enough for calibration: [CLS] pieces [SEP]."""
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    words = re.findall(r"\w+|[^\w\s]", text)
    ids = [vocab["[CLS]"]]
    for word in words:
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            while end > start and (("##" if start else "") + word[start:end]) not in vocab:
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[("##" if start else "") + word[start:end]])
            start = end
        ids += pieces
    return ids + [vocab["[SEP]"]]


def calibration_feeds(graph_file, vocab_file, sentences_file):
    import numpy as np
    import onnx
    with open(vocab_file, encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    with open(sentences_file, encoding="utf-8") as f:
        texts = [re.sub(r'\\(.)', r"\1", m) for m in re.findall(r'^\s*text:\s*"(.*)"\s*$', f.read(), re.M)]
    if not texts:
        raise ValueError(f"{sentences_file}: no `text: \"...\"` line")
    inputs = {i.name for i in onnx.load(graph_file, load_external_data=False).graph.input}
    feeds = []
    for text in texts:
        ids = np.asarray([wordpiece(text, vocab)], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        feeds.append({name: value for name, value in feed.items() if name in inputs})
    return feeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-channel", action="store_true")
    parser.add_argument("--reduce-range", action="store_true")
    parser.add_argument("--static", choices=["qdq", "qoperator"])
    parser.add_argument("--vocab")
    parser.add_argument("--calibrate")
    parser.add_argument("source")
    parser.add_argument("out")
    args = parser.parse_args()
    if args.static and not (args.vocab and args.calibrate):
        parser.error("--static needs --vocab and --calibrate")
    logging.disable(logging.WARNING)  # its advice to pre-process the graph first, which a third party may skip
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    try:
        if args.static:
            class Sentences(CalibrationDataReader):
                def __init__(self, feeds):
                    self.feeds = iter(feeds)

                def get_next(self):
                    return next(self.feeds, None)
            feeds = calibration_feeds(args.source, args.vocab, args.calibrate)
            quantize_static(args.source, args.out, Sentences(feeds),
                            quant_format=QuantFormat.QDQ if args.static == "qdq" else QuantFormat.QOperator,
                            op_types_to_quantize=["MatMul"], per_channel=args.per_channel,
                            reduce_range=args.reduce_range, activation_type=QuantType.QUInt8,
                            weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
        else:
            quantize_dynamic(args.source, args.out, per_channel=args.per_channel, reduce_range=args.reduce_range,
                             weight_type=QuantType.QInt8)
    except Exception as e:  # onnx's and onnxruntime's errors for an unreadable graph are of many types
        print(f"ort-quantize.py: {args.source}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
    how = f"quantize_static ({args.static}, calibrated on {args.calibrate})" if args.static else "quantize_dynamic"
    print(f"{args.out}: {how} of {args.source} (per_channel={args.per_channel}, reduce_range={args.reduce_range})")


if __name__ == "__main__":
    main()
