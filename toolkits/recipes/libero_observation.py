"""The LIBERO-Object observation model from what a robot records: expert demonstrations on the first 25 init states of
each task -> the imitation start (``libero-loop``'s stages) -> its own rollouts there, failures included -> a VAE of the
two cameras -> the observation model (design A: proprioception and 256 principal components of the frames' VAE
latents, success and value heads on the episodes' outcomes; ``--encoder learned`` for design B's learned code) -> the
start's rollouts on the last 25 init states, never trained on. With ``--plans N``: the start's plans made in that model
(``collect_episodes --imagine``) replayed in LIBERO on the training init states -> a warm refit on them
(``plans_model``, what RL then trains in) -> its plans on the held-out init states, replayed (``heldout_plans``:
``experiments.harness.plan_outcomes`` gauges how imagination ranks them).

    worldrl recipe libero-observation-model [--out data/libero_obs] [--episodes 10] [--rollouts 20] [--plans 16] ...

Nothing the model trains on is simulator state or reward (``setting=observation_only``): LIBERO's 8 proprioception
numbers, both cameras, actions and each episode's success. A re-run with the same ``--out`` skips the stages whose
outputs exist. The configs ``rl_libero_obs_value`` (the ceiling in LIBERO) and ``rl_libero_obs_wm_value`` (the same
recipe in this model) read its default paths; ``experiments.harness.value_auc`` gauges the value head on the held-out
rollouts (experiments/reports/observation_only.md). Needs ``make install-libero``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt

from toolkits.base.cli import tool_prog
from toolkits.recipes.args import RecipeArgs, recipe_main, require_dir
from toolkits.recipes.libero_loop import TASKS
from toolkits.recipes.stages import Stages, tool_step

COLLECT = "toolkits.collect_episodes"
STATE_MODEL = "world_models.train_state_model"
# the job whose world-model env the policy plans in (its paths set to this --out's)
WORLD_JOB = "rl_libero_obs_wm_value"


class Args(RecipeArgs):
    out: str = Field(
        "data/libero_obs", description="the folder for everything it makes (a re-run continues there)"
    )
    episodes: PositiveInt = Field(10, description="expert demonstrations a task (20% made to fail)")
    episodes_dir: str | None = Field(
        None, description="demonstrations recorded before (episode format), used instead of collecting"
    )
    max_episode_steps: PositiveInt = Field(220, description="every collected episode's step limit")
    rm_steps: PositiveInt = Field(600, description="the imitation start's reward model training steps")
    il_steps: PositiveInt = Field(6000, description="imitation training steps")
    rollouts: PositiveInt = Field(20, description="the start's rollouts a task on the training init states")
    heldout: PositiveInt = Field(
        10, description="its rollouts a task on the held-out init states (the gauge's)"
    )
    noise: float = Field(0.5, ge=0.0, description="the rollouts' flow-SDE noise (RL's exploration)")
    vae_steps: PositiveInt = Field(500, description="the cameras' VAE training steps")
    steps: PositiveInt = Field(1500, description="the observation model's training steps")
    components: PositiveInt = Field(256, description="numbers of the frames' code in the model's state")
    encoder: Literal["pca", "learned"] = Field(
        "pca", description="the frames' code: the latents' principal components (A) or a learned encoder (B)"
    )
    plans: NonNegativeInt = Field(
        0, description="the start's imagined plans a task replayed in LIBERO, then a refit on them (0: none)"
    )
    plan_steps: PositiveInt = Field(500, description="training steps of the refit on the plans")

    def check(self) -> None:
        """The demonstrations given exist, before any work (``--out`` may exist: a re-run continues there)."""
        if self.episodes_dir is not None:
            require_dir("--episodes-dir", self.episodes_dir, "index.json", "an episode directory")


def plan(args: Args) -> list[tuple[str, str, Callable[[Stages, str], None]]]:
    """(stage, the output whose existence marks it done, how to run it) in order."""
    out, demos = args.out, args.episodes_dir or f"{args.out}/episodes"

    def collect(episodes: int, starts: str, seed: int, policy: list[str], dst: str) -> list[str]:
        return ["--suite", "libero_object", "--tasks", *TASKS, "--episodes-per-task", str(episodes), "--num-envs", "6",
                "--image-size", "64", "--max-episode-steps", str(args.max_episode_steps), "--seed", str(seed), "--start-states", starts,
                *policy, "--out", dst]  # fmt: skip

    policy = ["--policy-dir", f"{out}/sft/policy", "--noise-level", str(args.noise)]
    observation_model = ["setting=observation_only", "data.state_type=proprio", "model.reward_head=false",
        "train.success_labels=episode_end", f"model.latent_components={args.components}", f"model.latent_encoder={args.encoder}",
        "model.value_head=true", f"render.dynamics_model_dir={out}/vae/model", f"render.latent_cache={out}/latent_cache"]  # fmt: skip

    def planned_in(model: str) -> list[str]:  # the policy plans in ``model``, its actions replayed in LIBERO
        return [*policy, "--imagine", WORLD_JOB, f"env.train.state_model_config={model}",
                f"env.train.dynamics_model_config={out}/vae/model", f"env.train.dynamics_model_image_root={demos}"]  # fmt: skip

    stages = [
        ("imitation start", f"{out}/sft/policy", tool_step("toolkits.recipes.libero_loop", [
         "--out", out, "--episodes-dir", demos, "--rm-steps", str(args.rm_steps), "--il-steps", str(args.il_steps),
         "--stop-after", "imitation policy"])),
        ("policy rollouts", f"{out}/rollouts", tool_step(COLLECT,
         collect(args.rollouts, "train", 5, policy, f"{out}/rollouts"))),
        ("VAE", f"{out}/vae/model", tool_step("world_models.train", ["world_model/ltx_libero",
         f"data.path={demos}", f"output_dir={out}/vae", f"train.vae_steps={args.vae_steps}",
         "train.dynamics_steps=0", f"train.save_interval={args.vae_steps}"])),
        ("merge", f"{out}/data", tool_step("toolkits.episodes.merge",
         ["--data", demos, f"{out}/rollouts", "--out", f"{out}/data"])),
        ("observation model", f"{out}/observation_model/model", tool_step(STATE_MODEL, [
         f"data.path={out}/data", f"output_dir={out}/observation_model", *observation_model, f"train.steps={args.steps}"])),
        ("held-out rollouts", f"{out}/heldout_rollouts", tool_step(COLLECT,
         collect(args.heldout, "heldout", 9, policy, f"{out}/heldout_rollouts"))),
    ]  # fmt: skip
    if args.plans:
        stages += [
            ("imagined plans", f"{out}/plans", tool_step(COLLECT,
             collect(args.plans, "train", 13, planned_in(f"{out}/observation_model/model"), f"{out}/plans"))),
            ("merge plans", f"{out}/plan_data", tool_step("toolkits.episodes.merge",
             ["--data", f"{out}/data", f"{out}/plans", "--out", f"{out}/plan_data"])),
            ("refit on plans", f"{out}/plans_model/model", tool_step(STATE_MODEL, [
             f"data.path={out}/plan_data", f"output_dir={out}/plans_model", f"init_model_dir={out}/observation_model/model",
             *observation_model, f"train.steps={args.plan_steps}"])),
            ("held-out plans", f"{out}/heldout_plans", tool_step(COLLECT,
             collect(args.heldout, "heldout", 9, planned_in(f"{out}/plans_model/model"), f"{out}/heldout_plans"))),
        ]  # fmt: skip
    if args.episodes_dir is None:
        expert = ["--action-noise", "0.05", "--fail-fraction", "0.2"]
        stages.insert(0, ("demonstrations", demos, tool_step(COLLECT,
                                                        collect(args.episodes, "train", 7, expert, demos))))  # fmt: skip
    return stages


def run(args: Args) -> Stages:
    """The stages not done yet, in order."""
    Path(args.out).mkdir(parents=True, exist_ok=True)
    s = Stages("libero-observation-model")
    s.run_plan(plan(args))
    s.log(f"gauge the value head: python -m experiments.harness.value_auc --model {args.out}/observation_model/model "
          f"--vae {args.out}/vae/model --episodes {args.out}/heldout_rollouts")  # fmt: skip
    if args.plans:
        s.log(
            f"gauge the plans: python -m experiments.harness.plan_outcomes --episodes {args.out}/heldout_plans; RL "
            f"in the refitted model: worldrl train {WORLD_JOB} env.train.state_model_config={args.out}/plans_model/model"
        )
    return s


def main(argv: list[str] | None = None) -> int:
    return recipe_main(Args, run, argv, tool_prog("toolkits.recipes.libero_observation"), __doc__)


if __name__ == "__main__":
    sys.exit(main())
