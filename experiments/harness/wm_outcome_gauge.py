"""Does imagination predict the real outcome of the policy's own rollouts? The gauge of world-model RL.

    MUJOCO_GL=egl .venv/bin/python -m experiments.harness.wm_outcome_gauge --config rl_release_video --starts data/gauge_starts \\
        [--starts-per-task 9] [--samples 4] [--episode-steps 150] [--seed 0] [key=value ...]

From each start (frame 0 of a recorded episode in ``--starts``, e.g. ``toolkits.collect_episodes`` of the
config's tasks, cameras and image size: its layout is rebuilt in Meta-World from the episode's
``reset_state_id``) the config's policy (``rollout.model_dir``) plays ``--samples`` whole episodes
(``--episode-steps`` actions, ending at success unless the env's ``ignore_terminations``) sampled as a training rollout draws them
(``policy.predict(mode="train")``: the config's ``model.pi0`` noise), once in Meta-World (``env.eval``'s
cameras and state, Meta-World's dense reward) and once in imagination (``env.train``: the world-model env,
its dynamics model, reward model, rewards and success threshold, episodes from the start frame), with the
same policy noise draws on both sides. Arms:

- ``imagined``: the policy acts on the imagined frames, closed loop, as RL in imagination runs it;
- ``imagined, real actions``: the actions the policy took in Meta-World replayed open loop in imagination
  (how well the dynamics model simulates the consequences of given actions);
- ``zero actions``: imagination with every action zero (what the start alone predicts through the model);
- ``Meta-World, imagined actions``: the ``imagined`` episodes' actions replayed open loop in Meta-World from the
  same layout (what the actions imagination chose really do; reported in a table of its own);
- ``start frame``: the reward model's score of the start frame repeated ("repeat the last frame");
- ``reward model, real frames``: the reward model on the real episode's frames (a ceiling: imagination
  cannot rank outcomes better than its reward model does on the real frames);
- ``success classifier, real states`` (with ``env.train.state_model_config``): the state model's success
  classifier on the real episode's states, the same kind of ceiling for ``outcome_source: state``;
- with a reward head on the state model, ``reward head, real states at chunk ends``: its reward of the
  real state after each chunk x the chunk, summed (the ceiling for ``reward_mode: state_reward``), beside
  ``Meta-World reward at chunk ends``: the real reward of each chunk's last action x the chunk (what
  reading only chunk ends loses).

The reward model's two arms are left out when the world-model env has none (``outcome_source: state``)
or it does not know the tasks. Per arm, over every (start, sample): ``AUC`` of the episode score (the
highest score of the episode: the env's own, reward model or success classifier; ``AUC return``: the
env's return) for real success; within one start, the Spearman correlation of
the arm's return with real success, averaged over starts whose samples' real outcomes differ
(``spearman succ``), and with Meta-World's dense return over all starts (``spearman MW``); an arm whose
return does not vary within a start ranks nothing there and counts 0; ``spread``: the std of the arm's return
among the samples of a start, averaged over starts (Meta-World's own: the ``real`` line). ``success``: the arm's success rate
(imagined: the score reached ``success_threshold``). Then ``AUC`` per task of each arm, each arm's
within-start Spearman with Meta-World's return and its mean return per task, and, with a state
model, the imagined AUC of the episodes whose members' final disagreement is at most its median against
the rest (does the hallucination filter keep the episodes imagination gets right?), and with a reward head,
per task, its excess over Meta-World's reward on the real episodes beside the spread of the members' heads
(does that spread find where the head over-credits?), and per task imagination against the real
consequences of its own actions: imagined and replayed success, the AUC of the imagined score for the
replay's success and the within-start Spearman of the imagined return with the replay's. The torch work runs
on ``--threads`` CPU threads.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

os.environ.setdefault("MUJOCO_GL", "egl")

from toolkits.base.metrics import auc  # noqa: E402

ARMS = ["imagined", "imagined, real actions", "zero actions", "start frame", "reward model, real frames"]
STATE_ARM = "success classifier, real states"  # with a state model (env.train.state_model_config)
# with a state model that has a reward head: its reward on the real states at chunk ends (x the chunk), and
# Meta-World's own reward of each chunk's last action (x the chunk): what sampling at chunk ends loses
HEAD_ARMS = ["reward head, real states at chunk ends", "Meta-World reward at chunk ends"]
# the imagined episodes' actions replayed open loop in Meta-World: what they really do
REPLAY_ARM = "Meta-World, imagined actions"

StateProbe = Callable[[dict], torch.Tensor]  # observations (num_envs of them) -> one number per env


@dataclass(frozen=True)
class StateProbes:
    """What the world-model env's state model reads from observations (their states, and an observation model
    their frames too), each None where it has no such part: its success classifier's score, its reward heads'
    mean reward and their spread."""

    score: StateProbe | None = None
    reward: StateProbe | None = None
    spread: StateProbe | None = None

    @classmethod
    def of(cls, wm_env) -> StateProbes:
        """The probes ``wm_env``'s state model offers: none without one, no reward ones without reward heads."""
        model = wm_env.state_model
        if model is None:
            return cls()

        def reading(of_states: Callable[[torch.Tensor], torch.Tensor]) -> StateProbe:
            return lambda obs: of_states(wm_env.observed_states(obs))

        if not model.cfg.reward_head:
            return cls(score=reading(wm_env.score_states))
        return cls(
            *(
                reading(f)
                for f in (wm_env.score_states, wm_env.reward_of_states, wm_env.reward_spread_of_states)
            )
        )


