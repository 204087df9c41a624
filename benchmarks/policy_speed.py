"""Speed of a pi0 policy on this machine: rollout inference and training throughput (and GPU memory).

    .venv/bin/python benchmarks/policy_speed.py [--preset tiny] [--views 2] [--threads N]
    python benchmarks/policy_speed.py --preset pi0 --device cuda --dtype bfloat16 --gradient-checkpointing \
        --image-size 224 --batches 1 8 32 --train-batch 16        # the published size, on an accelerator

Inference: ``predict`` (flow-SDE sampling with the value head, as a PPO rollout runs it) in chunks/s
at each of ``--batches``. Training: samples/s of a PPO update (``evaluate`` + backward + AdamW step) and
of an imitation step (flow-matching loss + backward + step) at ``--train-batch``. Inputs are images of
``--views`` cameras at ``--image-size``, a 39-dim state and Meta-World prompts. On CUDA each part also
prints the peak memory it allocated.
"""

from __future__ import annotations

import argparse
import time

import torch


def _obs(n: int, views: int, size: int, gen: torch.Generator) -> dict:
    from policy_and_value.envs.metaworld_tasks import PROMPTS

    prompts = list(PROMPTS.values())
    return {
        "images": torch.randint(0, 256, (n, views, size, size, 3), dtype=torch.uint8, generator=gen),
        "state": torch.randn(n, 39, generator=gen),
        "prompt": [prompts[i % len(prompts)] for i in range(n)],
    }


def timed(fn, min_seconds: float = 3.0, warmup: int = 5) -> float:
    """Seconds per call, averaged over as many calls as fit in ``min_seconds`` (after warm-up)."""
    for _ in range(warmup):
        fn()
    sync()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        fn()
        calls += 1
    sync()
    return (time.perf_counter() - start) / calls


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def peak_gib(device: str) -> str:
    """Peak allocated memory since the last reset, as a table cell ('-' off CUDA), then reset it."""
    if not device.startswith("cuda"):
        return "-"
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return f"{peak:.1f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="tiny")
    p.add_argument("--views", type=int, default=2)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--dtype", default=None, help="model.pi0.dtype (default: the preset's)")
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--image-size", type=int, default=64, help="camera images (the policy resizes them)")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 64], help="rollout batch sizes")
    p.add_argument("--train-batch", type=int, default=32)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: torch sees no CUDA device here")

    from policy_and_value.config.schema import ModelConfig
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.envs.metaworld_tasks import MT10_TASKS
    from policy_and_value.models.registry import make_policy

    spec = EnvSpec(
        action_dim=4, num_action_chunks=4, state_dim=39, image_shape=(args.views, 64, 64), tasks=MT10_TASKS
    )
    pi0 = {"preset": args.preset, "noise_method": "flow_sde"}
    if args.dtype:
        pi0["dtype"] = args.dtype
    if args.gradient_checkpointing:
        pi0["gradient_checkpointing"] = True
    model_cfg = ModelConfig(policy_type="pi0", add_value_head=True, pi0=pi0)
    torch.manual_seed(0)
    start = time.perf_counter()
    policy = make_policy(model_cfg, spec, logprob_type="chunk_level").to(args.device)
    built = time.perf_counter() - start
    cfg = policy.cfg
    params = sum(p.numel() for p in policy.parameters())
    trainable = sum(p.numel() for p in policy.parameters() if p.requires_grad)
    print(
        f"pi0 preset {args.preset}: {params / 1e6:.2f}M parameters ({trainable / 1e6:.2f}M trainable), "
        f"{cfg.dtype}, {args.views} views x {cfg.tokens_per_view} tokens, chunk {cfg.chunk_size} "
        f"(executes {cfg.num_action_chunks}), {cfg.num_steps} denoising steps, on {args.device} "
        f"({torch.cuda.get_device_name() if args.device.startswith('cuda') else f'{torch.get_num_threads()} threads'}), "
        f"built in {built:.1f} s; weights {peak_gib(args.device)} GiB"
    )
    gen = torch.Generator().manual_seed(0)
    print(
        "\n| batch | rollout chunks/s | env steps/s (x chunk) | ms per call | peak GiB |\n|---|---|---|---|---|"
    )
    for n in args.batches:
        obs = _obs(n, args.views, args.image_size, gen)
        with torch.no_grad():
            sec = timed(lambda obs=obs: policy.predict(obs, mode="train"))
        print(
            f"| {n} | {n / sec:.1f} | {n * cfg.num_action_chunks / sec:.1f} | {sec * 1e3:.1f} | {peak_gib(args.device)} |"
        )

    batch = args.train_batch
    obs = _obs(batch, args.views, args.image_size, gen)
    with torch.no_grad():
        out = policy.predict(obs, mode="train")
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-4)

    def ppo_step() -> None:
        logprob, value, _ = policy.evaluate({"obs": obs, **out.replay})
        loss = -(logprob * torch.randn_like(logprob)).mean() + value.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    actions = torch.rand(batch, cfg.chunk_size, 4, device=args.device) * 2 - 1

    def sft_step() -> None:
        loss = policy.flow_matching_loss({"obs": obs, "actions": actions})
        opt.zero_grad()
        loss.backward()
        opt.step()

    print(f"\n| training (batch {batch}) | samples/s | ms per step | peak GiB |\n|---|---|---|---|")
    for name, fn in (("PPO update", ppo_step), ("imitation (flow matching)", sft_step)):
        sec = timed(fn)
        print(f"| {name} | {batch / sec:.1f} | {sec * 1e3:.1f} | {peak_gib(args.device)} |")


if __name__ == "__main__":
    main()
