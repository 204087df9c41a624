"""How much does the policy act on what its frames show? Success in Meta-World with the frames it sees
replaced: why imagination's frames, not only its states, decide a closed-loop rollout.

    MUJOCO_GL=egl .venv/bin/python -m experiments.harness.policy_frame_dependence --config rl_release_video \\
        --starts data/gauge_starts [--starts-per-task 9] [--samples 4] [OVERRIDES] \\
        [--modes real frozen black vae rendered imagined_states]

From the wm_outcome_gauge.py starts (their Meta-World layouts) the config's policy plays ``--samples``
sampled 150-step episodes per start (LIBERO: ``--starts`` left out, the eval env's own init states, the same ones in
every mode) with the real state and: ``real`` frames; ``frozen``: the start frame
throughout; ``black``: zero images; ``vae``: the real frames encoded and decoded by
``env.train.dynamics_model_config``'s VAE (the best a renderer onto that VAE can do); ``rendered``: the frames
``env.train.state_model_config``'s renderer draws from the real state, as the world-model env of ``env.train``
draws them in imagination (``WorldModelEnv.render_states``, started from the real start with ``reset_to``:
with ``frames_from: state_residual`` shifted by the start frame's residual; an observation model draws them from its
code of the real frame and the real proprioception). ``rendered`` against ``vae`` is what the renderer
costs the policy with every state right. ``imagined_states`` turns it round: the real frames, but the state the
policy reads is the world-model env's, imagined from the real start through the same actions (``reset_to``, then
``chunk_step`` with every chunk the policy sends Meta-World): what imagination's states alone cost it. The same
policy noise draws in every mode. Prints success per task.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import torch

os.environ.setdefault("MUJOCO_GL", "egl")

MODES = ("real", "frozen", "black", "vae", "rendered", "imagined_states")
IMAGINED = ("rendered", "imagined_states")  # the modes that start a world-model env from each real start


def imagination_of(cfg, env, samples: int):
    """The world-model env of ``cfg.env.train`` with ``env``'s envs, each on the same task: it draws the frames of
    states as imagination does, and its dynamics model's VAE gives the ``vae`` frames."""
    from policy_and_value.envs.base import env_task_names
    from world_models.env import WorldModelEnv

    update = {"num_envs": env.num_envs, "group_size": samples, "auto_reset": False, "use_fixed_reset_state_ids": False,
              "visualize_wm_pred": False}  # fmt: skip
    wm = WorldModelEnv(cfg.env.train.model_copy(update=update), env.num_envs, seed=0)
    if env_task_names(wm) != env_task_names(env):
        raise SystemExit(f"env.train.tasks={wm.tasks} and env.eval.tasks={env.tasks} differ")
    return wm


@torch.no_grad()
def seen_images(mode: str, obs: dict, first: torch.Tensor, wm) -> torch.Tensor:
    """The frames the policy is shown in ``mode`` (``wm``: the world-model env, for ``vae`` and ``rendered``)."""
    from policy_and_value.envs.metaworld_tasks import select_state

    if mode == "frozen":
        return first
    if mode == "black":
        return torch.zeros_like(obs["images"])
    if mode == "vae":
        return wm.dynamics.decode(wm.dynamics.encode(obs["images"][:, None]))[:, 0]
    if mode == "rendered":
        if wm.state_model.cfg.latent_components:  # an observation model draws the code of the real frame
            return wm.render_states(wm.observed_states(obs)[:, None])[:, 0]
        return wm.render_states(select_state(obs["state"], wm.cfg.state_type)[:, None])[:, 0]
    return obs["images"]


