#!/usr/bin/python3
"""Writes a Hugging Face checkpoint folder's model.safetensors as pytorch_model.bin, the way
transformers' save_pretrained did before safetensors: torch.save of the state dict (an OrderedDict
with its _metadata of module versions), a zip archive of data.pkl and one entry per storage. Every
other file of the folder is copied beside it; model.safetensors is not, so that lenscheck reads the
archive.

Usage: to-pytorch-bin.py SRC_DIR OUT_DIR [--dtype float16|bfloat16] [--views] [--legacy]
  --dtype   store the floating tensors in this dtype (HalfStorage, BFloat16Storage)
  --views   store tensors as views, as real checkpoints hold some: every matrix transposed in its
            storage (strides (1, rows)), and each layer's vectors as slices of one shared storage
  --legacy  the format before PyTorch 1.6 (_use_new_zipfile_serialization=False)
Runs on Debian's python3-torch (CTest's fixture.pytorch-bin, scripts/make-pytorch-bin-fixtures.cmake).
"""
import argparse
import collections
import json
import pathlib
import re
import shutil
import struct

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


def read_safetensors(path):
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    body = data[8 + size:]
    tensors = collections.OrderedDict()
    # In the order of their data, the order SafetensorsFile lists them in: lenscheck's notes name the
    # ignored tensors in it.
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        flat = torch.frombuffer(bytearray(body[begin:end]), dtype=dtype) if end > begin else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"])
    return tensors


def as_views(tensors):
    """The same values, held as views: transposed matrices, and per layer one storage for the vectors."""
    out = collections.OrderedDict()
    vectors = collections.defaultdict(list)  # "encoder.layer.3" -> the names of its floating 1-D tensors
    for name, t in tensors.items():
        layer = re.match(r"(.*\.layer\.\d+)\.", name)
        if layer and t.dim() == 1 and t.is_floating_point():
            vectors[layer.group(1)].append(name)
    shared = {}
    for names in vectors.values():
        storage = torch.cat([tensors[n] for n in names])
        offset = 0
        for n in names:
            shared[n] = storage[offset:offset + tensors[n].numel()]
            offset += tensors[n].numel()
    for name, t in tensors.items():
        if name in shared:
            out[name] = shared[name]
        elif t.dim() == 2:
            out[name] = t.t().contiguous().t()
        else:
            out[name] = t
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=pathlib.Path)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--dtype", choices=["float16", "bfloat16"])
    parser.add_argument("--views", action="store_true")
    parser.add_argument("--legacy", action="store_true")
    args = parser.parse_args()

    tensors = read_safetensors(args.src / "model.safetensors")
    if args.dtype:
        dtype = getattr(torch, args.dtype)
        tensors = collections.OrderedDict((n, t.to(dtype) if t.is_floating_point() else t) for n, t in tensors.items())
    if args.views:
        tensors = as_views(tensors)
    # Module.state_dict() records each module's version under its prefix.
    tensors._metadata = collections.OrderedDict((name.rpartition(".")[0], {"version": 1}) for name in tensors)

    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    for f in args.src.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            shutil.copy(f, args.out / f.name)
    torch.save(tensors, args.out / "pytorch_model.bin", _use_new_zipfile_serialization=not args.legacy)


if __name__ == "__main__":
    main()
