"""An episode dataset's frames redrawn as imagination draws them: the state model's renderer on every recorded state
(an observation model's: its decoding of each recorded frame's encoding and proprioception).

    .venv/bin/python -m world_models.render_episodes --config rl_metaworld_dense_wm_critic_20demo \\
        --data data/outcome_start20/demos --out data/outcome_start20/demos_rendered [key=value ...]

Each episode keeps its states, actions, rewards and success; its frames become the ones ``env.train``'s
world-model env shows the policy for those states (``WorldModelEnv.render_states`` after ``reset_to`` the
episode's first frame and state: with ``frames_from: state_residual`` shifted by that frame's residual).
Merged with the recorded frames (``toolkits.episodes.merge``), an imitation anchor
(``algorithm.offline_data_path``) teaches the policy the same actions on both kinds of frame, so what RL in
imagination teaches it on rendered frames carries over to the camera's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING

import torch

from toolkits.base.atomic import directory_written_atomically
from toolkits.episodes.format import Episode, EpisodeDataset, EpisodeWriter

if TYPE_CHECKING:
    from policy_and_value.config.schema import JobConfig
    from world_models.env import WorldModelEnv


@torch.no_grad()
def render_episode(wm_env: WorldModelEnv, ep: Episode, batch: int = 64) -> Episode:
    """``ep`` with its frames redrawn by ``wm_env`` (a one-env world-model env of the episode's task) from
    its states, started from its first frame and state."""
    from policy_and_value.envs.metaworld_tasks import select_state

    states = select_state(torch.from_numpy(ep.state), wm_env.cfg.state_type).float()
    images = torch.from_numpy(ep.images)
    wm_env.reset_to(images[:1], states[:1])
    if wm_env.state_model.cfg.latent_components:  # an observation model: its state of each recorded frame
        states = torch.cat(
            [
                wm_env.observed_states({"images": images[i : i + batch], "state": states[i : i + batch]})
                for i in range(0, len(states), batch)
            ]
        )
    frames = [wm_env.render_states(states[i : i + batch][None])[0] for i in range(0, len(states), batch)]
    return Episode(torch.cat(frames).numpy(), ep.state, ep.actions, ep.rewards, ep.success, ep.meta)


def render_dataset(cfg: JobConfig, src: str, dst: str) -> int:
    """Write every episode of ``src`` whose task ``cfg.env.train`` knows to the new directory ``dst`` with its
    frames redrawn (built beside it, then renamed); returns the number of episodes."""
    from world_models.env import WorldModelEnv

    if os.path.exists(dst):
        raise FileExistsError(f"--out {dst} exists; choose a new directory")
    wcfg = cfg.env.train
    if wcfg.env_type != "world_model" or wcfg.frames_from == "dynamics" or not wcfg.state_model_config:
        raise SystemExit(
            f"env.train must be a world-model env that draws frames from a state model (env_type world_model, "
            f"frames_from state or state_residual, state_model_config set); got env_type={wcfg.env_type}, "
            f"frames_from={wcfg.frames_from}, state_model_config={wcfg.state_model_config}"
        )
    data = EpisodeDataset(src, tasks=list(wcfg.tasks))
    if not len(data):
        raise SystemExit(f"--data {src}: no episodes of env.train.tasks {list(wcfg.tasks)}")
    envs: dict[str, WorldModelEnv] = {}  # one one-env world-model env per task (its renderer reads the task)
    dynamics = None  # loaded by the first, shared by the rest
    for t, task in enumerate(wcfg.tasks):
        one = wcfg.model_copy(update={"tasks": [task], "task_weights": None, "groups": [], "num_envs": 1, "group_size": 1,
                                      "auto_reset": False, "use_fixed_reset_state_ids": False, "visualize_wm_pred": False})  # fmt: skip
        envs[task] = WorldModelEnv(one, 1, seed=t, dynamics=dynamics)
        dynamics = envs[task].dynamics
    try:
        with directory_written_atomically(dst) as tmp:
            writer = EpisodeWriter(
                tmp, {**data.info, "rendered_from": src, "state_model": wcfg.state_model_config}
            )
            for i in range(len(data)):
                ep = data[i]
                writer.write(render_episode(envs[ep.meta["task"]], ep))
            writer.close(data.summary)
    finally:
        for env in envs.values():
            env.close()
    return len(data)


def main(argv: list[str] | None = None) -> int:
    """CLI: redraw ``--data`` into ``--out`` with the renderer of ``--config``'s world-model env."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--config", required=True, help="a job whose env.train is a world-model env with a renderer"
    )
    p.add_argument("--data", required=True, help="episode dataset to redraw")
    p.add_argument("--out", required=True, help="new directory")
    from toolkits.base.cli import parse_with_overrides

    args, overrides = parse_with_overrides(p, argv)  # key=value overrides anywhere among the options
    from policy_and_value.config import load_config
    from toolkits.base.errors import ConfigError

    begin = time.time()
    try:
        n = render_dataset(load_config(args.config, overrides), args.data, args.out)
    except (ConfigError, FileExistsError) as err:
        print(err, file=sys.stderr)
        return 2
    print(f"{n} episodes redrawn into {args.out} ({time.time() - begin:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
