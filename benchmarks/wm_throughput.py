"""Imagined env-steps per second of the world-model env at 1, 8 and 64 envs, next to the rendered
Meta-World env's, measured in the same run on the same machine.

    .venv/bin/python benchmarks/wm_throughput.py --data DATA [--model-dir logs/world_model/model]
        [--reward-model-dir logs/reward_model/model] [--envs 1 8 64] [--chunks 4]

DATA is an episode dataset (the world-model env resets from it; its cameras and image size set the
Meta-World env's). Without model directories, untrained models of the tiny presets stand in: speed does
not depend on the weights. An env step is one action: a chunk_step of N envs with chunks of C actions
counts N x C. Both envs return images of every camera view; the first chunk (warm-up) is not timed.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch


def steps_per_second(env, chunks: int, seed: int = 0) -> float:
    """Env steps/s over ``chunks`` chunk_steps of random actions, after one untimed warm-up chunk."""
    gen = torch.Generator().manual_seed(seed)
    n, c, a = env.num_envs, env.chunk, env.action_dim
    env.reset()
    env.chunk_step(torch.rand(n, c, a, generator=gen) * 2 - 1)
    start = time.perf_counter()
    for _ in range(chunks):
        env.chunk_step(torch.rand(n, c, a, generator=gen) * 2 - 1)
    return chunks * n * c / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model-dir", default=None)
    p.add_argument("--reward-model-dir", default=None)
    p.add_argument("--envs", type=int, nargs="+", default=[1, 8, 64])
    p.add_argument("--chunks", type=int, default=4)
    p.add_argument("--num-inference-steps", type=int, default=None)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    import world_models.env  # noqa: F401 - registers env_type world_model
    from policy_and_value.config.schema import env_config
    from policy_and_value.envs import make_env
    from reward_models import FrameScorer, RewardModelConfig
    from toolkits.episodes import EpisodeDataset
    from world_models import DynamicsModel, make_config

    data = EpisodeDataset(args.data)
    first = data[0]
    views, size = first.images.shape[1], first.images.shape[2]
    tasks = data.tasks
    prompts = sorted({e["prompt"] for e in data.entries})
    tmp = tempfile.mkdtemp(prefix="wm_throughput_")
    model_dir = args.model_dir or str(
        DynamicsModel(make_config("tiny", image_size=size, num_views=views, action_dim=first.actions.shape[1],
                                  state_dim=first.state.shape[1], predict_state=True, prompts=prompts)
                      ).save_pretrained(f"{tmp}/dynamics")
    )  # fmt: skip
    reward_dir = args.reward_model_dir or str(
        FrameScorer(RewardModelConfig(image_size=size, num_views=views, prompts=prompts)).save_pretrained(
            f"{tmp}/reward"
        )
    )
    dyn = DynamicsModel.from_pretrained(model_dir)
    chunk = dyn.cfg.action_chunk
    steps = args.num_inference_steps or dyn.cfg.num_inference_steps
    cameras = data.info.get("cameras", ["corner"])
    print(f"tasks {tasks}; {views} views of {size}x{size}; chunks of {chunk} actions; "
          f"{steps} denoising steps; torch threads {torch.get_num_threads()}")  # fmt: skip
    common = dict(tasks=tasks, num_action_chunks=chunk, max_episode_steps=10_000, image_size=size)
    wm = env_config(env_type="world_model", dynamics_model_config=model_dir, dynamics_model_image_root=args.data,
                   reward_model_config=reward_dir, num_inference_steps=steps, success_threshold=1.0, **common)  # fmt: skip
    sim = env_config(env_type="metaworld", cameras=cameras, **common)
    print(f"\n{'envs':>6}{'world model steps/s':>22}{'Meta-World steps/s':>22}{'ratio':>8}")
    for n in args.envs:
        imagined = steps_per_second(make_env(wm, n, seed=0), args.chunks)
        real_env = make_env(sim, n, seed=0)
        try:
            rendered = steps_per_second(real_env, args.chunks)
        finally:
            real_env.close()
        print(f"{n:>6}{imagined:>22.1f}{rendered:>22.1f}{imagined / rendered:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
