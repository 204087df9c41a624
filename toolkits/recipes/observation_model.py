"""The observation model of ``rl_metaworld_obs_wm_20demo`` from what a robot records: the observation-only start's
own rollouts (failures included) added to its demonstrations -> the model (proprioception and the principal
components of the cameras' VAE latents, a success head on the episodes' outcomes) -> start frames on the training
layouts -> the gauge on layouts never trained on.

    worldrl recipe observation-model --out data/obs_wm [--policy-dir data/obs_start20/sft/policy] ...

Nothing it trains on is simulator state or reward: the rollouts' recorded states are read as proprioception only
(``data.state_type=proprio``) and success as each episode's outcome (``train.success_labels=episode_end``); the
setting check of ``world_models.train_state_model`` refuses anything else. OUT/model/model is the model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveInt

from toolkits.base.cli import tool_prog
from toolkits.recipes.args import RecipeArgs, recipe_main, require_dir
from toolkits.recipes.outcome_tasks import (
    CAMERAS,
    COLLECT,
    TASKS,
    GaugeArgs,
    check_tasks,
    gauge_starts,
    outcome_gauge,
)  # fmt: skip
from toolkits.recipes.stages import Stages

STATE_MODEL = "world_models.train_state_model"
VAE = "assets/world_models/tiny_3tasks"  # the video model whose VAE encodes and decodes the frames
CONFIG = "rl_metaworld_obs_wm_20demo"  # the RL job that imagines with it
START = (
    "data/obs_start20"  # worldrl recipe outcome-start --out data/obs_start20 --demos 20 --state-type proprio
)


class Args(GaugeArgs):
    out: str = Field("data/obs_wm", description="a new folder for everything the recipe makes")
    policy_dir: str = Field(
        f"{START}/sft/policy", description="the observation-only policy whose rollouts it learns"
    )
    demos: str = Field(f"{START}/demos", description="its demonstrations (episodes), also trained on")
    episodes: PositiveInt = Field(60, description="the policy's rollouts a task, on the training layouts")
    noise: float = Field(0.5, ge=0.0, description="their flow-SDE noise (RL's exploration)")
    components: PositiveInt = Field(
        64, description="principal components of the frames' latents in the state"
    )
    encoder: Literal["pca", "learned"] = Field(
        "pca", description="the latent numbers: principal components (design A) or a learned code (design B)"
    )
    value_head: bool = Field(
        False, description="also learn the discounted chance of success (reward_mode: value)"
    )
    steps: PositiveInt = Field(1500, description="training steps")
    starts: PositiveInt = Field(16, description="start frames a task on the training layouts (imagination's)")
    tasks: list[str] = Field(
        TASKS, description="Meta-World tasks: the policy's (its start was built on them)"
    )

    def check(self) -> None:
        """The tasks are Meta-World's, the policy and the demonstrations exist, before any work."""
        check_tasks(self.tasks)
        require_dir("--policy-dir", self.policy_dir, "config.json", "a policy directory")
        require_dir("--demos", self.demos, "index.json", "an episode dataset")
        RecipeArgs.check(self)


def run(args: Args) -> Stages:
    """Every stage in order; each is one tool's command line."""
    out, s = args.out, Stages("observation-model")
    Path(out).mkdir(parents=True)
    s.tool("policy rollouts", COLLECT, ["--tasks", *args.tasks, "--episodes-per-task", str(args.episodes), "--cameras",
           *CAMERAS, "--seed", "5", "--num-envs", "12", "--policy-dir", args.policy_dir, "--noise-level",
           str(args.noise), "--out", f"{out}/rollouts"])  # fmt: skip
    s.tool(
        "merge", "toolkits.episodes.merge", ["--data", args.demos, f"{out}/rollouts", "--out", f"{out}/data"]
    )
    s.tool("observation model", STATE_MODEL, [f"data.path={out}/data", f"output_dir={out}/model",
           "setting=observation_only", "data.state_type=proprio", "model.reward_head=false",
           "train.success_labels=episode_end", f"model.latent_components={args.components}",
           f"render.dynamics_model_dir={VAE}", f"render.latent_cache={out}/latent_cache", f"train.steps={args.steps}",
           f"model.latent_encoder={args.encoder}", f"model.value_head={str(args.value_head).lower()}"])  # fmt: skip
    s.tool("start frames", COLLECT, ["--tasks", *args.tasks, "--episodes-per-task", str(args.starts), "--max-episode-steps",
           "4", "--cameras", *CAMERAS, "--seed", "11", "--num-envs", "12", "--layout-seed", "0", "--out", f"{out}/starts"])  # fmt: skip
    gauge_starts(s, args, f"{out}/gauge_starts", args.tasks)
    model = f"env.train.state_model_config={out}/model/model"
    image_root = f"env.train.dynamics_model_image_root={out}/starts"
    tasks = (
        [] if args.tasks == TASKS else [f"env.{e}.tasks=[{','.join(args.tasks)}]" for e in ("train", "eval")]
    )
    outcome_gauge(s, "gauge", args, CONFIG, f"{out}/gauge_starts", model, image_root,
                  f"rollout.model_dir={args.policy_dir}", f"algorithm.offline_data_path={args.demos}", *tasks)  # fmt: skip
    s.log(f"train with it:\n  worldrl train {CONFIG} {model} {image_root} {' '.join(tasks)}".rstrip())
    return s


def main(argv: list[str] | None = None) -> int:
    return recipe_main(Args, run, argv, tool_prog("toolkits.recipes.observation_model"), __doc__)


if __name__ == "__main__":
    sys.exit(main())