def spearman_or_zero(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman correlation of ``a`` and ``b``; 0 when either does not vary (it ranks nothing)."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(spearmanr(a, b).statistic)


def load_starts(root: str, tasks: list[str], per_task: int) -> dict[int, list[tuple[int, int]]]:
    """Per task index, the first ``per_task`` starts as (episode index among the task's episodes, the way
    ``WorldModelEnv`` numbers them; Meta-World layout id)."""
    from toolkits.episodes import EpisodeDataset

    data = EpisodeDataset(root, tasks=tasks)
    starts: dict[int, list[tuple[int, int]]] = {t: [] for t in range(len(tasks))}
    for i in range(len(data)):
        meta = data.entries[i]  # index.json's copy of the episode's meta
        t = tasks.index(meta["task"])
        starts[t].append((len(starts[t]), int(meta["reset_state_id"])))
    short = {tasks[t]: len(s) for t, s in starts.items() if len(s) < per_task}
    if short:
        raise SystemExit(f"--starts {root}: fewer than --starts-per-task {per_task} episodes of {short}")
    return {t: s[:per_task] for t, s in starts.items()}


@torch.no_grad()
def play(
    env,
    obs: dict[str, Any],
    act,
    steps: int,
    scorer,
    start: torch.Tensor | None = None,
    probes: StateProbes | None = None,
) -> dict[str, Any]:
    """Play one episode per env from ``obs`` (the envs were just reset): ``act(k, obs)`` gives chunk k.
    Per env: success, return, the score of the start (``start``: the env's own, else the reward model's
    of the start frame), the highest and the last score while alive (the env's own ``info['scores']``
    where it has them, else ``scorer`` on the observed frames), the ``probes``' readings of the observed
    states where it has them (the highest success score; the reward heads' return of the chunk-end states and
    the sum of their spread there, both x the chunk), the return of each chunk's last reward x the chunk, the
    state model's disagreement at the end, and the actions taken."""
    probes = probes or StateProbes()
    n, first = env.num_envs, obs["images"]
    alive, success = np.ones(n, bool), np.zeros(n, bool)
    ret, head_ret, end_ret = np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32)
    head_spread = np.zeros(n, np.float32)
    zeros = np.zeros(n, np.float32)
    start_frame = scorer.score(obs["images"][:, None], obs["prompt"])[:, 0].numpy() if scorer else zeros
    begin = start_frame if start is None else start.numpy()
    best, last = begin.copy(), begin.copy()
    best_state = probes.score(obs).numpy() if probes.score is not None else np.zeros(n, np.float32)
    disagreement = np.zeros(n, np.float32)
    actions = []
    for k in range(-(-steps // env.chunk)):
        chunk = act(k, obs).clamp(-1, 1)
        actions.append(chunk)
        obs, rewards, terminated, truncated, info = env.chunk_step(chunk)
        if "scores" in info:
            scores = info["scores"].max(1).values.numpy()
        else:
            scores = scorer.score(obs["images"][:, None], obs["prompt"])[:, 0].numpy() if scorer else zeros
        ret += np.where(alive, rewards.sum(1).numpy(), 0.0)
        end_ret += np.where(alive, rewards[:, -1].numpy() * env.chunk, 0.0)
        if probes.reward is not None:
            head_ret += np.where(alive, probes.reward(obs).numpy() * env.chunk, 0.0)
        if probes.spread is not None:
            head_spread += np.where(alive, probes.spread(obs).numpy() * env.chunk, 0.0)
        best = np.where(alive, np.maximum(best, scores), best)
        last = np.where(alive, scores, last)
        if probes.score is not None:
            best_state = np.where(alive, np.maximum(best_state, probes.score(obs).numpy()), best_state)
        if "uncertainty" in info:
            disagreement = np.where(alive, info["uncertainty"].numpy(), disagreement)
        success |= alive & terminated.numpy()
        if "episode" in info:  # episodes that do not end at success (ignore_terminations) report it here
            ended = info["episode"]["env_ids"].numpy()
            success[ended] |= alive[ended] & info["episode"]["success_once"].numpy().astype(bool)
        alive &= ~(terminated | truncated).numpy()
        if not alive.any():
            break
    return {"success": success, "return": ret, "max_score": best, "last_score": last, "start_score": start_frame,
            "max_state_score": best_state, "head_return": head_ret, "chunk_end_return": end_ret,
            "head_spread": head_spread,
            "disagreement": disagreement, "start_images": first,
            "actions": torch.cat(actions, 1)}  # fmt: skip


def assign_starts(
    task_ids: np.ndarray, starts: dict[int, list[tuple[int, int]]], samples: int, first: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per env: the Meta-World layout and the world-model env's episode index of its start, and whether
    its result counts. The ``samples`` envs of a group share a start; a task's groups take its starts
    ``first``, ``first + 1``, ...; past the task's last start a group repeats it and does not count."""
    n = len(task_ids)
    layouts, ep_ids, keep = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
    cursor: dict[int, int] = defaultdict(lambda: first)
    for g in range(n // samples):
        envs = slice(g * samples, (g + 1) * samples)
        t = int(task_ids[g * samples])
        s = cursor[t]
        cursor[t] += 1
        ep_ids[envs], layouts[envs] = starts[t][min(s, len(starts[t]) - 1)]
        keep[envs] = s < len(starts[t])
    return layouts, ep_ids, keep


def play_round(
    policy, real_env, wm_env, layouts: np.ndarray, ep_ids: np.ndarray, seed: int, steps: int, threshold: float
) -> dict[str, dict[str, Any]]:
    """Every arm's episodes from one batch of starts (``layouts`` in Meta-World, ``ep_ids`` in imagination)."""
    c = wm_env.chunk
    scorer = wm_env.scorer  # None (no reward model) or one that does not know the tasks: no reward-model arms
    if scorer is not None and scorer.cfg.prompts and not set(wm_env.prompts) <= set(scorer.cfg.prompts):
        scorer = None

    def sampled(k: int, obs: dict[str, Any]) -> torch.Tensor:
        return policy.predict(obs, mode="train").actions

    def imagine(act, n_steps: int = steps) -> dict[str, Any]:
        obs, info = wm_env.reset(reset_state_ids=torch.as_tensor(ep_ids))
        return play(wm_env, obs, act, n_steps, scorer, start=info["scores"])

    obs, _ = real_env.reset(reset_state_ids=torch.as_tensor(layouts))
    torch.manual_seed(seed)
    probes = StateProbes.of(wm_env)
    real = play(real_env, obs, sampled, steps, scorer, probes=probes)
    torch.manual_seed(seed)  # the same policy noise draws as in Meta-World
    imagined = imagine(sampled)
    taken = real["actions"]
    start = imagined["start_score"]  # the reward model's score of the start frame
    arms = {
        "real": real,
        "imagined": imagined,
        "imagined, real actions": imagine(lambda k, obs: taken[:, k * c : (k + 1) * c], taken.shape[1]),
        "zero actions": imagine(lambda k, obs: torch.zeros_like(taken[:, :c])),
    }
    dreamt = imagined["actions"]
    obs, _ = real_env.reset(reset_state_ids=torch.as_tensor(layouts))
    arms[REPLAY_ARM] = play(
        real_env, obs, lambda k, obs: dreamt[:, k * c : (k + 1) * c], dreamt.shape[1], None
    )
    if scorer is not None:  # the reward model's baselines, where it knows the tasks
        arms["start frame"] = {"return": start, "max_score": start, "success": start >= threshold}
        arms["reward model, real frames"] = {
            "return": real["last_score"], "max_score": real["max_score"], "success": real["max_score"] >= threshold,
        }  # fmt: skip
    if probes.score is not None:
        best = real["max_state_score"]
        arms[STATE_ARM] = {"return": best, "max_score": best, "success": best >= threshold}
    if probes.reward is not None:  # returns only: these arms score no success of their own
        for arm, key in zip(HEAD_ARMS, ("head_return", "chunk_end_return"), strict=True):
            arms[arm] = {"return": real[key], "max_score": real[key]}
        arms[HEAD_ARMS[0]]["head_spread"] = real["head_spread"]
    return arms


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="rl_release_video", help="a job whose env.train is a world-model env")
    p.add_argument(
        "--starts", required=True, help="recorded episodes of the tasks: frame 0 and layout of each"
    )
    p.add_argument("--starts-per-task", type=int, default=9)
    p.add_argument("--samples", type=int, default=4, help="policy samples per start")
    p.add_argument("--episode-steps", type=int, default=150, help="actions per episode (the task's horizon)")
    p.add_argument("--starts-per-round", type=int, default=3, help="starts per task played at once")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    from toolkits.base.cli import parse_with_overrides

    args, overrides = parse_with_overrides(p, argv)  # key=value overrides anywhere among the options
    torch.set_num_threads(args.threads)

    from policy_and_value.config import load_config
    from policy_and_value.envs.base import env_task_names
    from policy_and_value.envs.metaworld_env import MetaWorldEnv
    from policy_and_value.models.registry import make_policy
    from world_models.env import WorldModelEnv

    cfg = load_config(args.config, overrides)
    wcfg, rcfg = cfg.env.train, cfg.env.eval
    if wcfg.env_type != "world_model" or rcfg.env_type != "metaworld":
        raise SystemExit(
            f"--config {args.config}: env.train must be world_model and env.eval metaworld "
            f"(got {wcfg.env_type}, {rcfg.env_type})"
        )
    for key in ("tasks", "cameras", "image_size", "state_type", "num_action_chunks"):
        if getattr(wcfg, key) != getattr(rcfg, key):
            raise SystemExit(
                f"env.train.{key}={getattr(wcfg, key)} and env.eval.{key}={getattr(rcfg, key)} differ"
            )
    tasks = list(wcfg.tasks)
    starts = load_starts(args.starts, tasks, args.starts_per_task)
    per_round = min(args.starts_per_round, args.starts_per_task)
    n = len(tasks) * per_round * args.samples
    common = {"num_envs": n, "auto_reset": False, "max_episode_steps": args.episode_steps,
              "group_size": args.samples, "use_fixed_reset_state_ids": False}  # fmt: skip
    imagined = {
        "reset_mode": "episode_start",
        "dynamics_model_image_root": args.starts,
        "visualize_wm_pred": False,
    }
    wm_env = WorldModelEnv(wcfg.model_copy(update={**common, **imagined}), n, seed=args.seed)
    real_env = MetaWorldEnv(rcfg.model_copy(update={**common, "reward_signal": "dense"}), n, seed=args.seed)
    if env_task_names(wm_env) != env_task_names(real_env):
        raise SystemExit("the world-model and Meta-World envs assign tasks differently")
    policy = make_policy(
        cfg.model, wm_env.spec, cfg.algorithm.logprob_type, cfg.algorithm.reward_type == "action_level",
        model_dir=cfg.rollout.model_dir,
    )  # fmt: skip
    policy.eval()

    results: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    task_of: list[int] = []
    begin = time.time()
    n_rounds = -(-args.starts_per_task // per_round)
    for r in range(n_rounds):
        layouts, ep_ids, keep = assign_starts(wm_env.task_ids, starts, args.samples, r * per_round)
        task_of += [int(t) for t in wm_env.task_ids[keep][:: args.samples]]
        arms = play_round(
            policy, real_env, wm_env, layouts, ep_ids, args.seed * 1000 + r, args.episode_steps,
            wcfg.success_threshold,
        )  # fmt: skip
        for name, res in arms.items():
            for key in ("return", "max_score", "success", "disagreement", "head_spread"):
                if key in res:
                    results[name][key].extend(np.asarray(res[key])[keep].tolist())
        gap = (arms["real"]["start_images"].float() - arms["imagined"]["start_images"].float()).abs().mean()
        print(
            f"round {r + 1}/{n_rounds}: start frames differ by {gap:.2f}/255, real success {arms['real']['success'][keep].mean():.2f}, imagined "
            f"{arms['imagined']['success'][keep].mean():.2f} ({time.time() - begin:.0f} s)", flush=True,
        )  # fmt: skip
    real_env.close()
    wm_env.close()
    report(results, np.repeat(task_of, args.samples), args.samples, tasks)
    print(f"\n{len(task_of)} starts x {args.samples} samples, {args.episode_steps}-step episodes, "
          f"{time.time() - begin:.0f} s")  # fmt: skip
    return 0


def report(results: dict[str, dict[str, list]], task_of: np.ndarray, samples: int, tasks: list[str]) -> None:
    """Print the agreement table over all starts, the AUC per task, and (with a state model) the AUC of the
    imagined episodes its members agree on against the rest."""
    succ = np.asarray(results["real"]["success"], bool)
    mw = np.asarray(results["real"]["return"], np.float32)
    groups = [slice(s, s + samples) for s in range(0, len(succ), samples)]
    mixed = [g for g in groups if 0 < succ[g].sum() < samples]
    print(f"\nreal success {succ.mean():.2f} over {len(succ)} episodes; {len(mixed)} of {len(groups)} starts "
          f"with mixed outcomes\n")  # fmt: skip
    print(
        "| arm | AUC | AUC return | spearman succ | spearman MW | spread | success |\n|---|---|---|---|---|---|---|"
    )
    arms = [a for a in [*ARMS, STATE_ARM, *HEAD_ARMS] if a in results]
    for arm in ["real", *arms]:
        ret = np.asarray(results[arm]["return"], np.float32)
        score = np.asarray(results[arm]["max_score"], np.float32)
        rho_s = (
            np.mean([spearman_or_zero(ret[g], succ[g].astype(np.float32)) for g in mixed])
            if mixed
            else np.nan
        )
        rho_mw = np.mean([spearman_or_zero(ret[g], mw[g]) for g in groups])
        spread = np.mean([ret[g].std() for g in groups])
        scored = (
            arm != "real" or "reward model, real frames" in results
        )  # the real episodes' frames were scored
        auc_score = f"{auc(score, succ):.3f}" if scored else "-"
        success = f"{np.mean(results[arm]['success']):.2f}" if results[arm].get("success") else "-"
        print(f"| {arm} | {auc_score} | {auc(ret, succ):.3f} | {rho_s:.3f} | {rho_mw:.3f} | "
              f"{spread:.4f} | {success} |")  # fmt: skip
    print("\nAUC (episode score for real success) per task\n")
    print("| task | real success | " + " | ".join(arms) + " |\n|---|---|" + "---|" * len(arms))
    for t, task in enumerate(tasks):
        m = task_of == t
        cells = [f"{auc(np.asarray(results[a]['max_score'])[m], succ[m]):.3f}" for a in arms]
        print(f"| {task} | {succ[m].mean():.2f} | " + " | ".join(cells) + " |")
    print("\nwithin-start Spearman with Meta-World's return (mean return) per task\n")
    print("| task | real | " + " | ".join(arms) + " |\n|---|---|" + "---|" * len(arms))
    for t, task in enumerate(tasks):
        mine = [g for g in groups if task_of[g.start] == t]
        cells = []
        for a in arms:
            ret = np.asarray(results[a]["return"], np.float32)
            rho = np.mean([spearman_or_zero(ret[g], mw[g]) for g in mine])
            cells.append(f"{rho:.3f} ({np.mean([ret[g].mean() for g in mine]):.4g})")
        print(f"| {task} | {np.mean([mw[g].mean() for g in mine]):.4g} | " + " | ".join(cells) + " |")
    doubt = np.asarray(results["imagined"].get("disagreement", []), np.float32)
    if doubt.size and doubt.max() > 0:  # the hallucination filter's gauge
        score = np.asarray(results["imagined"]["max_score"], np.float32)
        trusted = doubt <= np.median(doubt)
        print(f"\nimagined episodes by the state model's final disagreement (median {np.median(doubt):.3f}): "
              f"AUC {auc(score[trusted], succ[trusted]):.3f} where the members agree (<= median), "
              f"{auc(score[~trusted], succ[~trusted]):.3f} on the rest")  # fmt: skip
    if HEAD_ARMS[0] in results:
        report_head_doubt(results, task_of, tasks)
    report_own_actions(results, task_of, samples, tasks)


def report_own_actions(
    results: dict[str, dict[str, list]], task_of: np.ndarray, samples: int, tasks: list[str]
) -> None:
    """Per task: does imagination predict what the actions it chose do in Meta-World (replayed open loop from
    the same layout)? Imagined against real success, the AUC of the imagined episode score for the replay's
    success, and the within-start Spearman of the imagined return with the replay's dense return. High here
    and low against the policy's own real episodes: the closed loop parts them, not the model's accuracy on
    its own rollouts."""
    imagined, replay = results["imagined"], results[REPLAY_ARM]
    score = np.asarray(imagined["max_score"], np.float32)
    ret = np.asarray(imagined["return"], np.float32)
    r_ret = np.asarray(replay["return"], np.float32)
    r_succ = np.asarray(replay["success"], bool)
    print(
        "\nimagination against the real consequences of its own actions (imagined actions replayed in Meta-World)\n"
    )
    print(
        "| task | imagined success | replayed success | AUC | within-start Spearman |\n|---|---|---|---|---|"
    )
    for t, task in [*enumerate(tasks), (-1, "all")]:
        m = task_of == t if t >= 0 else np.ones(len(task_of), bool)
        groups = [slice(s, s + samples) for s in range(0, len(m), samples) if m[s]]
        rho = np.mean([spearman_or_zero(ret[g], r_ret[g]) for g in groups])
        print(f"| {task} | {np.mean(np.asarray(imagined['success'], bool)[m]):.2f} | {r_succ[m].mean():.2f} | "
              f"{auc(score[m], r_succ[m]):.3f} | {rho:.3f} |")  # fmt: skip


def report_head_doubt(results: dict[str, dict[str, list]], task_of: np.ndarray, tasks: list[str]) -> None:
    """Per task: how much more the reward head credits the real episodes than Meta-World does at the same
    chunk ends, the reward heads' spread over them, and whether the spread finds the over-credited episodes
    (Spearman over the task's episodes of spread against excess): can a penalty on the spread stop the policy
    exploiting the head (``env.train.reward_uncertainty_penalty``)?"""
    head = np.asarray(results[HEAD_ARMS[0]]["return"], np.float32)
    truth = np.asarray(results[HEAD_ARMS[1]]["return"], np.float32)
    spread = np.asarray(results[HEAD_ARMS[0]]["head_spread"], np.float32)
    print("\nthe reward heads' spread on the real episodes (episode sums at chunk ends x the chunk)\n")
    print("| task | head return | Meta-World return | excess | heads' spread | Spearman spread vs excess |")
    print("|---|---|---|---|---|---|")
    for t, task in enumerate(tasks):
        m = task_of == t
        excess = head[m] - truth[m]
        rel = excess.mean() / max(abs(truth[m].mean()), 1e-6)
        print(f"| {task} | {head[m].mean():.4g} | {truth[m].mean():.4g} | {excess.mean():+.4g} ({rel:+.0%}) | "
              f"{spread[m].mean():.4g} | {spearman_or_zero(spread[m], excess):.3f} |")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
