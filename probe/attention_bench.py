#!/usr/bin/env python3
"""Time fused attention kernels and the host cost of eager PyTorch ops on one GPU, for calibration.

Attention: torch.nn.functional.scaled_dot_product_attention, bf16, causal and not, head dim 128 (and
64), at 16k tokens per batch over sequence lengths 512..32k (the FlashAttention papers' sweep), for
each SDPA backend that runs here (flash = FlashAttention-2, cudnn = cuDNN's fused attention).
Forward and forward+backward are timed separately with CUDA events over >= 20 calls after warm-up;
the backward is the difference. FLOPs: forward 4*b*h*s*s*d (halved when causal), backward 2.5x.

Host cost: a chain of N tiny eager ops (x.add_(1.0) on a 1k-element tensor), with and without
autograd recording (y = y * 1.0001 with requires_grad), timed on the host: microseconds per op that
the framework's dispatch costs before the kernel reaches the GPU.

Needs a CUDA GPU and PyTorch >= 2.3; it is meant for a GPU machine, never for CI.

    python probe/attention_bench.py -o attention.yaml
"""

import argparse
import datetime
import statistics
import sys
import time


def time_cuda(torch, fn, calls):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / 1000 / calls)
    return statistics.median(samples)


def attention_rows(torch, backends):
    F = torch.nn.functional
    from torch.nn.attention import sdpa_kernel

    rows = []
    for name, backend in backends:
        for head_dim in (128, 64):
            heads = 2048 // head_dim
            for seq in (512, 1024, 2048, 4096, 8192, 16384, 32768):
                batch = max(1, 16384 // seq)
                for causal in (True, False):
                    q, k, v = (torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16,
                                           requires_grad=True) for _ in range(3))
                    grad = torch.randn_like(q)
                    try:
                        with sdpa_kernel([backend]):
                            fwd = time_cuda(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), 20)

                            def fwd_bwd():
                                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                out.backward(grad)

                            both = time_cuda(torch, fwd_bwd, 20)
                    except RuntimeError as e:  # backend refuses the shape
                        print(f"  {name} d{head_dim} s{seq}: {str(e).splitlines()[0]}", file=sys.stderr)
                        continue
                    flops = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)
                    rows.append(dict(backend=name, batch=batch, heads=heads, seq=seq, head_dim=head_dim, causal=causal,
                                     forward_s=fwd, backward_s=both - fwd, forward_flops=flops,
                                     backward_flops=2.5 * flops))
                    print(f"  {name} d{head_dim} s{seq} causal={causal}: fwd {flops / fwd / 1e12:.0f} "
                          f"bwd {2.5 * flops / (both - fwd) / 1e12:.0f} TFLOP/s", file=sys.stderr)
                    del q, k, v, grad
    return rows


def host_rows(torch):
    rows = []
    x = torch.zeros(1024, device="cuda")
    w = torch.ones(1024, device="cuda", requires_grad=True)
    for autograd in (False, True):
        for n in (2000, 10000):
            torch.cuda.synchronize()
            samples = []
            for _ in range(5):
                t0 = time.perf_counter()
                if autograd:
                    y = w
                    for _ in range(n):
                        y = y * 1.0001
                else:
                    with torch.no_grad():
                        for _ in range(n):
                            x.add_(1.0)
                samples.append((time.perf_counter() - t0) / n)
                torch.cuda.synchronize()
            rows.append(dict(op="mul (autograd recorded)" if autograd else "add_ (no grad)", ops=n,
                             host_s_per_op=statistics.median(samples)))
            print(f"  host {rows[-1]['op']} x{n}: {rows[-1]['host_s_per_op'] * 1e6:.2f} us/op", file=sys.stderr)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="attention.yaml")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("attention_bench.py: PyTorch is not installed; run it on a GPU machine")
    if not torch.cuda.is_available():
        sys.exit("attention_bench.py: no CUDA GPU visible; run it on a GPU machine")
    from torch.nn.attention import SDPBackend

    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    props = torch.cuda.get_device_properties(0)
    att = attention_rows(torch, backends)
    host = host_rows(torch)
    with open(args.output, "w") as f:
        f.write("# Fused attention and eager-op host times written by probe/attention_bench.py (docs/probe.md)\n")
        f.write("format: stacksim-attention/1\n")
        f.write(f'machine: {{gpu_name: "{props.name}", sm_count: {props.multi_processor_count}, '
                f'torch: "{torch.__version__}", cuda: "{torch.version.cuda}", '
                f'cudnn: {torch.backends.cudnn.version()}, '
                f'date: "{datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}"}}\n')
        f.write("attention:\n")
        for r in att:
            f.write("  - {" + ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in r.items()) + "}\n")
        f.write("host_ops:\n")
        for r in host:
            f.write(f'  - {{op: "{r["op"]}", ops: {r["ops"]}, host_s_per_op: {r["host_s_per_op"]:.4g}}}\n')
    print(f"attention_bench.py: wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
