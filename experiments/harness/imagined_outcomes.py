"""Does imagination predict the real outcome from a recorded start? A gauge that needs no simulator.

    python -m experiments.harness.imagined_outcomes --config CONFIG --episodes D [--samples 4] [--steps 220] [key=value ...]

For every recorded episode of ``D`` whose outcome is known (e.g. the start policy's rollouts on init states never
trained on), the config's policy (``rollout.model_dir``, sampled as a training rollout draws it) plays ``--samples``
episodes closed loop in the config's world-model env (``env.train``) from that episode's first frame and
proprioception (``WorldModelEnv.reset_to``). Reported over all episodes and per task: the real success rate of the
recorded episodes beside the imagined one (an imagined episode succeeds where the env terminates it), the AUC of the
imagined return (the mean over samples) for the recorded outcome, and the same for the imagined success rate. Unlike
``wm_outcome_gauge`` it does not rebuild a start in a simulator, so it serves LIBERO and a robot's own recordings;
the real and imagined samples share only the start.

Two more columns tell where a wrong outcome comes from: ``replayed`` (the recorded episode's own actions replayed
open loop in imagination from its start: does the model carry those actions to their real outcome?) and ``heads on
real`` (the success score of the recorded frames themselves, through the observation model's encoder and success
head, its highest over the episode: can the head see the outcome at all?). Each gives its success rate (score over
``success_threshold``) and the AUC of its score for the recorded outcome.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def play(env, obs, act: Callable[[Any, int], torch.Tensor], chunks: int, lengths: np.ndarray | None = None):
    """Up to ``chunks`` chunks in ``env`` from its reset observations ``obs``, chunk k's actions ``act(obs, k)``: each
    env's return and whether it succeeded (terminated). An env stops at its end, at truncation and, with ``lengths``,
    after that many actions of its own."""
    n = env.num_envs
    returns, success, alive = (
        torch.zeros(n),
        torch.zeros(n, dtype=torch.bool),
        torch.ones(n, dtype=torch.bool),
    )
    for k in range(chunks):
        obs, rewards, terminated, truncated, _ = env.chunk_step(act(obs, k))
        returns += rewards.sum(1) * alive
        success |= terminated.bool() & alive
        alive &= ~(terminated | truncated).bool()
        if lengths is not None:
            alive &= torch.from_numpy(lengths > (k + 1) * env.chunk)
        if not alive.any():
            break
    return returns.numpy(), success.numpy()


def imagine(env, policy, starts: dict[str, torch.Tensor], steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Closed-loop episodes of ``policy`` in ``env`` from ``starts`` (images [N, V, H, W, 3], state [N, S]): each one's
    return and whether it succeeded (terminated) within ``steps`` actions."""
    from policy_and_value.envs.metaworld_tasks import select_state

    obs, _ = env.reset_to(starts["images"], select_state(starts["state"], env.cfg.state_type))

    def act(obs, _k: int) -> torch.Tensor:
        with torch.no_grad():
            return policy.predict(obs, mode="train").actions.float().clamp(-1, 1)

    return play(env, obs, act, -(-steps // env.chunk))


def pad_actions(actions: list[np.ndarray], chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """Episodes' actions [T_i, A] as one array [N, T, A] (zeros past each end, T a multiple of ``chunk``) and their
    lengths [N], to replay them in a batch of envs."""
    lengths = np.array([len(a) for a in actions])
    padded = np.zeros((len(actions), -(-lengths.max() // chunk) * chunk, actions[0].shape[1]), np.float32)
    for i, a in enumerate(actions):
        padded[i, : len(a)] = a
    return padded, lengths


def replay(env, starts: dict[str, torch.Tensor], actions: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each recorded episode's ``actions`` [T_i, A] replayed open loop in ``env`` (one env an episode) from its start:
    the imagined return and whether imagination reached success within the episode's own length."""
    from policy_and_value.envs.metaworld_tasks import select_state

    obs, _ = env.reset_to(starts["images"], select_state(starts["state"], env.cfg.state_type))
    c = env.chunk
    padded, lengths = pad_actions(actions, c)
    return play(
        env, obs, lambda _, k: torch.from_numpy(padded[:, k * c : (k + 1) * c]), padded.shape[1] // c, lengths
    )


def real_frame_scores(env, episodes: list) -> np.ndarray:
    """Each recorded episode's highest success score of its own frames (the encoder, then the success head; one env
    an episode) -> [len(episodes)]."""
    from policy_and_value.envs.metaworld_tasks import select_state

    with torch.no_grad():
        states = [
            env.observed_states(
                {
                    "images": torch.from_numpy(e.images),
                    "state": select_state(torch.from_numpy(e.state), env.cfg.state_type),
                }
            )
            for e in episodes
        ]
        padded = torch.nn.utils.rnn.pad_sequence(states, batch_first=True)  # [N, T_max, S]
        scores = env.score_states(padded)  # [N, T_max]
    lengths = torch.tensor([len(s) for s in states])
    scores[torch.arange(scores.shape[1])[None] >= lengths[:, None]] = 0.0
    return scores.max(1).values.numpy()


def cell(score: np.ndarray, pick: np.ndarray, real: np.ndarray) -> str:
    """The AUC of ``score[pick]`` for the outcomes ``real`` (already picked), or n/a where they do not differ."""
    from toolkits.base.metrics import auc

    return f"{auc(score[pick], real):.3f}" if 0 < real.sum() < len(real) else "n/a"


def main(argv: list[str] | None = None) -> int:
    """CLI: imagine from every recorded start, then print the table (all episodes, then per task)."""
    from policy_and_value.config import load_config
    from policy_and_value.models.pi0 import from_pretrained
    from toolkits.episodes import EpisodeDataset
    from world_models.env import WorldModelEnv

    p = argparse.ArgumentParser(
        prog="python -m experiments.harness.imagined_outcomes", description=__doc__.splitlines()[0]
    )
    p.add_argument("--config", required=True, help="a job whose env.train is a world-model env")
    p.add_argument(
        "--episodes", required=True, help="recorded real episodes (their first frames are the starts)"
    )
    p.add_argument("--samples", type=int, default=4, help="imagined episodes a start")
    p.add_argument("--steps", type=int, default=220, help="actions an imagined episode may take")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("overrides", nargs="*", help="key=value overrides of the config")
    args = p.parse_args(argv)
    if not os.path.isfile(os.path.join(args.episodes, "index.json")):
        p.error(f"--episodes={args.episodes}: no index.json there")
    for flag, value in (("--samples", args.samples), ("--steps", args.steps)):
        if value < 1:
            p.error(f"{flag}={value}: must be >= 1")
    cfg = load_config(args.config, args.overrides)
    if cfg.env.train.env_type != "world_model":
        p.error(f"--config={args.config}: env.train.env_type={cfg.env.train.env_type}; expected world_model")
    torch.manual_seed(args.seed)
    policy = from_pretrained(
        cfg.rollout.model_dir, noise_method="flow_sde", noise_level=cfg.model.pi0["noise_level"]
    )
    policy.eval()
    data = EpisodeDataset(args.episodes)
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, entry in enumerate(data.entries):
        if entry.get("success_once") is not None:
            by_task[entry["task"]].append(i)
    rows: dict[str, list] = defaultdict(list)
    for task, ids in by_task.items():
        if task not in cfg.env.train.tasks:
            continue
        n = len(ids) * args.samples
        env_cfg = cfg.env.train.model_copy(update={"tasks": [task], "num_envs": n, "group_size": 1, "auto_reset": False,
                                                   "use_fixed_reset_state_ids": False, "max_episode_steps": args.steps,
                                                   "visualize_wm_pred": False, "task_weights": None})  # fmt: skip
        env = WorldModelEnv(env_cfg, n, seed=args.seed)
        firsts = [data[i] for i in ids]
        starts = {
            "images": torch.from_numpy(np.stack([e.images[0] for e in firsts])).repeat_interleave(
                args.samples, 0
            ),
            "state": torch.from_numpy(np.stack([e.state[0] for e in firsts])).repeat_interleave(
                args.samples, 0
            ),
        }
        returns, success = imagine(env, policy, starts, args.steps)
        env.close()
        one = env_cfg.model_copy(update={"num_envs": len(ids)})
        env = WorldModelEnv(one, len(ids), seed=args.seed)
        firsts_only = {k: v[:: args.samples] for k, v in starts.items()}
        replayed_return, replayed = replay(env, firsts_only, [e.actions for e in firsts])
        rows["replayed return"] += list(replayed_return)
        rows["replayed"] += list(replayed)
        rows["heads on real"] += list(real_frame_scores(env, firsts))
        env.close()
        rows["task"] += [task] * len(ids)
        rows["real"] += [bool(e.meta["success_once"]) for e in firsts]
        rows["return"] += list(returns.reshape(len(ids), args.samples).mean(1))
        rows["imagined"] += list(success.reshape(len(ids), args.samples).mean(1))
        print(f"{task}: {len(ids)} starts x {args.samples} imagined", flush=True)
    if not rows:
        p.error(
            f"--episodes={args.episodes}: no episode of known outcome of the config's tasks {cfg.env.train.tasks}"
        )
    tasks, real = np.array(rows["task"]), np.array(rows["real"])
    threshold = cfg.env.train.success_threshold
    ret, imagined = np.array(rows["return"]), np.array(rows["imagined"])
    rep_ret, rep, heads = (np.array(rows[k], float) for k in ("replayed return", "replayed", "heads on real"))
    print(
        "| episodes | starts | real success | imagined success | AUC of the imagined return | AUC of imagined success "
        "| replayed: success | replayed: AUC of return | heads on real: success | heads on real: AUC |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in ["all", *sorted(set(tasks))]:
        pick = np.ones(len(tasks), bool) if name == "all" else tasks == name
        y = real[pick]
        print(
            f"| {name} | {pick.sum()} | {y.mean():.1%} | {imagined[pick].mean():.1%} | {cell(ret, pick, y)} "
            f"| {cell(imagined, pick, y)} | {rep[pick].mean():.1%} | {cell(rep_ret, pick, y)} "
            f"| {(heads[pick] >= threshold).mean():.1%} | {cell(heads, pick, y)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
