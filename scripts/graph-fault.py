#!/usr/bin/python3
"""A faulty runtime, not a faulty checkpoint: copies an ONNX graph of a BERT encoder with one extra node,
Mul by 1 + DELTA, after one op of one layer, so every weight stays the checkpoint's and only the arithmetic
is wrong (issue #44: the local verdict must blame the op, or the span, that holds such a node).

POSITION is where the node goes in layer LAYER:
  query, key, value, attention-output, ffn-in, ffn-out: the linear layer's product x·W, before its bias is
      added. Located by the bias it adds (encoder.layer.L.….bias, the name both lenscheck's and
      torch.onnx's exports keep): the bias's consumer (an Add, or ONNX Runtime's BiasGelu) takes the product
      from a MatMul or FusedMatMul, or from int8's MatMulInteger → Cast → Mul chain.
  layernorm: the output of the layer's attention-block LayerNorm (attention.output.LayerNorm): the
      LayerNormalization node, or a decomposition's final Add (the one adding its bias).
The constant is stored in the dtype of the tensor it scales (float16 in an fp16 graph); a DELTA that this
dtype cannot hold (1 + DELTA rounds to 1) is refused, since the copy would compute the clean graph.
DELTA 0 is the clean copy: the same extra node, times exactly 1, which hides the same tensors from the
graph patterns (the same spans judged) and computes what the original does.

Usage: graph-fault.py IN.onnx OUT.onnx POSITION LAYER DELTA   (/usr/bin/python3 with numpy and onnx)
Prints the node scaled and the factor as stored; exit 2 naming the file and the problem on bad input.
"""
import sys

import numpy
import onnx
from onnx import helper, numpy_helper

BIAS = {
    "query": "attention.self.query.bias",
    "key": "attention.self.key.bias",
    "value": "attention.self.value.bias",
    "attention-output": "attention.output.dense.bias",
    "ffn-in": "intermediate.dense.bias",
    "ffn-out": "output.dense.bias",
}
LAYERNORM_BIAS = "attention.output.LayerNorm.bias"
PRODUCTS = ("MatMul", "FusedMatMul")


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def named(name, suffix):
    # "encoder.layer.1.output.dense.bias" ends with "layer.1.output.dense.bias" but so must not
    # "encoder.layer.11.output.dense.bias" or "….layer.1.attention.output.dense.bias": a whole-name suffix.
    return name == suffix or name.endswith("." + suffix)


def main():
    if len(sys.argv) != 6:
        fail(__doc__.strip().splitlines()[-2])
    src, dst, position, layer, delta = sys.argv[1:]
    if position not in BIAS and position != "layernorm":
        fail(f'position "{position}" is not one of {", ".join([*BIAS, "layernorm"])}')
    try:
        layer, delta = int(layer), float(delta)
    except ValueError:
        fail(f"LAYER must be an integer and DELTA a number, not {sys.argv[4]!r} and {sys.argv[5]!r}")
    try:
        model = onnx.load(src)
    except Exception as e:  # onnx raises DecodeError, OSError or its own: any is "not a graph we can read"
        fail(f"{src}: not a readable ONNX model ({e})")
    g = model.graph
    values = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    for n in g.node:  # Constant nodes hold parameters in some exports (README, "The graph you ship")
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            values[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    producer = {o: n for n in g.node for o in n.output}

    suffix = f"layer.{layer}.{BIAS.get(position, LAYERNORM_BIAS)}"
    bias = [name for name in values if named(name, suffix)]
    if len(bias) != 1:
        fail(f"{src}: {len(bias)} parameters named …{suffix} ({', '.join(bias) or 'none'}); one expected")
    bias = bias[0]
    users = [n for n in g.node if bias in n.input]
    if len(users) != 1:
        fail(f"{src}: {bias} feeds {len(users)} nodes; one expected")
    user = users[0]
    if position == "layernorm":
        if user.op_type not in ("LayerNormalization", "Add"):
            fail(f"{src}: {bias} feeds a {user.op_type} ({user.name}), not a LayerNormalization or its final Add")
        scaled = user.output[0]
        where = f"the output of {user.op_type} {user.name}"
    else:
        if user.op_type not in ("Add", "BiasGelu") or len(user.input) != 2:
            fail(f"{src}: {bias} feeds a {user.op_type} ({user.name}), not the Add of a linear layer")
        scaled = next(x for x in user.input if x != bias)
        made_by = producer.get(scaled)
        chain = [made_by.op_type] if made_by else []
        if made_by and made_by.op_type == "Mul":  # int8: MatMulInteger → Cast → Mul by the scales' product
            cast = next((producer[x] for x in made_by.input if x in producer and producer[x].op_type == "Cast"), None)
            if cast and cast.input[0] in producer:
                chain = [producer[cast.input[0]].op_type, "Cast", "Mul"]
        if not (chain and (chain[0] in PRODUCTS or chain == ["MatMulInteger", "Cast", "Mul"])):
            fail(f"{src}: the product entering {user.name} comes from {' → '.join(chain) or 'no node'}, not a MatMul, "
                 "FusedMatMul or MatMulInteger → Cast → Mul")
        where = f"the product ({' → '.join(chain)}) entering {user.op_type} {user.name}"

    dtype = values[bias].dtype
    factor = numpy.array(1.0 + delta, dtype=dtype)
    if delta != 0 and factor == 1:
        step = float(numpy.spacing(numpy.array(1, dtype=dtype)))
        fail(f"DELTA {delta:g} is below {dtype}'s step at 1 ({step:.3g}): 1 + DELTA rounds to 1, the copy would "
             "compute the clean graph")
    # The producer's output is renamed and the Mul writes the old name: every consumer, a graph output
    # among them, reads the scaled tensor unchanged.
    before = f"{scaled}_before_fault"
    for n in g.node:
        n.output[:] = [before if o == scaled else o for o in n.output]
    g.initializer.append(numpy_helper.from_array(factor, name="fault_factor"))
    at = next(i for i, n in enumerate(g.node) if before in n.output)
    g.node.insert(at + 1, helper.make_node("Mul", [before, "fault_factor"], [scaled], name="fault_mul"))
    onnx.save(model, dst)
    print(f"{dst}: scaled {where} ({scaled}) by {float(factor)!r} ({dtype}: δ = {float(factor) - 1:.4g})")


if __name__ == "__main__":
    main()
