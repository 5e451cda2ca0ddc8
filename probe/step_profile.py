#!/usr/bin/env python3
"""Where one PyTorch training step of probe/torch_step.py's models spends its time: the GPU time
of its kernels by phase (forward+loss, backward, optimizer) from torch.profiler, against the step's
wall time, so idle GPU time (host-bound phases) shows. GPU machine only, never CI.

    python probe/step_profile.py [-o profile.txt]
"""
import argparse
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import torch_step  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--output", default="step-profile.txt")
    args = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    lines = []
    for name, layers, hidden, heads, seq, batch in [("gpt-125m", 12, 768, 12, 2048, 4), ("gpt-1.3b", 24, 2048, 16, 2048, 1),
                                                     ("gpt-1.3b", 24, 2048, 16, 2048, 4)]:
        model = torch_step.build_model(torch, layers, hidden, heads, torch_step.VOCAB).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        tokens = torch.randint(0, torch_step.VOCAB, (batch, seq + 1), device="cuda")
        inputs, targets = tokens[:, :-1], tokens[:, 1:]

        def step():
            with record_function("phase:forward"):
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    logits = model(inputs)
                    loss = torch.nn.functional.cross_entropy(logits.float().view(-1, torch_step.VOCAB), targets.reshape(-1))
            with record_function("phase:backward"):
                loss.backward()
            with record_function("phase:optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)

        for _ in range(5):
            step()
        torch.cuda.synchronize()
        # wall time per phase with a sync after each (host+GPU), and per step unsynchronised
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ev[0].record()
        for _ in range(10):
            step()
        ev[1].record()
        torch.cuda.synchronize()
        wall = ev[0].elapsed_time(ev[1]) / 10 / 1000
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        kernels = {}
        total_gpu = 0.0
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                total_gpu += e.device_time
                kernels[e.name] = kernels.get(e.name, 0.0) + e.device_time
        top = sorted(kernels.items(), key=lambda kv: -kv[1])[:25]
        lines.append(f"== {name} mb{batch}: wall {wall * 1e3:.2f} ms/step, GPU kernel time {total_gpu / 3 / 1e3:.2f} ms/step")
        for e in prof.key_averages():
            if e.key.startswith("phase:"):
                lines.append(f"   {e.key}: host {e.cpu_time_total / 3 / 1e3:.2f} ms/step")
        for k, v in top:
            lines.append(f"   {v / 3 / 1e3:8.3f} ms  {k[:110]}")
        del model, opt
        torch.cuda.empty_cache()
    text = "\n".join(lines)
    print(text)
    open(args.output, "w").write(text + "\n")


if __name__ == "__main__":
    main()
