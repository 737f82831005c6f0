#!/usr/bin/env python3
"""torch's reference for oxide's `attention_fwd` and `attention_bwd` rows (issue 22).

Times torch.nn.functional.scaled_dot_product_attention, forward and backward, bf16,
layout [batch, heads, seq, head_dim], scale 1/sqrt(head_dim), with each
backend forced through torch.nn.attention.sdpa_kernel (FLASH_ATTENTION,
CUDNN_ATTENTION, EFFICIENT_ATTENTION; a backend that raises for a shape is
skipped and said so), for the shapes of the benchmark: heads*head_dim = 2048,
batch*seq = 16384, head_dim 128 and 64, causal and not.

Prints one line per (shape, backend) with ms and TFLOP/s (4*b*h*s^2*d per
pass, half of it causal, as oxide counts), and with --out FILE writes
`hd causal seq batch heads backend ms` lines that oxide-bench's
attention_fwd row reads through $OXIDE_TORCH_ATTENTION.

The backward (--backward-head-dims, default 128; none with an empty list)
is timed alone: one forward with requires_grad inputs under the backend,
then torch.autograd.grad(out, (q, k, v), dO, retain_graph=True) between the
events (autograd.grad rather than .backward, which would add the
accumulation of .grad into the time). Its FLOPs are 2.5x the forward's (five
matrix products to two); its lines in FILE are the forward's with `bwd` in
front, read by oxide-bench's attention_bwd row.

    /opt/torch/.venv/bin/python benches/torch/attention.py [--seq 2048 4096 8192] [--out FILE]
"""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = [
    ("flash", SDPBackend.FLASH_ATTENTION),
    ("cudnn", SDPBackend.CUDNN_ATTENTION),
    ("efficient", SDPBackend.EFFICIENT_ATTENTION),
]


def time_ms(fn, warmup=3, reps=20):
    """Median milliseconds of `reps` runs between CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def time_backward(q, k, v, causal, hd, seq, batch, heads, flops, gen):
    """Times each backend's backward for one shape; returns the result lines."""
    lines = []
    d_o = torch.rand(q.shape, device="cuda", generator=gen, dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
    inputs = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    reference = None
    for name, backend in BACKENDS:
        try:
            with sdpa_kernel([backend]):
                out = F.scaled_dot_product_attention(*inputs, is_causal=causal)
            run = lambda: torch.autograd.grad(out, inputs, d_o, retain_graph=True)
            grads = run()
            ms = time_ms(run)
        except Exception as e:  # a backend that does not take the shape
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print(f"attention_bwd torch hd={hd} causal={int(causal)} seq={seq} {name}: skipped ({first[:120]})")
            continue
        if reference is None:
            reference = [g.float() for g in grads]
        else:
            diff = max((g.float() - r).abs().max().item() for g, r in zip(grads, reference))
            if diff > 5e-2:
                print(f"  warning: {name} backward differs from the first backend by {diff:.3g}")
        print(
            f"attention_bwd torch hd={hd} causal={int(causal)} seq={seq} batch={batch} heads={heads} "
            f"{name}: {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s"
        )
        lines.append(f"bwd {hd} {int(causal)} {seq} {batch} {heads} {name} {ms:.6f}")
        del out, grads
    del inputs, d_o, reference
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq", type=int, nargs="+", default=[2048, 4096, 8192])
    parser.add_argument("--head-dims", type=int, nargs="+", default=[128, 64])
    parser.add_argument("--backward-head-dims", type=int, nargs="*", default=[128])
    parser.add_argument("--out", help="results file for oxide-bench ($OXIDE_TORCH_ATTENTION)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device visible to torch", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    lines = ["# hd causal seq batch heads backend ms"]
    for hd in args.head_dims:
        for causal in (False, True):
            for seq in args.seq:
                batch, heads = 16384 // seq, 2048 // hd
                gen = torch.Generator(device="cuda").manual_seed(seq * 1000 + hd)
                q, k, v = (
                    torch.rand(batch, heads, seq, hd, device="cuda", generator=gen, dtype=torch.float32)
                    .mul_(2)
                    .sub_(1)
                    .to(torch.bfloat16)
                    for _ in range(3)
                )
                flops = 4.0 * batch * heads * seq * seq * hd / (2 if causal else 1)
                reference = None
                for name, backend in BACKENDS:
                    try:
                        with sdpa_kernel([backend]):
                            run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            out = run()
                            ms = time_ms(run)
                    except Exception as e:  # a backend that does not take the shape
                        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                        print(f"attention_fwd torch hd={hd} causal={int(causal)} seq={seq} {name}: skipped ({first[:120]})")
                        continue
                    if reference is None:
                        reference = out.float()
                    else:
                        diff = (out.float() - reference).abs().max().item()
                        if diff > 3e-2:
                            print(f"  warning: {name} differs from the first backend by {diff:.3g}")
                    print(
                        f"attention_fwd torch hd={hd} causal={int(causal)} seq={seq} batch={batch} heads={heads} "
                        f"{name}: {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s"
                    )
                    lines.append(f"{hd} {int(causal)} {seq} {batch} {heads} {name} {ms:.6f}")
                if hd in args.backward_head_dims:
                    lines += time_backward(q, k, v, causal, hd, seq, batch, heads, flops * 2.5, gen)
                del q, k, v, reference
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
