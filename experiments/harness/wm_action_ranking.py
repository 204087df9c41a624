"""Does imagination rank actions like reality? From the same start state, several candidate action
sequences are scored in imagination (dynamics model + reward model) and executed in Meta-World; the
benchmark measures how well the imagined scores order the candidates like the real outcomes, per task.

    MUJOCO_GL=egl .venv/bin/python -m experiments.harness.wm_action_ranking --data data/reset48 \\
        --model-dir assets/world_models/tiny_3tasks --reward-model-dir assets/quickstart/reward_model \\
        --policy-dir assets/quickstart/policy [--horizons 1 5 --stride 16 --max-episodes 48 --seed 0]

DATA holds recorded Meta-World episodes (``toolkits.collect_episodes``, full 39-dim state, the dynamics
model's cameras and image size), ideally ones the dynamics model was not trained on. Starts are taken
every ``--stride`` steps along each episode where K chunks of its recorded actions fit. Each start is
rebuilt in Meta-World by resetting to the episode's layout (``reset_state_id``) and replaying its
recorded actions, then snapshotted with ``MetaWorldEnv.get_state`` and restored for every candidate; the
replay is checked against the recorded states and frames, and the executed ``recorded`` candidates
against the recorded states K chunks later (printed). From each start every candidate of K chunks is

- imagined: the dynamics model imagines the K chunks open loop from the recorded history frames
  (deterministic: one fixed noise draw, as the world-model env by default) and the reward model scores
  the last imagined frame (``imag``);
- executed in Meta-World from the same state: the reward model scores the last real frame (``real``);
  Meta-World's own success flag at the end (``succ end``) and at any step (``succ any``) and its dense
  reward at the end (``MW reward``) are recorded.

Candidates: ``recorded`` (the episode's own actions), ``noise S`` (recorded + N(0, S) per ``--sigmas``),
``policy`` (the ``--policy-dir`` imitation policy's deterministic ODE actions, chunk by chunk from the
imagined observations in imagination and from the real ones in Meta-World, with the same initial noise
on both sides), ``sample J`` (``--policy-samples``: the policy's stochastic flow-SDE samples at
``--noise-level``, as a training rollout draws them, J-th noise draw, again the same on both sides;
``--pi0 KEY=VALUE ...`` overrides the sampling, e.g. ``noise_method=flow_noise joint_logprob=true``;
``--sample-offset S`` instead adds one N(0, S^2) offset per chunk and action dim to the ODE chunk, noise
that persists over the chunk), ``zero`` and ``random`` (uniform); all clipped to [-1, 1].

One pair of tables per horizon K (``--horizons``), and with ``--policy-samples`` a third: the agreement
among the policy's samples only, i.e. whether the imagined returns GRPO compares within a group (one
start, several samples of the policy) order those samples as the real outcomes do. The first gives, per
task and candidate, the mean ``imag`` and ``real`` scores and Meta-World's outcomes (``start frame``: the reward model's score of the
start frame, for reference). The second gives the agreement between imagination and reality per task:

- ``spearman``: rank correlation of imagined and real scores across the candidates of one start,
  averaged over starts (starts with all-tied scores are skipped);
- ``pair acc``: of the candidate pairs of one start whose real scores differ by more than ``--gap``, the
  fraction imagination orders the same way (imagined ties count half), and the number of such pairs;
- ``pearson``: correlation of imagined and real scores over all (start, candidate) pairs (mostly the
  differences between starts); ``within r``: the same after subtracting each start's mean score from
  its candidates' (only the differences between the candidates of a start);
- ``rm~MW`` / ``imag~MW``: Spearman per start (averaged) of the real / imagined score against
  Meta-World's dense reward: how well the reward model ranks real outcomes (a ceiling for imagination
  as judged by the simulator's own reward), and how well imagination ranks by that reward.

The samples' table adds their spread (std within a start, averaged) imagined, real and in Meta-World
success, and ``pick imag`` / ``pick best``: how much more real progress the sample imagination ranks
first has than the start's average sample, and the same for the truly best sample (what one GRPO
group could at most select).

The torch work runs on ``--threads`` CPU threads (default 1: on a small machine shared with other jobs,
more threads are much slower) or on ``--device cuda``. The default run (all 48 episodes of
``data/reset48``, 374 starts) takes about 6 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from experiments.harness.ranking_tables import print_tables

os.environ.setdefault("MUJOCO_GL", "egl")


@dataclass
class Start:
    """One start state: a recorded episode at step ``t``."""

    episode: int  # index into the selected episodes
    t: int
    task: str
    prompt: str
    history: np.ndarray  # uint8 [T_h, V, H, W, 3]: the recorded frames up to t (clamped at the first)
    state: np.ndarray  # float32 [39]: the recorded state at t
    actions: np.ndarray  # float32 [T - t, A]: the recorded actions from t on


@dataclass
class Timer:
    """Seconds spent per part."""

    imagine: float = 0.0
    policy: float = 0.0
    sim: float = 0.0


def candidate_names(sigmas: list[float], with_policy: bool, samples: int = 0) -> list[str]:
    """The candidates, in table order."""
    policy = ["policy", *(f"sample {j + 1}" for j in range(samples))] if with_policy else []
    return ["recorded", *(f"noise {s:g}" for s in sigmas), *policy, "zero", "random"]


def policy_mode(name: str) -> tuple[str, int] | None:
    """(predict mode, noise draw) of a policy-driven candidate; None for open-loop ones."""
    if name == "policy":
        return "eval", 0
    if name.startswith("sample "):
        return "train", int(name.split()[1])
    return None


def candidate_actions(recorded: np.ndarray, names: list[str], rng: np.random.Generator) -> np.ndarray:
    """Open-loop actions [len(names), L, A] of every candidate from recorded actions [L, A] (the policy's
    rows are placeholders: they are chosen chunk by chunk)."""
    out = []
    for name in names:
        if name == "recorded" or policy_mode(name) is not None:
            a = recorded
        elif name.startswith("noise "):
            a = recorded + rng.normal(0.0, float(name.split()[1]), recorded.shape)
        elif name == "zero":
            a = np.zeros_like(recorded)
        else:
            a = rng.uniform(-1.0, 1.0, recorded.shape)
        out.append(np.clip(a, -1.0, 1.0))
    return np.stack(out).astype(np.float32)


def policy_seed(*keys: int) -> int:
    """A torch seed for one policy call, a function of where it happens (same on both sides)."""
    return int(np.random.SeedSequence(list(keys)).generate_state(1)[0])


@torch.no_grad()
def policy_chunk(
    policy: Any,
    images: torch.Tensor,
    state: torch.Tensor,
    prompts: list[str],
    seed: int,
    timer: Timer,
    mode: str = "eval",
    offset: float = 0.0,
) -> torch.Tensor:
    """The policy's chunk [N, C, A] for frames [N, V, H, W, 3] and states [N, S]: deterministic (ODE) in
    ``mode="eval"``, a flow-SDE sample in ``"train"``; with ``offset`` > 0 the ODE chunk plus one
    N(0, offset^2) shift per chunk and action dim (noise that persists over the chunk)."""
    start = time.time()
    torch.manual_seed(seed)  # the initial noise (and the SDE's noise)
    obs = {"images": images, "state": state.float(), "prompt": prompts,
           "task_id": torch.zeros(len(prompts), dtype=torch.long)}  # fmt: skip
    actions = policy.predict(obs, mode="eval" if offset else mode).actions.float().cpu().clamp(-1, 1)
    if offset:
        shift = torch.randn(
            actions.shape[0], 1, actions.shape[2], generator=torch.Generator().manual_seed(seed)
        )
        actions = (actions + offset * shift).clamp(-1, 1)
    timer.policy += time.time() - start
    return actions


def pi0_overrides(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` policy overrides, values parsed as YAML (``noise_std_range=[0.2,0.4]``)."""
    from omegaconf import OmegaConf

    bad = [item for item in items if "=" not in item]
    if bad:
        raise SystemExit(f"--pi0 {bad[0]!r}: expected KEY=VALUE, e.g. noise_method=flow_noise")
    return OmegaConf.to_container(OmegaConf.from_dotlist(items))  # type: ignore[return-value]


