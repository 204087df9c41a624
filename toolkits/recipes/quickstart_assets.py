"""Rebuild the starting models of the video loop (``rl_release_video``, ``assets/quickstart``) from scratch: collect
episodes -> reward model -> advantage labels ->
imitation policy (+ its deploy.json, a few of its labelled episodes as the offline anchor) -> world model (VAE,
denoiser).

    worldrl recipe quickstart-assets [--out logs/quickstart_assets] [--episodes 40] ...

The defaults are the shipped recipe; the world model is the slow stage on a CPU (hours; about 11 minutes on one
H100). At the end it prints the overrides that point ``configs/rl_release_video.yaml`` at the rebuilt models. (The
observation-only quickstart's models: ``worldrl recipe outcome-start --state-type proprio`` and
``worldrl recipe observation-model --encoder learned --value-head``, see their cards in ``assets/``.)
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field, PositiveInt

from toolkits.base.cli import tool_prog
from toolkits.recipes.args import RecipeArgs, recipe_main
from toolkits.recipes.stages import Stages

TASKS = ["reach-v3", "drawer-close-v3", "button-press-topdown-v3"]
CAMERAS = ["corner", "gripperPOV"]
COLLECT = "toolkits.collect_episodes"


class Args(RecipeArgs):
    out: str = Field("logs/quickstart_assets", description="a new folder for everything the recipe makes")
    episodes: PositiveInt = Field(40, description="episodes collected a task (30% made to fail)")
    rm_steps: PositiveInt = Field(2000, description="reward model training steps")
    il_steps: PositiveInt = Field(3000, description="imitation training steps")
    vae_steps: PositiveInt = Field(3000, description="the world model's VAE training steps")
    dyn_steps: PositiveInt = Field(4500, description="the world model's denoiser training steps")


def run(args: Args) -> Stages:
    """Every stage in order; each is one tool's command line."""
    out, s = args.out, Stages("quickstart-assets")
    Path(out).mkdir(parents=True)
    common = ["--tasks", *TASKS, "--action-noise", "0.1", "--cameras", *CAMERAS]
    s.tool("collect episodes", COLLECT, [*common, "--episodes-per-task", str(args.episodes), "--fail-fraction", "0.3",
           "--seed", "7", "--num-envs", "8", "--out", f"{out}/episodes"])  # fmt: skip
    s.tool("collect reset episodes", COLLECT, [*common, "--episodes-per-task", "2", "--fail-fraction", "0",
           "--seed", "11", "--num-envs", "6", "--out", f"{out}/reset_episodes"])  # fmt: skip
    s.tool("reward model", "reward_models.train", ["reward/progress_tiny", f"data.path={out}/episodes",
           f"output_dir={out}/rm", f"train.max_steps={args.rm_steps}"])  # fmt: skip
    s.tool("advantage labels", "reward_models.label", ["--model-dir", f"{out}/rm/model", "--data", f"{out}/episodes",
           "--out", f"{out}/episodes_labelled"])  # fmt: skip
    s.tool("imitation policy", "policy_and_value.offline.train_sft", ["offline/sft_pi0_tiny",
           f"data.path={out}/episodes_labelled", "data.success_only=false", "model.pi0.with_advantage_condition=true",
           f"output_dir={out}/sft", f"train.max_steps={args.il_steps}"])  # fmt: skip
    s.tool(
        "deploy.json",
        "toolkits.deploy.spec",
        ["--policy-dir", f"{out}/sft/policy", "--env", "metaworld_3tasks"],
    )
    s.tool("offline anchor episodes", "toolkits.episodes.subset", ["--data", f"{out}/episodes_labelled", "--out",
           f"{out}/offline_episodes", "--per-task", "3", "--failed-per-task", "1"])  # fmt: skip
    s.tool("world model: VAE", "world_models.train", [f"data.path={out}/episodes", f"output_dir={out}/wm_vae",
           f"train.vae_steps={args.vae_steps}", "train.dynamics_steps=0", "train.batch_size=32"])  # fmt: skip
    s.tool("world model: denoiser", "world_models.train", [f"data.path={out}/episodes", f"output_dir={out}/wm",
           f"init_model_dir={out}/wm_vae/model", "train.vae_steps=0", f"train.dynamics_steps={args.dyn_steps}"])  # fmt: skip
    s.log(f"run the video loop on them:\n  bash scripts/run_embodiment.sh rl_release_video rollout.model_dir={out}/sft/policy "
          f"env.train.dynamics_model_config={out}/wm/model env.train.reward_model_config={out}/rm/model "
          f"env.train.dynamics_model_image_root={out}/reset_episodes algorithm.offline_data_path={out}/offline_episodes")  # fmt: skip
    return s


def main(argv: list[str] | None = None) -> int:
    return recipe_main(Args, run, argv, tool_prog("toolkits.recipes.quickstart_assets"), __doc__)


if __name__ == "__main__":
    sys.exit(main())
