"""What the policy's imagined plans look like beside what they really do: one picture per run.

    .venv/bin/python -m experiments.harness.plan_frames --config rl_metaworld_obs_wm_20demo \\
        --starts data/obs_wm/gauge_starts [--starts-per-task 2] [--every 10] [--out logs/plan_frames.png] [key=value ...]

From each start (as ``wm_outcome_gauge`` takes them: frame 0 and layout of recorded episodes) the config's policy
plays a whole episode in imagination (``env.train``, closed loop on the imagined frames, ``mode="train"`` samples),
then Meta-World replays those actions open loop from the same layout. The picture has two rows per start, the
imagined frames and the real ones, every ``--every`` chunks (first camera), each labelled with the step and, on the
imagined row, the success score; the last column is the episode's end. It shows where imagination and the simulator
part (the plan that opens the door only in imagination).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import torch

os.environ.setdefault("MUJOCO_GL", "egl")


def _tile(frames: list[np.ndarray], labels: list[str]) -> np.ndarray:
    """Frames [H, W, 3] side by side, each with its label drawn in its top-left corner."""
    from PIL import Image, ImageDraw

    tiles = []
    for frame, label in zip(frames, labels, strict=True):
        image = Image.fromarray(frame).resize((frame.shape[1] * 2, frame.shape[0] * 2), Image.NEAREST)
        ImageDraw.Draw(image).text((2, 2), label, fill=(255, 255, 0))
        tiles.append(np.asarray(image))
    return np.concatenate(tiles, axis=1)


@torch.no_grad()
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--config", default="rl_metaworld_obs_wm_20demo", help="a job whose env.train is a world-model env"
    )
    p.add_argument(
        "--starts", required=True, help="recorded episodes of the tasks: frame 0 and layout of each"
    )
    p.add_argument("--starts-per-task", type=int, default=2)
    p.add_argument("--episode-steps", type=int, default=150)
    p.add_argument("--every", type=int, default=10, help="chunks between pictured frames")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="logs/plan_frames.png")
    from toolkits.base.cli import parse_with_overrides

    args, overrides = parse_with_overrides(p, argv)
    if args.every < 1 or args.starts_per_task < 1:
        raise SystemExit(f"--every={args.every} and --starts-per-task={args.starts_per_task} must be >= 1")
    from PIL import Image

    from experiments.harness.wm_outcome_gauge import assign_starts, load_starts
    from policy_and_value.config import load_config
    from policy_and_value.envs.metaworld_env import MetaWorldEnv
    from policy_and_value.models.registry import make_policy
    from world_models.env import WorldModelEnv

    cfg = load_config(args.config, overrides)
    wcfg, rcfg = cfg.env.train, cfg.env.eval
    if wcfg.env_type != "world_model" or rcfg.env_type != "metaworld":
        raise SystemExit(f"--config {args.config}: env.train must be world_model and env.eval metaworld")
    tasks = list(wcfg.tasks)
    starts = load_starts(args.starts, tasks, args.starts_per_task)
    n = len(tasks) * args.starts_per_task
    common = {"num_envs": n, "auto_reset": False, "max_episode_steps": args.episode_steps, "group_size": 1,
              "use_fixed_reset_state_ids": False}  # fmt: skip
    wm_env = WorldModelEnv(wcfg.model_copy(update={**common, "reset_mode": "episode_start",
                           "dynamics_model_image_root": args.starts, "visualize_wm_pred": False}), n, seed=args.seed)  # fmt: skip
    real_env = MetaWorldEnv(rcfg.model_copy(update=common), n, seed=args.seed)
    policy = make_policy(cfg.model, wm_env.spec, cfg.algorithm.logprob_type, cfg.algorithm.reward_type == "action_level",
                         model_dir=cfg.rollout.model_dir).eval()  # fmt: skip
    layouts, ep_ids, _ = assign_starts(wm_env.task_ids, starts, 1, 0)
    torch.manual_seed(args.seed)
    obs, info = wm_env.reset(reset_state_ids=torch.as_tensor(ep_ids))
    chunks = -(-args.episode_steps // wm_env.chunk)
    shown = sorted({*range(0, chunks, args.every), chunks})
    imagined, scores, actions = {0: obs["images"][:, 0].numpy()}, {0: info["scores"].numpy()}, []
    best = info["scores"].numpy().copy()  # the highest imagined score of each episode
    for k in range(1, chunks + 1):
        chunk = policy.predict(obs, mode="train").actions.clamp(-1, 1)
        actions.append(chunk)
        obs, _, _, _, info = wm_env.chunk_step(chunk)
        best = np.maximum(best, info["scores"].max(1).values.numpy())
        if k in shown:
            imagined[k], scores[k] = obs["images"][:, 0].numpy(), info["scores"][:, -1].numpy()
    obs, _ = real_env.reset(reset_state_ids=torch.as_tensor(layouts))
    real, success = {0: obs["images"][:, 0].numpy()}, np.zeros(n, bool)
    for k, chunk in enumerate(actions, start=1):
        obs, _, terminated, _, _ = real_env.chunk_step(chunk)
        success |= terminated.numpy()
        if k in shown:
            real[k] = obs["images"][:, 0].numpy()
    rows = []
    for i in range(n):
        steps = [k * wm_env.chunk for k in shown]
        rows.append(
            _tile(
                [imagined[k][i] for k in shown], [f"{t} p={scores[k][i]:.2f}" for t, k in zip(steps, shown)]
            )
        )
        rows.append(
            _tile([real[k][i] for k in shown], [f"{t} real" + (" ok" if success[i] else "") for t in steps])
        )
        print(f"start {i} ({tasks[wm_env.task_ids[i]]}): highest imagined score {best[i]:.2f}, real success {success[i]}")  # fmt: skip
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    Image.fromarray(np.concatenate(rows, axis=0)).save(args.out)
    print(f"wrote {args.out}: {n} starts x (imagined, real), every {args.every} chunks")
    real_env.close()
    wm_env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
