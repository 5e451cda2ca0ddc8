#!/usr/bin/env python3
"""Time real PyTorch training steps of GPT-style models on one GPU, for comparison with stacksim.

Each configuration builds a decoder-only transformer (pre-norm, causal flash attention through
torch.nn.functional.scaled_dot_product_attention, GELU MLP with 4x hidden, tied embeddings), trains
it with AdamW under bf16 autocast on random tokens, runs warm-up steps and then reports the median
(and p10/p90) of N timed steps. A step is forward + backward + optimizer step + zero_grad, timed
with CUDA events and a synchronisation at its end. Output: a YAML file with the machine, the model
shapes and the measured step times, in the units stacksim uses (seconds, tokens/s, FLOPs).

Needs a CUDA GPU and PyTorch >= 2.0; it is meant for a GPU machine, never for CI.

    python probe/torch_step.py -o torch-step.yaml [--quick] [--steps 20] [--warmup 5]
"""

import argparse
import datetime
import math
import platform
import statistics
import sys

# (name, layers, hidden, heads, seq_len, micro-batch sizes); sized to fit one 40-80 GB GPU.
CONFIGS = [
    ("gpt-125m", 12, 768, 12, 2048, [4, 8, 16]),
    ("gpt-350m", 24, 1024, 16, 2048, [4, 8]),
    ("gpt-760m", 24, 1536, 16, 2048, [2, 4, 8]),
    ("gpt-1.3b", 24, 2048, 16, 2048, [1, 2, 4]),
]
VOCAB = 50304  # GPT-2 vocabulary padded to a multiple of 128


def build_model(torch, layers, hidden, heads, vocab):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc1 = nn.Linear(hidden, 4 * hidden)
            self.fc2 = nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln = nn.LayerNorm(hidden)

        def forward(self, tokens):
            x = self.embed(tokens)
            for blk in self.blocks:
                x = blk(x)
            return self.ln(x) @ self.embed.weight.t()  # tied output projection

    return GPT()


def model_flops_per_step(layers, hidden, seq, batch, vocab):
    """Training FLOPs per step without recomputation: 3x forward (backward = 2x forward).
    Forward per token and layer: 24*h^2 for the QKV, output and 4h-MLP matmuls (12*h^2 weights,
    2 FLOPs each) plus 2*s*h for causal attention (QK^T and AV, 4*s*h, halved by the mask);
    plus 2*h*V for the LM head."""
    per_token = layers * (24 * hidden * hidden + 2 * seq * hidden) + 2 * hidden * vocab
    return 3 * per_token * seq * batch


def time_config(torch, name, layers, hidden, heads, seq, batch, warmup, steps):
    device = torch.device("cuda")
    model = build_model(torch, layers, hidden, heads, VOCAB).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    params = sum(p.numel() for p in model.parameters())
    tokens = torch.randint(0, VOCAB, (batch, seq + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(inputs)
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, VOCAB), targets.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    times.sort()
    median = statistics.median(times)
    flops = model_flops_per_step(layers, hidden, seq, batch, VOCAB)
    record = {
        "model": name, "layers": layers, "hidden": hidden, "heads": heads, "ffn_hidden": 4 * hidden,
        "vocab": VOCAB, "seq_len": seq, "micro_batch": batch, "parameters": params,
        "step_time_s": median, "step_time_p10_s": times[max(0, math.ceil(0.1 * len(times)) - 1)],
        "step_time_p90_s": times[max(0, math.ceil(0.9 * len(times)) - 1)], "steps": steps,
        "tokens_per_s": batch * seq / median, "model_flops_per_step": flops,
        "achieved_flops_per_s": flops / median,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
    }
    del model, opt, tokens
    torch.cuda.empty_cache()
    return record


def yaml_value(v):
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return "%.9g" % v
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", default="torch-step.yaml")
    ap.add_argument("--quick", action="store_true", help="two small configurations, fewer steps")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--config", action="append", default=[], metavar="NAME,LAYERS,HIDDEN,HEADS,SEQ,MB[,MB...]",
                    help="a configuration of your own instead of the built-in ones (repeatable)")
    args = ap.parse_args()
    own = []
    for text in args.config:
        parts = text.split(",")
        try:
            if len(parts) < 6:
                raise ValueError
            numbers = [int(x) for x in parts[1:]]
            if min(numbers) <= 0:
                raise ValueError
            own.append((parts[0], *numbers[:4], numbers[4:]))
        except ValueError:
            sys.exit(f"torch_step.py: --config {text!r}: want NAME,LAYERS,HIDDEN,HEADS,SEQ,MB[,MB...] "
                     "with positive integers, e.g. gpt-tiny,12,256,4,512,1,4")

    try:
        import torch  # imported here so --help works without PyTorch
    except ImportError:
        sys.exit("torch_step.py: PyTorch is not installed; run it on a GPU machine with PyTorch >= 2.0")

    if not torch.cuda.is_available():
        sys.exit("torch_step.py: no CUDA GPU visible; run it on a GPU machine")
    torch.backends.cuda.matmul.allow_tf32 = True
    configs = own or (CONFIGS[:2] if args.quick else CONFIGS)
    steps = min(args.steps, 10) if args.quick else args.steps

    records = []
    for name, layers, hidden, heads, seq, batches in configs:
        for batch in batches[:1] if args.quick else batches:
            try:
                rec = time_config(torch, name, layers, hidden, heads, seq, batch, args.warmup, steps)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                print(f"  {name} batch {batch}: out of memory, skipped", file=sys.stderr)
                continue
            records.append(rec)
            print(f"  {name} batch {batch}: {rec['step_time_s'] * 1e3:.1f} ms/step, "
                  f"{rec['achieved_flops_per_s'] / 1e12:.0f} TFLOP/s", file=sys.stderr)

    props = torch.cuda.get_device_properties(0)
    with open(args.output, "w") as f:
        f.write("# PyTorch training-step times written by probe/torch_step.py (docs/probe.md)\n")
        f.write("format: stacksim-torch-step/1\n")
        f.write("machine: {gpu_name: %s, sm_count: %d, memory_bytes: %d, torch: %s, cuda: %s, host: %s, date: %s}\n" % (
            yaml_value(props.name), props.multi_processor_count, props.total_memory, yaml_value(torch.__version__),
            yaml_value(str(torch.version.cuda)), yaml_value(platform.node()),
            yaml_value(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))))
        f.write("settings: {precision: bf16-autocast, optimizer: AdamW-fused, attention: sdpa-causal, "
                "warmup_steps: %d, timed_steps: %d, statistic: median}\n" % (args.warmup, steps))
        f.write("steps:\n")
        for r in records:
            f.write("  - {" + ", ".join(f"{k}: {yaml_value(v)}" for k, v in r.items()) + "}\n")
    print(f"torch_step.py: wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