def make_sim(task: str, num_envs: int, cameras: list[str], image_size: int) -> Any:
    """Meta-World envs of one task that run every action (no terminations, no truncation)."""
    from policy_and_value.config.schema import env_config
    from policy_and_value.envs.metaworld_env import MetaWorldEnv

    cfg = env_config(
        env_type="metaworld", tasks=[task], num_envs=num_envs, num_action_chunks=1, max_episode_steps=10_000,
        auto_reset=False, ignore_terminations=True, cameras=cameras, image_size=image_size, state_type="full",
    )  # fmt: skip
    return MetaWorldEnv(cfg, num_envs, seed=0)


def snapshot_starts(
    sim: Any, episodes: list[Any], times: list[list[int]]
) -> tuple[dict[tuple[int, int], dict[str, Any]], float, int]:
    """Rebuild each start (episode j at step t for t in ``times[j]``) in ``sim`` by resetting to the
    episode's layout and replaying its recorded actions; returns the simulator snapshot and the real
    observation of every start, the largest |replayed - recorded| state difference and the largest pixel
    difference over all replayed steps that land on a start."""
    n = sim.num_envs
    snaps: dict[tuple[int, int], dict[str, Any]] = {}
    state_err, pixel_err = 0.0, 0
    for first in range(0, len(episodes), n):
        group = list(range(first, min(first + n, len(episodes))))
        pad = group + [group[0]] * (n - len(group))
        obs, _ = sim.reset(reset_state_ids=torch.tensor([episodes[j].meta["reset_state_id"] for j in pad]))
        done = 0
        for t in sorted({t for j in group for t in times[j]}):
            if t > done:  # replay the recorded actions from ``done`` to t (zeros past an episode's end)
                acts = np.zeros((n, t - done, 4), np.float32)
                for i, j in enumerate(pad):
                    part = episodes[j].actions[done:t]
                    acts[i, : len(part)] = part
                obs, *_ = sim.chunk_step(torch.from_numpy(acts))
                done = t
            full = sim.get_state()
            for i, j in enumerate(group):
                if t not in times[j]:
                    continue
                ep = episodes[j]
                state_err = max(state_err, float(np.abs(obs["state"][i].numpy() - ep.state[t]).max()))
                diff = np.abs(obs["images"][i].numpy().astype(np.int16) - ep.images[t].astype(np.int16))
                pixel_err = max(pixel_err, int(diff.max()))
                snaps[(j, t)] = {
                    "env": full["envs"][i], "state64": full["arrays"]["_state"][i].copy(),
                    "images": obs["images"][i].clone(), "state": obs["state"][i].clone(),
                }  # fmt: skip
    return snaps, state_err, pixel_err


