"""Rebuild the state world model of ``rl_metaworld_outcome_wm`` (shipped in assets/world_models/state_outcome): the
starting policy's own rollouts -> state model + renderer -> reward head -> everything trained on together, longer
-> start frames on the training layouts -> the gauge on layouts never trained on.

    worldrl recipe state-outcome [--out logs/state_outcome] [--episodes 60] ...

OUT/train/model is the shipped state_outcome/model, OUT/long/model state_outcome/model_long; OUT/rollouts is
what ``coevolution.state_model_data`` takes. The defaults are the shipped recipe.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field, PositiveInt

from toolkits.base.cli import tool_prog
from toolkits.recipes.args import recipe_main
from toolkits.recipes.outcome_tasks import (
    CAMERAS,
    COLLECT,
    TASKS,
    GaugeArgs,
    gauge_starts,
    outcome_gauge,
    policy_rollouts,
)  # fmt: skip
from toolkits.recipes.stages import Stages

STATE_MODEL = "world_models.train_state_model"
RENDERER = "assets/world_models/tiny_3tasks"  # the video model whose VAE the renderer decodes with
START = "assets/metaworld_outcome/policy"  # the policy rl_metaworld_outcome_wm starts from


class Args(GaugeArgs):
    out: str = Field("logs/state_outcome", description="a new folder for everything the recipe makes")
    episodes: PositiveInt = Field(60, description="the start policy's rollouts a task")
    rollout_steps: PositiveInt | None = Field(
        None, description="a rollout's steps (default: Meta-World's 150)"
    )
    state_steps: PositiveInt = Field(1500, description="training steps of the states")
    render_steps: PositiveInt = Field(6000, description="training steps of the renderer")
    head_steps: PositiveInt = Field(3500, description="training steps of the reward head")
    long_steps: PositiveInt = Field(2000, description="steps of the longer training of every part")
    starts: PositiveInt = Field(16, description="start frames a task on the training layouts")


def run(args: Args) -> Stages:
    """Every stage in order; each is one tool's command line."""
    out, s = args.out, Stages("state-outcome")
    Path(out).mkdir(parents=True)
    train = [f"data.path={out}/rollouts"]
    # the policy rl_metaworld_outcome_wm starts from, sampled with its exploration noise, on training layouts
    policy_rollouts(s, "policy rollouts", START, args.episodes, 0.5, f"{out}/rollouts", args.rollout_steps)
    s.tool("state model", STATE_MODEL, [*train, f"output_dir={out}/states", f"train.steps={args.state_steps}",
           f"render.dynamics_model_dir={RENDERER}", f"render.steps={args.render_steps}", "model.reward_head=false"])  # fmt: skip
    # the reward head (rl_metaworld_dense_wm's shaped reward) on top, every other weight kept
    s.tool("reward head", STATE_MODEL, [*train, f"output_dir={out}/train", f"init_model_dir={out}/states/model",
           "train.parts=reward_head", f"train.steps={args.head_steps}"])  # fmt: skip
    # then states, success classifier, reward head and renderer together, warm-started: the gauge's bars need it
    s.tool("longer training", STATE_MODEL, [*train, f"output_dir={out}/long", f"init_model_dir={out}/train/model",
           f"train.steps={args.long_steps}", f"render.dynamics_model_dir={RENDERER}", f"render.steps={args.long_steps}"])  # fmt: skip
    s.tool("start frames", COLLECT, ["--tasks", *TASKS, "--episodes-per-task", str(args.starts), "--max-episode-steps",
           "4", "--cameras", *CAMERAS, "--seed", "11", "--num-envs", "12", "--layout-seed", "0", "--out", f"{out}/starts"])  # fmt: skip
    gauge_starts(s, args, f"{out}/gauge_starts")
    image_root = f"env.train.dynamics_model_image_root={out}/starts"
    outcome_gauge(s, "gauge", args, "rl_metaworld_outcome_wm", f"{out}/gauge_starts",
                  f"env.train.state_model_config={out}/train/model", image_root)  # fmt: skip
    # the longer-trained model on the same starts with the shaped reward, whole episodes (rl_metaworld_dense_wm)
    outcome_gauge(s, "dense gauge", args, "rl_metaworld_dense_wm", f"{out}/gauge_starts",
                  "env.eval.ignore_terminations=true", f"env.train.state_model_config={out}/long/model", image_root)  # fmt: skip
    s.log("train with it:\n  bash scripts/run_embodiment.sh rl_metaworld_outcome_wm "
          f"env.train.state_model_config={out}/train/model {image_root}")  # fmt: skip
    return s


def main(argv: list[str] | None = None) -> int:
    return recipe_main(Args, run, argv, tool_prog("toolkits.recipes.state_outcome"), __doc__)


if __name__ == "__main__":
    sys.exit(main())