def main() -> None:
    from experiments.harness.wm_outcome_gauge import assign_starts, load_starts

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="rl_release_video")
    p.add_argument("--starts", help="wm_outcome_gauge starts (Meta-World); LIBERO uses its eval init states")
    p.add_argument("--starts-per-task", type=int, default=9)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--episode-steps", type=int, default=150)
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES[:3]))
    from toolkits.base.cli import parse_with_overrides

    args, overrides = parse_with_overrides(p)  # key=value overrides anywhere among the options

    from policy_and_value.config import load_config
    from policy_and_value.envs.metaworld_tasks import select_state
    from policy_and_value.envs.registry import make_env
    from policy_and_value.models.registry import make_policy

    cfg = load_config(args.config, overrides)
    needs = {
        "vae": "dynamics_model_config",
        "rendered": "state_model_config",
        "imagined_states": "state_model_config",
    }
    for mode in set(args.modes) & set(needs):
        for key in ["dynamics_model_config", needs[mode]]:
            if not getattr(cfg.env.train, key):
                raise SystemExit(f"--modes {mode} needs env.train.{key} (set it, or leave {mode} out)")
    tasks = list(cfg.env.eval.tasks)
    libero = cfg.env.eval.env_type == "libero"
    if libero == bool(args.starts):
        raise SystemExit(f"--starts={args.starts}: give it for Meta-World, leave it out for LIBERO "
                         f"(env.eval.env_type={cfg.env.eval.env_type})")  # fmt: skip
    starts = None if libero else load_starts(args.starts, tasks, args.starts_per_task)
    per_round = 3
    n = len(tasks) * per_round * args.samples
    env_cfg = cfg.env.eval.model_copy(update={"num_envs": n, "auto_reset": False, "max_episode_steps": args.episode_steps,
                                              "group_size": args.samples, "use_fixed_reset_state_ids": False})  # fmt: skip
    env = make_env(env_cfg, n, seed=0)
    policy = make_policy(
        cfg.model, env.spec, cfg.algorithm.logprob_type, False, model_dir=cfg.rollout.model_dir
    )
    policy.eval()
    wm = imagination_of(cfg, env, args.samples) if set(args.modes) & set(needs) else None
    chunks = -(-args.episode_steps // env.chunk)
    print(f"| frames | success | {' | '.join(tasks)} |\n|---|---|" + "---|" * len(tasks))
    for mode in args.modes:
        success, task_of = [], []
        for r in range(-(-args.starts_per_task // per_round)):
            if libero:  # init states r * per_round ... of each task, the same in every mode
                layouts = (r * per_round + np.arange(n) // (args.samples * len(tasks))) % env.num_start_states
                keep = layouts < args.starts_per_task
            else:
                layouts, _, keep = assign_starts(env.task_ids, starts, args.samples, r * per_round)
            obs, _ = env.reset(reset_state_ids=torch.as_tensor(layouts))
            first = obs["images"].clone()
            if mode in IMAGINED:  # imagination from this start: its residual, its states
                imagined = wm.reset_to(first, select_state(obs["state"], wm.cfg.state_type))[0]
            torch.manual_seed(r)  # the same noise draws in every mode
            alive, done = np.ones(n, bool), np.zeros(n, bool)
            for _ in range(chunks):
                seen = {**obs, "images": seen_images(mode, obs, first, wm)}
                if mode == "imagined_states":
                    seen["state"] = imagined["state"]
                with torch.no_grad():
                    chunk = policy.predict(seen, mode="train").actions
                obs, _, terminated, truncated, _ = env.chunk_step(chunk.clamp(-1, 1))
                if mode == "imagined_states":
                    imagined = wm.chunk_step(chunk.clamp(-1, 1))[0]
                done |= alive & terminated.numpy()
                alive &= ~(terminated | truncated).numpy()
                if not alive.any():
                    break
            success.append(done[keep])
            task_of.append(np.asarray(env.task_ids)[keep])
        s, t = np.concatenate(success), np.concatenate(task_of)
        cells = " | ".join(f"{s[t == i].mean():.2f}" for i in range(len(tasks)))
        print(f"| {mode} | {s.mean():.3f} | {cells} |", flush=True)
    env.close()


if __name__ == "__main__":
    main()
