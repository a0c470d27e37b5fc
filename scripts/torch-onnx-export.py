#!/usr/bin/python3
"""Exports a Hugging Face BERT checkpoint folder to ONNX the way transformers' and Optimum's exporters do:
torch.onnx.export of a module in BertModel's layout and parameter names, opset 14 (LayerNorm and GELU
decomposed into primitive ops, linear weights stored transposed), inputs input_ids, attention_mask and
token_type_ids, output last_hidden_state, batch and sequence axes dynamic. The graph is one lenscheck
did not write, for `verify --candidate onnx:PATH` to find its tensors in.

Usage: torch-onnx-export.py CHECKPOINT_DIR OUT.onnx   (Debian's python3-torch; run by make-fixtures.cmake)
"""
import json
import math
import struct
import sys

import numpy
import torch
from torch import nn

DTYPES = {"F32": numpy.float32, "F64": numpy.float64, "F16": numpy.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = numpy.frombuffer(body[begin:end], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
        # BertForMaskedLM checkpoints prefix the encoder's names with "bert."; BertModel's have none.
        tensors[name.removeprefix("bert.")] = torch.from_numpy(array.astype(numpy.float32))
    return tensors


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)))

    def forward(self, input_ids, token_type_ids):
        positions = self.position_ids[:, : input_ids.size(1)]
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(x + self.position_embeddings(positions))


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["num_attention_heads"]
        self.head_dim = c["hidden_size"] // self.heads
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])

    def split_heads(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split_heads(self.query(x)), self.split_heads(self.key(x)), self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = nn.functional.softmax(scores + mask, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.heads * self.head_dim,))


class DenseAndNorm(nn.Module):  # BertSelfOutput and BertOutput: LayerNorm(dense(x) + residual)
    def __init__(self, c, inputs):
        super().__init__()
        self.dense = nn.Linear(inputs, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        setattr(self, "self", SelfAttention(c))
        self.output = DenseAndNorm(c, c["hidden_size"])

    def forward(self, x, mask):
        return self.output(getattr(self, "self")(x, mask), x)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return nn.functional.gelu(self.dense(x))  # erf GELU, BERT's "gelu"


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = DenseAndNorm(c, c["intermediate_size"])

    def forward(self, x, mask):
        a = self.attention(x, mask)
        return self.output(self.intermediate(a), a)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)

    def forward(self, input_ids, attention_mask, token_type_ids):
        # transformers' extended mask: 0 where attended, the dtype's lowest value where masked.
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.encoder.layer:
            x = layer(x, mask)
        return x


def main(checkpoint, out):
    with open(f"{checkpoint}/config.json") as f:
        config = json.load(f)
    if config.get("hidden_act", "gelu") != "gelu":
        sys.exit(f"{checkpoint}/config.json: hidden_act {config['hidden_act']!r}; this exporter writes erf GELU")
    model = BertModel(config).eval()
    weights = read_safetensors(f"{checkpoint}/model.safetensors")
    wanted = {k: v for k, v in weights.items() if k in model.state_dict() and k != "embeddings.position_ids"}
    missing = set(model.state_dict()) - set(wanted) - {"embeddings.position_ids"}
    if missing:
        sys.exit(f"{checkpoint}/model.safetensors lacks {sorted(missing)[0]} (and {len(missing) - 1} more)")
    model.load_state_dict(wanted, strict=False)
    ids = torch.tensor([[101, 7592, 2088, 102]])
    with torch.no_grad():
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), out,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in
                                        ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]},
                          opset_version=14, do_constant_folding=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
