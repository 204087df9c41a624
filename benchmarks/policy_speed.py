"""Speed of the tiny pi0 policy on this machine: rollout inference and training throughput.

    .venv/bin/python benchmarks/policy_speed.py [--preset tiny] [--views 2] [--threads N]

Inference: ``predict`` (flow-SDE sampling with the value head, as a PPO rollout runs it) in chunks/s
at batch 1, 8 and 64. Training: samples/s of a PPO update (``evaluate`` + backward + AdamW step) and
of an imitation step (flow-matching loss + backward + step) at batch 32. Inputs are 64x64 images of
``--views`` cameras, a 39-dim state and Meta-World prompts.
"""

from __future__ import annotations

import argparse
import time

import torch


def _obs(n: int, views: int, gen: torch.Generator) -> dict:
    from policy_and_value.envs.metaworld_tasks import PROMPTS

    prompts = list(PROMPTS.values())
    return {
        "images": torch.randint(0, 256, (n, views, 64, 64, 3), dtype=torch.uint8, generator=gen),
        "state": torch.randn(n, 39, generator=gen),
        "prompt": [prompts[i % len(prompts)] for i in range(n)],
    }


def _timed(fn, min_seconds: float = 3.0, warmup: int = 5) -> float:
    """Seconds per call, averaged over as many calls as fit in ``min_seconds`` (after warm-up)."""
    for _ in range(warmup):
        fn()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        fn()
        calls += 1
    return (time.perf_counter() - start) / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="tiny")
    p.add_argument("--views", type=int, default=2)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from policy_and_value.config.schema import ModelConfig
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.envs.metaworld_tasks import MT10_TASKS
    from policy_and_value.models.registry import make_policy

    spec = EnvSpec(
        action_dim=4, num_action_chunks=4, state_dim=39, image_shape=(args.views, 64, 64), tasks=MT10_TASKS
    )
    model_cfg = ModelConfig(
        policy_type="pi0", add_value_head=True, pi0={"preset": args.preset, "noise_method": "flow_sde"}
    )
    torch.manual_seed(0)
    policy = make_policy(model_cfg, spec, logprob_type="chunk_level")
    cfg = policy.cfg
    params = sum(p.numel() for p in policy.parameters())
    print(
        f"pi0 preset {args.preset}: {params / 1e6:.2f}M parameters, {args.views} views x {cfg.tokens_per_view} tokens, "
        f"chunk {cfg.chunk_size} (executes {cfg.num_action_chunks}), {cfg.num_steps} denoising steps, "
        f"{torch.get_num_threads()} threads"
    )
    gen = torch.Generator().manual_seed(0)
    print("\n| batch | rollout chunks/s | env steps/s (x chunk) | ms per call |\n|---|---|---|---|")
    for n in (1, 8, 64):
        obs = _obs(n, args.views, gen)
        sec = _timed(lambda obs=obs: policy.predict(obs, mode="train"))
        print(f"| {n} | {n / sec:.1f} | {n * cfg.num_action_chunks / sec:.1f} | {sec * 1e3:.1f} |")

    batch = 32
    obs = _obs(batch, args.views, gen)
    out = policy.predict(obs, mode="train")
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-4)

    def ppo_step() -> None:
        logprob, value, _ = policy.evaluate({"obs": obs, **out.replay})
        loss = -(logprob * torch.randn_like(logprob)).mean() + value.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    actions = torch.rand(batch, cfg.chunk_size, 4) * 2 - 1

    def sft_step() -> None:
        loss = policy.flow_matching_loss({"obs": obs, "actions": actions})
        opt.zero_grad()
        loss.backward()
        opt.step()

    print("\n| training (batch 32) | samples/s | ms per step |\n|---|---|---|")
    for name, fn in (("PPO update", ppo_step), ("imitation (flow matching)", sft_step)):
        sec = _timed(fn)
        print(f"| {name} | {batch / sec:.1f} | {sec * 1e3:.1f} |")


if __name__ == "__main__":
    main()
