#!/usr/bin/python3
"""Exports a Hugging Face BERT checkpoint folder to ONNX the way transformers' and Optimum's exporters do:
torch.onnx.export of a module in BertModel's layout and parameter names, opset 14 by default (LayerNorm and GELU
decomposed into primitive ops, linear weights stored transposed), inputs input_ids, attention_mask and
token_type_ids, output last_hidden_state, batch and sequence axes dynamic. The graph is one lenscheck
did not write, for `verify --candidate onnx:PATH` to find its tensors in.

The options write the same model the ways other code and exporters do, each a decomposition lenscheck must
recognise (issue #44): --norm functional (F.layer_norm), manual (mean, Sub, Pow, mean, Add ε, Sqrt, Div),
manual-mul (the square a Mul, the division a Mul by Reciprocal's 1/x), tf (TensorFlow-ONNX's
x·(γ·rsqrt) + (β − mean·γ·rsqrt)); --gelu formula (GELU written out: erf, or tanh where hidden_act is
gelu_new or gelu_pytorch_tanh, as the checkpoint says; F.gelu otherwise); --scale mul (scores times
1/√d, not divided by √d); --opset 11 to 17 (17: LayerNormalization one op); --no-fold (no constant
folding: the linear weights reached through Transpose); --fault (the last layer's output LayerNorm gain
times 1.001: a graph of another model).

Usage: torch-onnx-export.py [options] CHECKPOINT_DIR OUT.onnx   (Debian's python3-torch; run by
make-onnx-fixtures.cmake)
"""
import argparse
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
        # Integer tensors are buffers, not parameters (all-MiniLM-L6-v2 ships embeddings.position_ids as I64).
        if name == "__metadata__" or entry["dtype"] not in DTYPES:
            continue
        begin, end = entry["data_offsets"]
        array = numpy.frombuffer(body[begin:end], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
        # BertForMaskedLM checkpoints prefix the encoder's names with "bert."; BertModel's have none.
        tensors[name.removeprefix("bert.")] = torch.from_numpy(array.astype(numpy.float32))
    return tensors


FORMS = {"norm": "module", "gelu": "function", "scale": "div", "act": "gelu"}  # set by main from the options


def layer_norm(module, x):
    g, b, eps, form = module.weight, module.bias, module.eps, FORMS["norm"]
    if form == "module":
        return module(x)
    if form == "functional":
        return nn.functional.layer_norm(x, module.normalized_shape, g, b, eps)
    mean = x.mean(-1, keepdim=True)
    d = x - mean
    if form == "manual":
        return d / torch.sqrt(d.pow(2).mean(-1, keepdim=True) + eps) * g + b
    inverse = torch.reciprocal(torch.sqrt((d * d).mean(-1, keepdim=True) + eps))
    if form == "manual-mul":
        return d * inverse * g + b
    scale = inverse * g  # tf
    return x * scale + (b - mean * scale)


def gelu(x):
    tanh = FORMS["act"] in ("gelu_new", "gelu_pytorch_tanh")
    if FORMS["gelu"] == "function":
        return nn.functional.gelu(x, approximate="tanh" if tanh else "none")
    if tanh:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


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
        return layer_norm(self.LayerNorm, x + self.position_embeddings(positions))


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
        scores = torch.matmul(q, k.transpose(-1, -2))
        if FORMS["scale"] == "div":
            scores = scores / math.sqrt(self.head_dim)
        else:
            scores = scores * (1 / math.sqrt(self.head_dim))
        probs = nn.functional.softmax(scores + mask, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.heads * self.head_dim,))


class DenseAndNorm(nn.Module):  # BertSelfOutput and BertOutput: LayerNorm(dense(x) + residual)
    def __init__(self, c, inputs):
        super().__init__()
        self.dense = nn.Linear(inputs, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, residual):
        return layer_norm(self.LayerNorm, self.dense(x) + residual)


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
        return gelu(self.dense(x))


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


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    parser.add_argument("--norm", choices=["module", "functional", "manual", "manual-mul", "tf"], default="module")
    parser.add_argument("--gelu", choices=["function", "formula"], default="function")
    parser.add_argument("--scale", choices=["div", "mul"], default="div")
    parser.add_argument("--opset", type=int, choices=range(11, 18), default=14)  # torch 1.13 writes 7 to 17
    parser.add_argument("--no-fold", action="store_true")
    parser.add_argument("--fault", action="store_true")
    a = parser.parse_args()
    checkpoint = a.checkpoint
    with open(f"{checkpoint}/config.json") as f:
        config = json.load(f)
    FORMS.update(norm=a.norm, gelu=a.gelu, scale=a.scale, act=config.get("hidden_act", "gelu"))
    if FORMS["act"] not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        sys.exit(f"{checkpoint}/config.json: hidden_act {FORMS['act']!r}; this exporter writes GELU")
    model = BertModel(config).eval()
    weights = read_safetensors(f"{checkpoint}/model.safetensors")
    wanted = {k: v for k, v in weights.items() if k in model.state_dict() and k != "embeddings.position_ids"}
    missing = set(model.state_dict()) - set(wanted) - {"embeddings.position_ids"}
    if missing:
        sys.exit(f"{checkpoint}/model.safetensors lacks {sorted(missing)[0]} (and {len(missing) - 1} more)")
    model.load_state_dict(wanted, strict=False)
    if a.fault:
        with torch.no_grad():
            model.encoder.layer[-1].output.LayerNorm.weight.mul_(1.001)
    ids = torch.tensor([[101, 7592, 2088, 102]])
    with torch.no_grad():
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), a.out,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in
                                        ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]},
                          opset_version=a.opset, do_constant_folding=not a.no_fold)


if __name__ == "__main__":
    main()
