"""lenscheck's adapter for Hugging Face transformers' BertModel (PyTorch, CPU).

Started by `lenscheck verify --candidate transformers[:eager|:sdpa]` as
`PYTHON_ENV/bin/python3 -I hf-adapter.py REQUEST.json`. The request names the checkpoint folder, the
attention implementation (eager, sdpa), the torch dtype, the thread count, an optional fault and every
sentence's token ids. The adapter answers on stdout, one line per step, as ort-adapter.py does, so
that lenscheck can bound the time of each:
  ready transformers <version> torch <version> <load ms>
  done <sentence index> <forward ms>
and writes sentence i's trace to <out_dir>/<i>.safetensors: every tensor its forward hooks and
output_attentions reach, under the trace's names and layouts (model/trace.h), the batch axis dropped, in
the dtype the model computed in (F32, F16, BF16), with the ids as I64 "input_ids". What a path hides
(under SDPA the scores and probabilities) is lenscheck's to list: the adapter writes what it has. Any error goes to stderr and exits 1; a torch or transformers that cannot run exits 3 with what
is missing on stderr.
"""
import json
import os
import sys
import time

DTYPE_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def missing(what):
    print(what, file=sys.stderr)
    sys.exit(3)


def load_model(request, torch, transformers):
    dtype = getattr(torch, DTYPE_NAMES[request["dtype"]])
    model, info = transformers.BertModel.from_pretrained(
        request["model"], attn_implementation=request["attention"], torch_dtype=dtype, output_loading_info=True,
        local_files_only=True)
    # A parameter the folder lacks is initialised at random, which transformers only warns of: that model is
    # not the checkpoint's. The pooler is the one part lenscheck's trace never reaches.
    lacking = [k for k in info["missing_keys"] if not k.startswith("pooler.")]
    if lacking or info["mismatched_keys"]:
        raise ValueError(f"{request['model']}: transformers did not load {(lacking + info['mismatched_keys'])[0]} "
                         f"from the checkpoint ({len(lacking) + len(info['mismatched_keys'])} parameters)")
    if model.config._attn_implementation != request["attention"]:
        raise ValueError(f"transformers chose attention {model.config._attn_implementation!r}, "
                         f"not the {request['attention']!r} asked for")
    return model.eval()


def add_fault(model, fault):
    """One op's output times 1 + delta, as a forward hook: an op fault no weight shows. The op is a linear layer,
    or a layer's self-attention, whose first output is the context (under SDPA one kernel from Q, K and V)."""
    module = dict(model.named_modules()).get(fault["module"])
    if module is None or not (type(module).__name__ == "Linear" or module in
                              [layer.attention.self for layer in model.encoder.layer]):
        raise ValueError(f"--fault-op: {fault['module']!r} is no linear layer or attention.self of BertModel "
                         "(e.g. encoder.layer.1.attention.self.value)")
    times = 1 + fault["delta"]
    module.register_forward_hook(
        lambda _module, _inputs, out: (out[0] * times, *out[1:]) if isinstance(out, tuple) else out * times)


class Recorder:
    """Forward hooks on BertModel's modules, each keeping its tensor under the trace's name."""

    def __init__(self, model, torch):
        self.tensors = {}
        heads = model.config.num_attention_heads

        def keep(name, split_heads=False):
            def hook(_module, _inputs, out):
                x = (out[0] if isinstance(out, tuple) else out)[0].detach()  # the batch of 1 dropped
                if split_heads:  # [T, D] -> [H, T, Dh], the heads' layout of the trace
                    x = x.reshape(x.shape[0], heads, -1).transpose(0, 1)
                self.tensors[name] = x.contiguous()
            return hook

        def keep_input(name):
            def hook(_module, inputs):
                self.tensors[name] = inputs[0][0].detach().contiguous()
            return hook

        model.embeddings.register_forward_hook(keep("embeddings.output"))
        for l, layer in enumerate(model.encoder.layer):
            p = f"layer.{l}."
            for part in ("query", "key", "value"):
                getattr(layer.attention.self, part).register_forward_hook(keep(p + "attention." + part, True))
            layer.attention.self.register_forward_hook(keep(p + "attention.context"))
            # The LayerNorm's input is the output projection plus the residual: the trace's pre_norm.
            layer.attention.output.LayerNorm.register_forward_pre_hook(keep_input(p + "attention.pre_norm"))
            layer.attention.output.register_forward_hook(keep(p + "attention.output"))
            layer.intermediate.register_forward_hook(keep(p + "intermediate"))
            layer.output.register_forward_hook(keep(p + "output"))
        if model.config._attn_implementation == "eager":
            self.keep_scores(model, torch)

    def keep_scores(self, model, torch):
        """Eager attention's scores are no module's output: the input of the softmax BertSelfAttention.forward
        calls (the scaled products plus the mask, all ones here, which adds zeros). torch's softmax is wrapped
        in this process, keeping its input while a layer's self-attention runs."""
        softmax, running = torch.nn.functional.softmax, []

        def keep_input(x, *args, **kwargs):
            if running:
                self.tensors[f"layer.{running[0]}.attention.scores"] = x[0].detach().contiguous()
            return softmax(x, *args, **kwargs)

        torch.nn.functional.softmax = keep_input
        for l, layer in enumerate(model.encoder.layer):
            layer.attention.self.register_forward_pre_hook(lambda _m, _i, l=l: running.append(l))
            layer.attention.self.register_forward_hook(lambda _m, _i, _o: running.clear())


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        request = json.load(f)
    started = time.perf_counter()
    try:
        import torch
    except ImportError as e:
        missing(f"torch cannot be imported ({e})")
    try:
        import transformers
    except ImportError as e:
        missing(f"transformers cannot be imported ({e})")
    from safetensors.torch import save_file
    torch.set_num_threads(request["threads"])
    transformers.logging.set_verbosity_error()  # its warnings would bury the adapter's own words on stderr
    try:
        model = load_model(request, torch, transformers)
    except ImportError as e:  # transformers' word for an attention path this torch lacks
        missing(f"transformers {transformers.__version__} on torch {torch.__version__}: {e}")
    if request.get("fault"):
        add_fault(model, request["fault"])
    recorder = Recorder(model, torch)
    ms = lambda since: (time.perf_counter() - since) * 1e3
    print(f"ready transformers {transformers.__version__} torch {torch.__version__} {ms(started):.3f}", flush=True)

    eager = request["attention"] == "eager"
    for i, ids in enumerate(request["sentences"]):
        row = torch.tensor([ids], dtype=torch.int64)
        recorder.tensors = {}
        run = time.perf_counter()
        try:
            with torch.no_grad():
                out = model(input_ids=row, attention_mask=torch.ones_like(row), token_type_ids=torch.zeros_like(row),
                            output_attentions=eager)
        except RuntimeError as e:  # torch's word for a kernel its CPU build lacks ("not implemented for 'Half'")
            if "not implemented for" in str(e):
                missing(f"torch {torch.__version__}'s CPU kernels cannot run BertModel in {request['dtype']}: {e}")
            raise
        run_ms = ms(run)
        tensors = {"input_ids": row[0], **recorder.tensors}
        if eager:  # the probabilities only eager attention computes, as output_attentions returns them
            for l, probs in enumerate(out.attentions):
                tensors[f"layer.{l}.attention.probs"] = probs[0].contiguous()
        save_file(tensors, os.path.join(request["out_dir"], f"{i}.safetensors"),
                  {"format": "lenscheck-trace-1", "producer": request["producer"], "precision": request["precision"]})
        print(f"done {i} {run_ms:.3f}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the contract: any error on stderr, exit 1
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
