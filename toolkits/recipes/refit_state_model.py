"""Align a state world model with a new starting policy (the data it is trained on should be the policy's own): the
policy's rollouts on the training layouts, sampled with RL's exploration noise -> added to the model's own training
rollouts -> a warm-started refit of every part (states, success classifier, reward head) and of the renderer
(-> optionally longer training of the states) (-> optionally the policy's episodes played in that model's
imagination with their actions replayed in Meta-World, added, and a further refit of the states) -> the gauge, on
layouts never trained on, for the model it started from and each one it made.

    worldrl recipe refit-state-model --policy-dir DIR [--out logs/state_refit] [--extra-data DIR ...] ...

The defaults are the recipe of assets/world_models/state_outcome20 (with ``--extra-data
data/outcome_start20/demos20``: the start's demonstrations show the reward head goal states the start rarely
reaches). OUT/model is the refitted model: point env.train.state_model_config at it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt

from toolkits.base.cli import tool_prog
from toolkits.base.errors import ConfigError
from toolkits.recipes.args import recipe_main, require_dir
from toolkits.recipes.outcome_tasks import (
    GaugeArgs,
    gauge_starts,
    imagined_plans,
    outcome_gauge,
    policy_rollouts,
)
from toolkits.recipes.stages import Stages

STATE_MODEL = "world_models.train_state_model"
MERGE = "toolkits.episodes.merge"
DEFAULT_BASE = "assets/world_models/state_outcome/model"  # the one whose rollouts this recipe can rebuild
BASE_POLICY = "assets/metaworld_outcome/policy"  # whose rollouts DEFAULT_BASE was trained on


class Args(GaugeArgs):
    policy_dir: str = Field(description="the new starting policy (a policy directory)")
    out: str = Field("logs/state_refit", description="a new folder for everything the recipe makes")
    base_model: str = Field(DEFAULT_BASE, description="the state model refitted")
    base_data: str | None = Field(
        None, description="its training episodes (default: rebuilt, only for the default model)"
    )
    extra_data: list[str] = Field([], description="episode directories added to the refit's data")
    episodes: PositiveInt = Field(60, description="the policy's rollouts a task")
    noise: PositiveFloat = Field(0.5, description="the rollouts' sampling noise (RL's exploration noise)")
    rollout_steps: PositiveInt | None = Field(
        None, description="a rollout's steps (default: Meta-World's 150)"
    )
    steps: PositiveInt = Field(1000, description="training steps of the states and of the renderer")
    long_steps: NonNegativeInt = Field(
        0, description="then this many more steps of the states (OUT/long/model)"
    )
    plans: NonNegativeInt = Field(
        0, description="imagined episodes a task, replayed in Meta-World, then a refit on them"
    )
    plan_steps: PositiveInt = Field(
        1000, description="training steps of the refit on the plans (OUT/plans/model)"
    )
    gauge_seeds: list[int] = Field([0, 1], description="the gauge's seeds, each model gauged with each")

    def check(self) -> None:
        """The inputs exist and the base data can be had, before any work."""
        require_dir("--policy-dir", self.policy_dir, "config.json", "a policy directory")
        require_dir("--base-model", self.base_model, "config.json", "a state model")
        for extra in self.extra_data:
            require_dir("--extra-data", extra, "index.json", "episode directories")
        if self.base_data is not None:
            require_dir("--base-data", self.base_data, "index.json", "an episode directory")
        elif Path(self.base_model).resolve() != Path(DEFAULT_BASE).resolve():
            raise ConfigError(
                f"config error: --base-data is not set with --base-model={self.base_model!r}: only {DEFAULT_BASE}'s "
                f"rollouts can be rebuilt here; set --base-data to the episodes {self.base_model} was trained on"
            )
        super().check()


def run(args: Args) -> Stages:
    """Every stage in order; each is one tool's command line."""
    out, s = args.out, Stages("refit-state-model")
    Path(out).mkdir(parents=True)
    base_data = args.base_data or f"{out}/base_rollouts"
    if args.base_data is None:
        policy_rollouts(
            s, "base model's rollouts", BASE_POLICY, args.episodes, args.noise, base_data, args.rollout_steps
        )
    policy_rollouts(
        s,
        "policy rollouts",
        args.policy_dir,
        args.episodes,
        args.noise,
        f"{out}/rollouts",
        args.rollout_steps,
    )
    s.tool("merge", MERGE, ["--data", base_data, f"{out}/rollouts", *args.extra_data, "--out", f"{out}/data"])
    s.tool("refit", STATE_MODEL, [f"data.path={out}/data", f"output_dir={out}", f"init_model_dir={args.base_model}",
           f"train.steps={args.steps}", "render.dynamics_model_dir=assets/world_models/tiny_3tasks", f"render.steps={args.steps}"])  # fmt: skip
    models = {"base": args.base_model, "refit": f"{out}/model"}
    if args.long_steps:
        s.tool("longer training", STATE_MODEL, [f"data.path={out}/data", f"output_dir={out}/long",
               f"init_model_dir={out}/model", f"train.steps={args.long_steps}", "render.dynamics_model_dir=null"])  # fmt: skip
        models["long"] = f"{out}/long/model"
    if args.plans:
        last = list(models.values())[-1]
        imagined_plans(
            s, "imagined plans", args.policy_dir, args.plans, args.noise, last, f"{out}/plan_rollouts"
        )
        s.tool(
            "merge plans",
            MERGE,
            ["--data", f"{out}/data", f"{out}/plan_rollouts", "--out", f"{out}/plan_data"],
        )
        s.tool("refit on plans", STATE_MODEL, [f"data.path={out}/plan_data", f"output_dir={out}/plans",
               f"init_model_dir={last}", f"train.steps={args.plan_steps}", "render.dynamics_model_dir=null"])  # fmt: skip
        models["plans"] = f"{out}/plans/model"
    gauge_starts(s, args, f"{out}/gauge_starts")
    for which, model in models.items():
        for seed in args.gauge_seeds:
            outcome_gauge(s, f"gauge, {which}, seed {seed}", args, "rl_metaworld_dense_wm", f"{out}/gauge_starts",
                          "--seed", str(seed), f"rollout.model_dir={args.policy_dir}",
                          "env.eval.ignore_terminations=true", f"env.train.state_model_config={model}")  # fmt: skip
    s.log("train in it:\n  bash scripts/run_embodiment.sh rl_metaworld_dense_wm_critic "
          f"rollout.model_dir={args.policy_dir} env.train.state_model_config={list(models.values())[-1]}")  # fmt: skip
    return s


def main(argv: list[str] | None = None) -> int:
    return recipe_main(Args, run, argv, tool_prog("toolkits.recipes.refit_state_model"), __doc__)


if __name__ == "__main__":
    sys.exit(main())