def execute(
    sim: Any, snaps: list[dict[str, Any]], actions: np.ndarray, chunk: int, act: Any, timer: Timer
) -> dict[str, np.ndarray]:
    """Run ``actions`` [R, K*C, A] in ``sim`` from the snapshots (one per row; R <= num_envs), chunk by
    chunk; ``act(i, images, state, planned)`` chooses the rows' chunk i (the policy's rows). Returns the
    last frames, final states, success at the end and at any step, the dense reward at the end and the
    actions run."""
    start = time.time()
    n, r = sim.num_envs, len(snaps)
    pad = snaps + [snaps[-1]] * (n - r)
    full = sim.get_state()
    full["envs"] = [s["env"] for s in pad]
    full["arrays"].update(
        _state=np.stack([s["state64"] for s in pad]), _steps=np.zeros(n, np.int64), _return=np.zeros(n),
        _success=np.zeros(n, bool), _dead=np.zeros(n, bool),
    )  # fmt: skip
    full["started"] = True
    sim.set_state(full)
    images = torch.stack([s["images"] for s in snaps])
    state = torch.stack([s["state"] for s in snaps])
    run = np.zeros((n, *actions.shape[1:]), np.float32)
    run[:r] = actions
    for i in range(actions.shape[1] // chunk):
        part = slice(i * chunk, (i + 1) * chunk)
        timer.sim += time.time() - start
        run[:r, part] = act(i, images, state, torch.from_numpy(run[:r, part])).numpy()
        start = time.time()
        obs, rewards, *_ = sim.chunk_step(torch.from_numpy(run[:, part]))
        images, state = obs["images"][:r], obs["state"][:r]
    after = sim.get_state()["arrays"]
    end = [sim.envs[k].evaluate_state(after["_state"][k], run[k, -1].astype(np.float64)) for k in range(r)]
    timer.sim += time.time() - start
    return {
        "images": images.numpy(), "state": after["_state"][:r].astype(np.float32),
        "success_end": np.array([bool(info["success"]) for _, info in end]),
        "success_any": after["_success"][:r].copy(), "reward": rewards[:r, -1].numpy().astype(np.float64),
        "actions": run[:r],
    }  # fmt: skip


@dataclass
class Setup:
    """What every batch of starts needs."""

    model: Any
    scorer: Any
    policy: Any
    names: list[str]
    state_type: str
    kw: dict[str, Any]
    seed: int
    timer: Timer
    sample_offset: float = 0.0


def chooser(setup: Setup, group: list[Start], keys: tuple[int, ...]) -> Any:
    """``act(i, frames, state, planned)`` for the rows of ``group`` x candidates: the planned chunk, with
    the policy's own chunk in its rows (the same initial noise in imagination and in Meta-World)."""
    n = len(setup.names)
    driven = [  # (rows of the candidate, predict mode, noise draw)
        (torch.tensor([col == c for _ in group for col in range(n)]), *policy_mode(name))
        for c, name in enumerate(setup.names)
        if policy_mode(name)
    ]
    prompts = [s.prompt for s in group]

    def act(i: int, frames: torch.Tensor, state: Any, planned: torch.Tensor) -> torch.Tensor:
        if setup.policy is None:
            return planned
        out = planned.clone()
        for rows, mode, draw in driven:
            seed = policy_seed(setup.seed, *keys, i, *([draw] if draw else []))  # ODE: as before samples
            offset = setup.sample_offset if mode == "train" else 0.0
            out[rows] = policy_chunk(
                setup.policy, frames[rows], state[rows], prompts, seed, setup.timer, mode, offset
            )
        return out

    return act


def measure(
    setup: Setup, group: list[Start], k: int, keys: tuple[int, ...], sim: Any, snaps: dict, episodes: list
) -> tuple[dict[str, np.ndarray], float]:
    """Imagine and execute every candidate of K chunks from each start of ``group``; returns the
    [starts, candidates] outcomes (and the start scores) and how far the executed recorded candidates end
    from the recorded states."""
    from policy_and_value.envs.metaworld_tasks import select_state
    from world_models.imagination import open_loop

    model, scorer, timer, names = setup.model, setup.scorer, setup.timer, setup.names
    chunk = model.cfg.action_chunk
    rng = np.random.default_rng([setup.seed, *keys])
    acts = np.concatenate([candidate_actions(s.actions[: k * chunk], names, rng) for s in group])
    rows = [s for s in group for _ in names]
    prompts = [s.prompt for s in rows]
    act = chooser(setup, group, keys)

    start, policy_before = time.time(), timer.policy
    history = torch.from_numpy(np.stack([s.history for s in rows]))
    state = torch.from_numpy(np.stack([select_state(s.state, setup.state_type) for s in rows]))
    kw = {**setup.kw, "prompt": prompts if model.cfg.prompts else None}
    with torch.no_grad():
        frames = open_loop(
            model, history, state if model.cfg.state_dim else None, torch.from_numpy(acts), kw, act
        )
        imag = scorer.score(frames[:, -1:], prompts)[:, 0].cpu().numpy()
    timer.imagine += time.time() - start - (timer.policy - policy_before)

    real = execute(sim, [snaps[(s.episode, s.t)] for s in rows], acts, chunk, act, timer)
    with torch.no_grad():
        real_score = scorer.score(torch.from_numpy(real["images"][:, None]), prompts)[:, 0].cpu().numpy()
        first = torch.from_numpy(np.stack([s.history[-1:] for s in group]))
        start_score = scorer.score(first, [s.prompt for s in group])[:, 0].cpu().numpy()
    recorded = np.array([c == 0 for _ in group for c in range(len(names))])
    ends = np.stack([episodes[s.episode].state[s.t + k * chunk] for s in group])
    end_err = float(np.abs(real["state"][recorded] - ends).max())
    shape = (len(group), len(names))
    out = {"start": start_score, "imag": imag.reshape(shape), "real": real_score.reshape(shape)}
    out.update({key: real[key].reshape(shape) for key in ("success_end", "success_any", "reward")})
    return out, end_err


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="recorded episodes (held out from the dynamics model)")
    p.add_argument("--model-dir", required=True, help="dynamics model directory")
    p.add_argument("--reward-model-dir", required=True)
    p.add_argument("--policy-dir", default=None, help="imitation policy directory (the 'policy' candidate)")
    p.add_argument("--policy-samples", type=int, default=0, help="stochastic policy candidates (sample J)")
    p.add_argument(
        "--noise-level", type=float, default=0.1, help="flow-SDE noise of the samples (rl_release)"
    )
    p.add_argument(
        "--pi0", nargs="*", default=[], metavar="KEY=VALUE",
        help="sampling overrides of the policy, e.g. noise_method=flow_noise joint_logprob=true",
    )  # fmt: skip
    p.add_argument(
        "--sample-offset", type=float, default=0.0,
        help="samples: the ODE chunk plus one N(0, s^2) offset per chunk and action dim, not flow-SDE",
    )  # fmt: skip
    p.add_argument("--horizons", type=int, nargs="+", default=[1, 5], help="chunks K per candidate")
    p.add_argument("--stride", type=int, default=16, help="steps between starts along an episode")
    p.add_argument("--max-episodes", type=int, default=48, help="the first N episodes of DATA")
    p.add_argument("--sigmas", type=float, nargs="+", default=[0.1, 0.3], help="noise added to the recorded")
    p.add_argument("--gap", type=float, default=0.05, help="real score gap of a pair counted in pair acc")
    p.add_argument("--starts-per-batch", type=int, default=4, help="starts imagined/executed together")
    p.add_argument("--num-inference-steps", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    wall = time.time()
    torch.set_num_threads(args.threads)

    from policy_and_value.envs.metaworld_tasks import state_type_for
    from reward_models.modeling import FrameScorer
    from toolkits.episodes import EpisodeDataset
    from world_models.dynamics_model import DynamicsModel

    model = DynamicsModel.from_pretrained(args.model_dir, device=args.device)
    scorer = FrameScorer.from_pretrained(args.reward_model_dir, device=args.device)
    cfg, chunk = model.cfg, model.cfg.action_chunk
    if args.policy_samples and not args.policy_dir:
        raise SystemExit(f"--policy-samples={args.policy_samples}: needs --policy-dir (the policy to sample)")
    policy = None
    if args.policy_dir:
        from policy_and_value.models.pi0 import from_pretrained

        overrides = {"noise_method": "flow_sde", "noise_level": args.noise_level, **pi0_overrides(args.pi0)}
        torch.manual_seed(args.seed)  # an RL head an override adds (flow_noise's std head) starts fresh
        policy = from_pretrained(args.policy_dir, device=args.device, **overrides).eval()
        if policy.num_action_chunks != chunk:
            raise SystemExit(f"the policy acts in chunks of {policy.num_action_chunks}, the model of {chunk}")
        if not cfg.predict_state or cfg.state_dim != policy.cfg.state_dim:
            raise SystemExit("the policy candidate needs a dynamics model that predicts the policy's state")
    data = EpisodeDataset(args.data)
    episodes = [data[i] for i in range(min(args.max_episodes, len(data)))]
    cameras, image_size = list(episodes[0].meta["cameras"]), int(episodes[0].meta["image_size"])
    if len(cameras) != cfg.num_views or image_size != cfg.image_size:
        raise SystemExit(f"episodes: {len(cameras)} views at {image_size} px; the model {cfg.num_views} at "
                         f"{cfg.image_size} px")  # fmt: skip
    noise = torch.randn((1, *model.noise_shape()), generator=torch.Generator().manual_seed(args.seed))
    setup = Setup(
        model, scorer, policy, candidate_names(args.sigmas, policy is not None, args.policy_samples),
        state_type_for(cfg.state_dim),
        {"noise": noise, "num_inference_steps": args.num_inference_steps}, args.seed, Timer(),
        args.sample_offset,
    )  # fmt: skip
    tasks = sorted({ep.meta["task"] for ep in episodes})
    print(f"{len(episodes)} episodes of {tasks} from {args.data}; candidates {setup.names}; horizons "
          f"{args.horizons}; starts every {args.stride} steps", flush=True)  # fmt: skip

    def start_times(j: int, k: int) -> list[int]:
        return list(range(0, len(episodes[j].actions) - k * chunk + 1, args.stride))

    g = args.starts_per_batch
    results: dict[int, dict[str, list]] = {k: defaultdict(list) for k in args.horizons}
    state_err, pixel_err, end_err = 0.0, 0, 0.0
    for ti, task in enumerate(tasks):
        own = [j for j, ep in enumerate(episodes) if ep.meta["task"] == task]
        start = time.time()
        sim = make_sim(task, g * len(setup.names), cameras, image_size)
        times = [start_times(j, min(args.horizons)) for j in own]
        snaps, s_err, p_err = snapshot_starts(sim, [episodes[j] for j in own], times)
        snaps = {(own[j], t): s for (j, t), s in snaps.items()}
        state_err, pixel_err = max(state_err, s_err), max(pixel_err, p_err)
        setup.timer.sim += time.time() - start
        try:
            for k in args.horizons:
                starts = []
                for j in own:
                    ep = episodes[j]
                    for t in start_times(j, k):
                        hist = [max(0, t - cfg.history_frames + 1 + h) for h in range(cfg.history_frames)]
                        starts.append(Start(j, t, task, ep.meta["prompt"], ep.images[hist],
                                            ep.state[t].astype(np.float32), ep.actions[t:]))  # fmt: skip
                for b in range(0, len(starts), g):
                    out, err = measure(setup, starts[b : b + g], k, (k, ti, b), sim, snaps, episodes)
                    end_err = max(end_err, err)
                    results[k]["task"] += [task] * len(starts[b : b + g])
                    for key, value in out.items():
                        results[k][key].append(value)
                print(f"{task}: K={k}, {len(starts)} starts ({time.time() - wall:.0f} s)", flush=True)
        finally:
            sim.close()

    print(f"\nreplay check: the replayed starts match the recorded ones to {state_err:.2g} in the state and "
          f"{pixel_err} in pixel values (0-255); the executed recorded candidates end {end_err:.2g} from the "
          f"recorded states")  # fmt: skip
    for k in args.horizons:
        res = {key: np.array(v) if key == "task" else np.concatenate(v) for key, v in results[k].items()}
        info = f"{len(res['task'])} starts of {len(episodes)} episodes, {len(setup.names)} candidates each"
        print_tables(k, chunk, res, setup.names, args.gap, info)
    t = setup.timer
    print(f"\nwall time {time.time() - wall:.0f} s: imagination {t.imagine:.0f} s (dynamics + reward model), "
          f"policy {t.policy:.0f} s, Meta-World {t.sim:.0f} s; {args.device}, "
          f"{args.threads} torch thread(s), "
          f"{args.num_inference_steps or cfg.num_inference_steps} denoising steps")  # fmt: skip


if __name__ == "__main__":
    main()
