"""lenscheck's adapter for ONNX Runtime (PyPI's onnxruntime, CPU execution provider).

Started by `lenscheck verify --candidate onnxruntime[:fp16|:int8]` as
`PYTHON_ENV/bin/python3 -I ort-adapter.py REQUEST.json`. The request names the graph, the session
options and every sentence's token ids. The adapter answers on stdout, one line per step, so that
lenscheck can bound the time of each:
  fact int8_sums <exact|int16_pairs_saturated>   (an int8 request only)
  ready <onnxruntime version> <session creation ms>
  done <sentence index> <run ms>
and writes sentence i's trace to <out_dir>/<i>.safetensors: every graph output but last_hidden_state
under its own name, the batch axis of 1 dropped, in the dtype ORT returned (F32 or F16), with the ids
as I64 "input_ids". A plain request fetches last_hidden_state alone and writes nothing (timing).
The fact is measured, not looked up: how this build of ONNX Runtime on this CPU sums uint8 · int8 products in
MatMulInteger (its MLAS kernel on x86 without VNNI sums neighbouring pairs in int16 with saturation;
model/arithmetic.h, Int8Sums).
Any error goes to stderr and exits 1.
"""
import json
import os
import struct
import sys
import time

import numpy as np
import onnxruntime as ort

DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16"}
OPTIMIZATION = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "layout": ort.GraphOptimizationLevel.ORT_ENABLE_LAYOUT,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def write_safetensors(file, tensors, metadata):
    """tensors: (name, dtype, shape, bytes) in order; the header padded to 8 bytes, as the format asks."""
    header = {"__metadata__": metadata}
    offset = 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(file, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for _, _, _, data in tensors:
            out.write(data)


def message(*fields):
    """Protocol buffers' wire format of (field number, value) pairs: int as a varint, bytes or str as length-
    delimited (a nested message is its bytes). Enough of it to write the probe's graph without the onnx package,
    which an environment that runs ONNX Runtime need not have."""
    def varint(n):
        out = bytearray()
        assert n >= 0, "a varint of a negative int"
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    out = b""
    for number, value in fields:
        if isinstance(value, int):
            out += varint(number << 3) + varint(value)
        else:
            data = value.encode() if isinstance(value, str) else value
            out += varint(number << 3 | 2) + varint(len(data)) + data
    return out


def int8_sums():
    """How MatMulInteger sums uint8 · int8 products here. A = [255, 255, 255, 255] times B's two columns,
    [127, 127, 0, 0] and [127, 127, -127, -127]: exactly 64770 and 0; 32767 and -1 where each pair of neighbouring
    products (k = 2i, 2i + 1) is summed in int16 with saturation (32767 - 32768), the pairs lenscheck's oracle
    saturates. Anything else is a kernel lenscheck does not model."""
    UINT8, INT8, INT32 = 2, 3, 6
    def tensor_type(elem, dims):  # TypeProto{tensor_type{elem_type, shape{dim{dim_value}}}}
        return message((1, message((1, elem), (2, message(*[(1, message((1, d))) for d in dims])))))
    b_rows = [[127, 127], [127, 127], [0, -127], [0, -127]]  # B [K = 4, N = 2], row-major
    b = message(*[(1, d) for d in (4, 2)], (2, INT8), (8, "b"),
                (9, bytes(v & 0xFF for row in b_rows for v in row)))
    graph = message((1, message((1, "a"), (1, "b"), (2, "y"), (4, "MatMulInteger"))), (2, "probe"), (5, b),
                    (11, message((1, "a"), (2, tensor_type(UINT8, (1, 4))))),
                    (12, message((1, "y"), (2, tensor_type(INT32, (1, 2))))))
    model = message((1, 8), (7, graph), (8, message((1, ""), (2, 13))))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    y = tuple(int(v) for v in session.run(None, {"a": np.full((1, 4), 255, dtype=np.uint8)})[0][0])
    sums = {(64770, 0): "exact", (32767, -1): "int16_pairs_saturated"}
    if y not in sums:
        raise ValueError(f"MatMulInteger's probe gave {y}: neither exact sums (64770, 0) nor neighbouring pairs "
                         "saturated to int16 (32767, -1)")
    return sums[y]


def session_options(request):
    options = ort.SessionOptions()
    options.intra_op_num_threads = request["intra_op_threads"]
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    level = request["graph_optimization"]
    if level not in OPTIMIZATION:
        raise ValueError(f"graph_optimization {level!r} is not one of {', '.join(OPTIMIZATION)}")
    options.graph_optimization_level = OPTIMIZATION[level]
    if request.get("optimized_model"):
        options.optimized_model_filepath = request["optimized_model"]
    if request.get("profile_prefix"):
        options.enable_profiling = True
        options.profile_file_prefix = request["profile_prefix"]
    return options


def feeds_for(session, ids):
    """The inputs the graph has of BertModel's three: a shipped graph may lack the mask or the token types."""
    row = np.asarray([ids], dtype=np.int64)
    inputs = {
        "input_ids": lambda: row,
        "attention_mask": lambda: np.ones_like(row),
        "token_type_ids": lambda: np.zeros_like(row),
    }
    feeds = {}
    for graph_input in session.get_inputs():
        if graph_input.name not in inputs:
            raise ValueError(f"the graph has an input {graph_input.name}, not one of BertModel's")
        feeds[graph_input.name] = inputs[graph_input.name]()
    return feeds


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        request = json.load(f)
    if request["precision"] == "int8":
        print(f"fact int8_sums {int8_sums()}", flush=True)
    started = time.perf_counter()
    session = ort.InferenceSession(request["model"], sess_options=session_options(request),
                                   providers=["CPUExecutionProvider"])
    ms = lambda since: (time.perf_counter() - since) * 1e3
    print(f"ready {ort.__version__} {ms(started):.3f}", flush=True)

    outputs = [o.name for o in session.get_outputs()]
    fetches = ["last_hidden_state"] if request["plain"] else [n for n in outputs if n != "last_hidden_state"]
    for i, ids in enumerate(request["sentences"]):
        feeds = feeds_for(session, ids)
        run = time.perf_counter()
        results = session.run(fetches, feeds)
        run_ms = ms(run)
        if not request["plain"]:
            tensors = [("input_ids", "I64", [len(ids)], np.asarray(ids, dtype="<i8").tobytes())]
            for name, value in zip(fetches, results):
                if value.dtype not in DTYPES:
                    raise ValueError(f"output {name} has type {value.dtype}, not float32 or float16")
                if value.ndim == 0 or value.shape[0] != 1:
                    raise ValueError(f"output {name} has dims {list(value.shape)}, not a batch of 1")
                data = np.ascontiguousarray(value[0], dtype=value.dtype.newbyteorder("<"))
                tensors.append((name, DTYPES[value.dtype], value.shape[1:], data.tobytes()))
            write_safetensors(os.path.join(request["out_dir"], f"{i}.safetensors"), tensors,
                              {"format": "lenscheck-trace-1", "producer": request["producer"],
                               "precision": request["precision"]})
        print(f"done {i} {run_ms:.3f}", flush=True)
    if request.get("profile_prefix"):
        print(f"profile: {session.end_profiling()}", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the contract: any error on stderr, exit 1
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
