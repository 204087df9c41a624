"""The tasks and cameras of the outcome recipes (``rl_metaworld_outcome*``, ``rl_metaworld_dense*``) and the
collections their recipes share, so that a rebuilt model sees the same data as the shipped one."""

from __future__ import annotations

from pydantic import Field, PositiveInt

from toolkits.recipes.args import RecipeArgs
from toolkits.recipes.stages import Stages

TASKS = ["reach-v3", "button-press-topdown-v3", "door-open-v3"]
CAMERAS = ["corner", "gripperPOV"]
COLLECT = "toolkits.collect_episodes"
GAUGE = "experiments.harness.wm_outcome_gauge"


def check_tasks(tasks: list[str]) -> None:
    """``--tasks``: Meta-World (MT50) task names, at least one, each once; one line naming the first that is not."""
    from policy_and_value.envs.metaworld_tasks import MT50_TASKS
    from toolkits.base.errors import config_error

    for task in tasks:
        if task not in MT50_TASKS:
            raise config_error("--tasks", task, "not a Meta-World (MT50) task, e.g. reach-v3, drawer-open-v3")
    if not tasks or len(set(tasks)) != len(tasks):
        raise config_error("--tasks", tasks, "name at least one task, each once")


class GaugeArgs(RecipeArgs):
    """The gauge's sizes (``wm_outcome_gauge``): starts a task, policy samples a start, actions an episode."""

    gauge_starts: PositiveInt = Field(
        9, description="the gauge's start frames a task, on layouts never trained on"
    )
    gauge_samples: PositiveInt = Field(4, description="policy samples a start")
    gauge_steps: PositiveInt = Field(150, description="actions an imagined and real episode")


def policy_rollouts(
    stages: Stages, name: str, policy: str, episodes: int, noise: float, out: str, steps: int | None = None
) -> None:
    """A policy's sampled rollouts on the training layouts (``steps``: episodes of that many steps instead of
    Meta-World's 150)."""
    argv = ["--tasks", *TASKS, "--episodes-per-task", str(episodes), "--cameras", *CAMERAS, "--seed", "5",
            "--num-envs", "12", "--policy-dir", policy, "--noise-level", str(noise), "--out", out]  # fmt: skip
    stages.tool(name, COLLECT, argv + (["--max-episode-steps", str(steps)] if steps else []))


def imagined_plans(
    stages: Stages, name: str, policy: str, episodes: int, noise: float, state_model: str, out: str
) -> None:
    """The policy's sampled episodes played in ``state_model``'s imagination (``rl_metaworld_dense_wm``'s world-model
    env) from Meta-World starts on the training layouts, their actions replayed there: what those actions really do."""
    argv = ["--tasks", *TASKS, "--episodes-per-task", str(episodes), "--cameras", *CAMERAS, "--seed", "6",
            "--num-envs", "12", "--policy-dir", policy, "--noise-level", str(noise), "--out", out,
            "--imagine", "rl_metaworld_dense_wm", f"env.train.state_model_config={state_model}"]  # fmt: skip
    stages.tool(name, COLLECT, argv)


def gauge_starts(stages: Stages, args: GaugeArgs, out: str, tasks: list[str] = TASKS) -> None:
    """``args.gauge_starts`` start frames a task on layouts never trained on (layout seed 1): the gauge's."""
    n = str(args.gauge_starts)
    argv = ["--tasks", *tasks, "--episodes-per-task", n, "--max-episode-steps", "4", "--cameras", *CAMERAS,
            "--seed", "21", "--num-envs", n, "--layout-seed", "1", "--out", out]  # fmt: skip
    stages.tool("gauge starts", COLLECT, argv)


def outcome_gauge(stages: Stages, name: str, args: GaugeArgs, config: str, starts: str, *extra: str) -> None:
    """``wm_outcome_gauge`` of job ``config`` on ``starts``, sized by ``args`` (``extra``: its flags and overrides)."""
    argv = ["--config", config, "--starts", starts, "--starts-per-task", str(args.gauge_starts),
            "--samples", str(args.gauge_samples), "--episode-steps", str(args.gauge_steps), *extra]  # fmt: skip
    stages.tool(name, GAUGE, argv)
