"""Rebuild the episodes assets/world_models/state_outcome20_both was trained on, which co-evolution refits it on
(``coevolution.state_model_data`` of ``rl_metaworld_coevolution_critic_20demo``): the rollouts of the three policies
its line of refits saw, each on the training layouts, sampled with RL's exploration noise (the 2-demonstration
start's, the start that aims', the start on both kinds of frame's) -> merged (540 episodes) into OUT/data.

    worldrl recipe coevolution-data [--out data/coevolution20_both] [--episodes 60] [--noise 0.5]

Its three collections took 20 minutes on a 2-core CPU (not re-run since the recipe moved to Python).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field, PositiveFloat, PositiveInt

from toolkits.base.cli import tool_prog
from toolkits.recipes.args import RecipeArgs, recipe_main
from toolkits.recipes.outcome_tasks import policy_rollouts
from toolkits.recipes.stages import Stages

# (stage, policy, folder under OUT): the policies the shipped model's line of refits saw, in order
POLICIES = [
    ("2-demo start's rollouts", "assets/metaworld_outcome/policy", "outcome"),
    ("aiming start's rollouts", "assets/metaworld_outcome20/policy", "outcome20"),
    ("both-frames rollouts", "assets/metaworld_outcome20_both/policy", "outcome20_both"),
]


class Args(RecipeArgs):
    out: str = Field(
        "data/coevolution20_both", description="a new folder for the episodes (OUT/data: merged)"
    )
    episodes: PositiveInt = Field(60, description="rollouts a task, a policy")
    noise: PositiveFloat = Field(0.5, description="the rollouts' sampling noise (RL's exploration noise)")
    rollout_steps: PositiveInt | None = Field(
        None, description="a rollout's steps (default: Meta-World's 150)"
    )


def run(args: Args) -> Stages:
    """The three collections, then the merge."""
    out, s = args.out, Stages("coevolution-data")
    Path(out).mkdir(parents=True)
    for name, policy, folder in POLICIES:
        policy_rollouts(s, name, policy, args.episodes, args.noise, f"{out}/{folder}", args.rollout_steps)
    parts = [f"{out}/{folder}" for _, _, folder in POLICIES]
    s.tool("merge", "toolkits.episodes.merge", ["--data", *parts, "--out", f"{out}/data"])
    s.log("co-evolve on them:\n  bash scripts/run_embodiment.sh rl_metaworld_coevolution_critic_20demo "
          f"coevolution.state_model_data={out}/data")  # fmt: skip
    return s


def main(argv: list[str] | None = None) -> int:
    return recipe_main(Args, run, argv, tool_prog("toolkits.recipes.coevolution_data"), __doc__)


if __name__ == "__main__":
    sys.exit(main())
