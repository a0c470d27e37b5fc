#!/usr/bin/python3
"""What torch's CPU kernels compute in fp16 and bf16, measured: for each op BertModel runs, on random inputs
of all-MiniLM-L6-v2's shapes already in the format, the share of outputs equal to the exact result (fp64)
rounded once to the format (the scheme lenscheck declares for them, model/arithmetic.h), and the largest
error in units of the format's spacing at the exact value; or the error torch gives where it has no kernel.
Prints a Markdown table (scripts/transformers-report.sh).

Usage: torch-cpu-kernels.py   (a python3 that imports torch)
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
T, D, I, H = 64, 384, 1536, 12
FRACTION_BITS = {torch.float16: 10, torch.bfloat16: 7}


def inputs(dtype):
    r = lambda *shape, scale=1.0: (torch.randn(*shape) * scale).to(dtype)
    x, w, b = r(T, D), r(I, D, scale=0.05), r(I, scale=0.1)
    q, k = r(H, T, D // H), r(H, T, D // H)
    g, beta, s = r(D), r(D), r(H, T, T, scale=3.0)
    return {
        "linear (x·Wᵀ + b)": lambda t: F.linear(t(x), t(w), t(b)),
        "batched matmul (q·kᵀ)": lambda t: torch.matmul(t(q), t(k).transpose(-1, -2)),
        "softmax": lambda t: torch.softmax(t(s), -1),
        "layer_norm": lambda t: F.layer_norm(t(x), (D,), t(g), t(beta), 1e-12),
        "gelu (erf)": lambda t: F.gelu(t(x)),
    }


def main():
    print("| op | " + " | ".join(f"{n} outputs exact-then-rounded (worst error, spacings)" for n in ("fp16", "bf16")) + " |")
    print("|---|---|---|")
    ops = {dtype: inputs(dtype) for dtype in FRACTION_BITS}
    for name in ops[torch.float16]:
        cells = []
        for dtype, bits in FRACTION_BITS.items():
            op = ops[dtype][name]
            try:
                got = op(lambda v: v).double()
            except RuntimeError as e:
                cells.append(f"no CPU kernel: {str(e).splitlines()[0]}")
                continue
            exact = op(lambda v: v.double())
            once = exact.to(dtype).double()
            spacing = torch.pow(2.0, torch.floor(torch.log2(exact.abs().clamp_min(1e-30))) - bits)
            worst = ((got - exact).abs() / spacing).max().item()
            cells.append(f"{(got == once).double().mean().item():.2%} ({worst:.3g})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print(f"torch {torch.__version__}, one thread.")


if __name__ == "__main__":
    main()
