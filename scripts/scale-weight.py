#!/usr/bin/python3
"""Copies a checkpoint folder with one parameter times a factor: a checkpoint of other weights, for the
tests that a candidate which loads it (`verify --candidate transformers --candidate-model COPY`) fails.

Usage: scale-weight.py CHECKPOINT_DIR OUT_DIR PARAMETER FACTOR   (Debian's python3 with numpy)
"""
import json
import shutil
import struct
import sys

import numpy


def main():
    source, out, parameter, factor = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    shutil.copytree(source, out, dirs_exist_ok=True)
    file = f"{out}/model.safetensors"
    with open(file, "rb") as f:
        blob = bytearray(f.read())
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    entry = header.get(parameter)
    if entry is None or entry["dtype"] != "F32":
        sys.exit(f"{source}/model.safetensors: no F32 parameter {parameter}")
    begin, end = (8 + length + o for o in entry["data_offsets"])
    values = numpy.frombuffer(bytes(blob[begin:end]), dtype="<f4") * numpy.float32(factor)
    blob[begin:end] = values.astype("<f4").tobytes()
    with open(file, "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main()
