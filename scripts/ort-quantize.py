"""A third party's int8 graph: ONNX Runtime's quantize_dynamic (onnxruntime.quantization) on an fp32 BERT graph, as
people quantize one to ship it. With its defaults, the weights are int8 per tensor in the full range and the embedding
tables uint8 with a zero point, dequantized after their Gather; --per-channel --reduce-range gives every linear layer
a scale per output channel in the reduced range [-64, 64]. lenscheck judges either against the checkpoint, with the
graph's own integers, scales and zero points (onnx/shipped_graph.h).

Usage: ort-quantize.py [--per-channel] [--reduce-range] IN.onnx OUT.onnx   (in .deps/venv: onnxruntime, onnx,
ml_dtypes). Exit 2 naming the file on a graph it cannot read.
"""
import argparse
import logging
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-channel", action="store_true")
    parser.add_argument("--reduce-range", action="store_true")
    parser.add_argument("source")
    parser.add_argument("out")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # its advice to pre-process the graph first, which a third party may skip
    from onnxruntime.quantization import QuantType, quantize_dynamic
    try:
        quantize_dynamic(args.source, args.out, per_channel=args.per_channel, reduce_range=args.reduce_range,
                         weight_type=QuantType.QInt8)
    except Exception as e:  # onnx's and onnxruntime's errors for an unreadable graph are of many types
        print(f"ort-quantize.py: {args.source}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"{args.out}: quantize_dynamic of {args.source} (per_channel={args.per_channel}, "
          f"reduce_range={args.reduce_range})")


if __name__ == "__main__":
    main()
