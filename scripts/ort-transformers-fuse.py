"""Writes a BERT graph as ONNX Runtime's Python transformer optimizer fuses it for serving
(onnxruntime.transformers.optimizer, model_type bert): EmbedLayerNormalization, com.microsoft.Attention with
Q, K and V packed into one weight, SkipLayerNormalization with the linear layers' biases folded in, BiasGelu;
with --float16, its float16 conversion (inputs and outputs kept float32), as the optimizer's users ship it.
The graph is one lenscheck did not write, for `verify --candidate onnx:PATH` (issue #45).

Usage: ort-transformers-fuse.py [--float16] CHECKPOINT_DIR IN.onnx OUT.onnx
In .deps/venv (onnxruntime, onnx, sympy; scripts/install-deps.sh). IN is a torch.onnx export
(scripts/torch-onnx-export.py), whose forms the optimizer's fusions recognise. Exit 1 where a fusion did not
happen in every layer: the graph would then be a partly fused one, not what the optimizer ships.
"""
import argparse
import json
import logging
import sys

from onnxruntime.transformers import optimizer

parser = argparse.ArgumentParser()
parser.add_argument("--float16", action="store_true")
parser.add_argument("checkpoint")
parser.add_argument("source")
parser.add_argument("out")
args = parser.parse_args()
logging.disable(logging.WARNING)  # the optimizer logs every fusion it tries

with open(f"{args.checkpoint}/config.json") as f:
    config = json.load(f)
layers = config["num_hidden_layers"]
# opt_level 0: the Python fusions alone; ONNX Runtime's C++ optimizer runs when the graph is loaded.
model = optimizer.optimize_model(args.source, model_type="bert", num_heads=config["num_attention_heads"],
                                 hidden_size=config["hidden_size"], opt_level=0)
fused = model.get_fused_operator_statistics()
wanted = {"EmbedLayerNormalization": 1, "Attention": layers, "SkipLayerNormalization": 2 * layers}
missing = {op: (fused.get(op, 0), n) for op, n in wanted.items() if fused.get(op, 0) != n}
if missing or fused.get("BiasGelu", 0) + fused.get("FastGelu", 0) + fused.get("Gelu", 0) != layers:
    sys.exit(f"ort-transformers-fuse.py: {args.source}: the optimizer fused {fused}; a BERT of {layers} layers "
             f"needs {wanted} and one GELU per layer")
if args.float16:
    model.convert_float_to_float16(keep_io_types=True)
model.save_model_to_file(args.out)
