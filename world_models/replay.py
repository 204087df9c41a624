"""Replay recorded episodes through the world model and write prediction videos beside the real frames.

    python -m world_models.replay --model-dir logs/world_model/model --reward-model-dir logs/reward_model/model \\
        --data DATA --out logs/wm_replay [--tasks reach-v3 ...] [--num-envs 4] [--steps 48]

Each env starts from the first frame of one episode of its task (env i takes episode i // num_tasks of
its task), is stepped with that episode's own action chunks for ``--steps`` actions, and writes one mp4:
imagined views on top, the recorded views below, and the reward model's score of every imagined frame.
An episode shorter than ``--steps`` shows only imagined frames after its end.
"""

from __future__ import annotations

import argparse
import sys

import torch


def replay(
    model_dir: str, reward_model_dir: str, data: str, out: str, tasks: list[str] | None = None,
    num_envs: int = 4, steps: int = 48, seed: int = 0,
) -> list[str]:  # fmt: skip
    """Run the replay and return the written video paths."""
    from policy_and_value.config.schema import env_config
    from toolkits.episodes import EpisodeDataset
    from world_models.dynamics_config import DynamicsModelConfig
    from world_models.env import WorldModelEnv

    chunk = DynamicsModelConfig.load(f"{model_dir}/config.json").action_chunk
    cfg = env_config(
        env_type="world_model", tasks=tasks or EpisodeDataset(data).tasks, num_action_chunks=chunk,
        max_episode_steps=max(chunk, steps // chunk * chunk), dynamics_model_config=model_dir,
        dynamics_model_image_root=data, reward_model_config=reward_model_dir, success_threshold=1.0,
        visualize_wm_pred=True, dynamics_model_output_path=out,
    )  # fmt: skip
    env = WorldModelEnv(cfg, num_envs, seed)
    per_task = torch.arange(num_envs) // len(cfg.tasks)
    env.reset(reset_state_ids=per_task)
    for _ in range(cfg.max_episode_steps // chunk):
        env.chunk_step(env.recorded_actions())
    env.close()
    return list(env.video.written)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", required=True)
    p.add_argument("--reward-model-dir", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", default="logs/wm_replay")
    p.add_argument("--tasks", nargs="+", default=None)
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--steps", type=int, default=48)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for key in ("num_envs", "steps"):
        if getattr(args, key) < 1:
            print(f"--{key.replace('_', '-')}={getattr(args, key)}: must be >= 1", file=sys.stderr)
            return 2
    paths = replay(args.model_dir, args.reward_model_dir, args.data, args.out, args.tasks, args.num_envs,
                   args.steps, args.seed)  # fmt: skip
    print("\n".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
