"""A trace's token ids (its I64 tensor input_ids). As a script, prints them as a JSON list:
bench/trace_ids.py TRACE.safetensors"""
import json
import struct
import sys


def trace_ids(file):
    with open(file, "rb") as f:
        data = f.read()
    (header_size,) = struct.unpack_from("<Q", data)
    begin, end = json.loads(data[8:8 + header_size])["input_ids"]["data_offsets"]
    return list(struct.unpack_from(f"<{(end - begin) // 8}q", data, 8 + header_size + begin))


if __name__ == "__main__":
    print(json.dumps(trace_ids(sys.argv[1])))
