"""Speed and memory of a dynamics-model preset alone: imagined chunks/s and a training step, from random inputs.

    .venv/bin/python benchmarks/wm_speed.py [--preset tiny] [--batches 1 8 32]
    python benchmarks/wm_speed.py --preset ltx_2b --device cuda --batches 1 4 16 --train-batch 4

Imagination: ``imagine`` (the preset's denoising steps, VAE encode of the history and decode of the
future frames) in chunks/s and env steps/s (x the action chunk). Training: ``training_loss`` + backward +
AdamW step on the denoiser (the VAE frozen, as ``world_models.train`` trains it). Weights are untrained:
speed does not depend on them. On CUDA each part also prints the peak memory it allocated. The world-model
env's end-to-end speed with a reward model is ``wm_throughput.py``.
"""

from __future__ import annotations

import argparse
import time

import torch
from policy_speed import peak_gib, timed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="tiny", help="tiny or ltx_2b")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32], help="envs imagined together")
    p.add_argument("--train-batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: torch sees no CUDA device here")

    from world_models.dynamics_config import make_config
    from world_models.dynamics_model import DynamicsModel

    cfg = make_config(args.preset)
    torch.manual_seed(0)
    start = time.perf_counter()
    model = DynamicsModel(cfg).to(args.device).eval()
    built = time.perf_counter() - start
    denoiser = sum(p.numel() for p in model.transformer.parameters())
    vae = sum(p.numel() for p in model.vae.parameters())
    print(
        f"dynamics preset {args.preset}: denoiser {denoiser / 1e6:.1f}M + VAE {vae / 1e6:.1f}M parameters, "
        f"{cfg.dtype}, {cfg.num_views} views of {cfg.image_size} px, history {cfg.history_frames} -> "
        f"{cfg.future_frames} frames per chunk of {cfg.action_chunk} actions, {cfg.num_inference_steps} "
        f"denoising steps, on {args.device}, built in {built:.1f} s; weights {peak_gib(args.device)} GiB"
    )
    gen = torch.Generator().manual_seed(0)

    def inputs(n: int, frames: int) -> torch.Tensor:
        shape = (n, frames, cfg.num_views, cfg.image_size, cfg.image_size, 3)
        return torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)

    def state(n: int) -> torch.Tensor | None:
        return torch.randn(n, cfg.state_dim, generator=gen) if cfg.state_dim > 0 else None

    prompts = list(cfg.prompts)
    print(
        "\n| envs | imagined chunks/s | env steps/s (x chunk) | ms per chunk | peak GiB |\n|---|---|---|---|---|"
    )
    for n in args.batches:
        hist, s, acts = (
            inputs(n, cfg.history_frames),
            state(n),
            torch.rand(n, cfg.action_chunk, cfg.action_dim),
        )
        prompt = [prompts[i % len(prompts)] for i in range(n)] if prompts else None
        sec = timed(
            lambda h=hist, s=s, a=acts, pr=prompt: model.imagine(h, s, a, pr), min_seconds=5.0, warmup=2
        )
        print(
            f"| {n} | {n / sec:.2f} | {n * cfg.action_chunk / sec:.1f} | {sec * 1e3:.0f} | {peak_gib(args.device)} |"
        )

    n = args.train_batch
    model.train()
    model.vae.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    batch = {
        "history_images": inputs(n, cfg.history_frames), "future_images": inputs(n, cfg.future_frames),
        "actions": torch.rand(n, cfg.action_chunk, cfg.action_dim), "state": state(n),
    }  # fmt: skip
    batch = {k: v.to(args.device) if v is not None else None for k, v in batch.items()}
    if prompts:
        batch["prompt"] = [prompts[i % len(prompts)] for i in range(n)]

    def train_step() -> None:
        loss = model.training_loss(**batch)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()

    sec = timed(train_step, min_seconds=5.0, warmup=2)
    print(f"\n| training (batch {n}) | samples/s | ms per step | peak GiB |\n|---|---|---|---|")
    print(f"| denoiser step (VAE frozen) | {n / sec:.2f} | {sec * 1e3:.0f} | {peak_gib(args.device)} |")


if __name__ == "__main__":
    main()
