"""The whole loop on LIBERO-Object at a small size, with the commands a user types, every stage timed: collect
expert episodes -> progress reward model -> advantage labels -> imitation (tiny pi0) -> its success in LIBERO ->
PPO in LIBERO from it -> world model (VAE, denoiser) -> ``rl_release_libero`` (imagined envs beside real LIBERO
envs, evaluated in LIBERO). Needs ``make install-libero``.

    worldrl recipe libero-loop [--out logs/libero_loop] [--episodes 10] [--stop-after "PPO in LIBERO"] ...

The defaults are the CPU run of experiments/reports/libero_loop.md (``--eval-episodes`` a task, for every
evaluation). Running it again with the same ``--out`` skips the stages whose outputs exist; ``--stop-after NAME``
stops after that stage, so the loop can run in parts. With ``--out logs/libero_loop`` the default paths of the
configs it runs (configs/env/libero_object_loop.yaml, reward/progress_libero, offline/sft_pi0_libero,
world_model/ltx_libero, env/world_model_libero, rl_release_libero) need no overrides.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable

from pydantic import Field, PositiveInt

from toolkits.base.atomic import write_text_atomically
from toolkits.base.cli import tool_prog
from toolkits.base.errors import ConfigError
from toolkits.recipes.args import RecipeArgs, recipe_main, require_dir
from toolkits.recipes.stages import StageFailed, Stages, tool_step

TASKS = [
    "pick_up_the_alphabet_soup_and_place_it_in_the_basket",
    "pick_up_the_bbq_sauce_and_place_it_in_the_basket",
    "pick_up_the_ketchup_and_place_it_in_the_basket",
]
STAGES = [
    "collect episodes", "reward model", "advantage labels", "imitation policy", "offline anchor episodes",
    "evaluate imitation", "PPO in LIBERO", "world model", "rl_release_libero",
]  # fmt: skip


class Args(RecipeArgs):
    out: str = Field(
        "logs/libero_loop", description="the loop's folder (a re-run skips the stages done there)"
    )
    episodes: PositiveInt = Field(10, description="expert episodes collected a task (20% made to fail)")
    rm_steps: PositiveInt = Field(600, description="reward model training steps")
    il_steps: PositiveInt = Field(6000, description="imitation training steps")
    eval_episodes: PositiveInt = Field(6, description="episodes a task in every evaluation")
    ppo_steps: PositiveInt = Field(4, description="PPO steps in LIBERO")
    vae_steps: PositiveInt = Field(300, description="the world model's VAE training steps")
    dyn_steps: PositiveInt = Field(400, description="the world model's denoiser training steps")
    rl_steps: PositiveInt = Field(6, description="rl_release_libero steps")
    episodes_dir: str | None = Field(
        None, description="episodes collected before, used instead of collecting"
    )
    stop_after: str | None = Field(None, description=f"stop after this stage, one of: {', '.join(STAGES)}")

    def check(self) -> None:
        """A re-run continues in the same folder; the stage to stop after and the episodes given must exist."""
        if self.stop_after is not None and self.stop_after not in STAGES:
            raise ConfigError(
                f"config error: --stop-after={self.stop_after!r}: no such stage; allowed: {', '.join(STAGES)}"
            )
        if self.episodes_dir is not None:
            require_dir("--episodes-dir", self.episodes_dir, "index.json", "an episode directory")


def evaluate_imitation(args: Args) -> None:
    """The imitation policy's success in LIBERO, printed and kept in OUT/eval_imitation.md."""
    from policy_and_value.offline.evaluate import main as evaluate

    argv = ["--model-dir", f"{args.out}/sft/policy", "--suite", "libero_object", "--tasks", *TASKS,
            "--episodes", str(args.eval_episodes), "--image-size", "64", "--num-envs", "3"]  # fmt: skip
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = evaluate(argv)
    print(printed.getvalue(), end="")
    if code:
        raise StageFailed(f"libero-loop: stage 'evaluate imitation' exited with code {code}")
    write_text_atomically(f"{args.out}/eval_imitation.md", printed.getvalue())


def plan(args: Args) -> list[tuple[str, str, Callable[[Stages, str], None]]]:
    """(stage, the output whose existence marks it done, how to run it) in order."""
    out, ep = args.out, args.episodes_dir or f"{args.out}/episodes"
    evals = f"env.eval_episodes={len(TASKS) * args.eval_episodes}"

    def steps(n: int, name: str) -> list[str]:
        return [f"runner.max_steps={n}", f"runner.val_check_interval={n}", f"runner.save_interval={n}", evals,
                f"runner.logger.log_path={out}", f"runner.logger.experiment_name={name}"]  # fmt: skip

    stages = [
        ("reward model", f"{out}/rm/model", tool_step("reward_models.train", ["reward/progress_libero",
         f"data.path={ep}", f"output_dir={out}/rm", f"train.max_steps={args.rm_steps}"])),
        ("advantage labels", f"{out}/episodes_labelled", tool_step("reward_models.label", [
         "--model-dir", f"{out}/rm/model", "--data", ep, "--out", f"{out}/episodes_labelled"])),
        ("imitation policy", f"{out}/sft/policy", tool_step("policy_and_value.offline.train_sft", [
         "offline/sft_pi0_libero", f"data.path={out}/episodes_labelled", f"output_dir={out}/sft",
         f"train.max_steps={args.il_steps}"])),
        ("offline anchor episodes", f"{out}/offline_episodes", tool_step("toolkits.episodes.subset",
         ["--data", f"{out}/episodes_labelled", "--out", f"{out}/offline_episodes", "--per-task", "3",
          "--failed-per-task", "1"])),
        ("evaluate imitation", f"{out}/eval_imitation.md",
         lambda s, name: s.call(name, lambda: evaluate_imitation(args))),
        ("PPO in LIBERO", f"{out}/ppo/checkpoints/global_step_{args.ppo_steps}", tool_step("policy_and_value.train",
         ["ppo_pi0_libero", "env@env.train=libero_object_loop", "env@env.eval=libero_object_loop",
         f"rollout.model_dir={out}/sft/policy", "model.pi0.with_advantage_condition=true", "model.num_action_chunks=4",
         "algorithm.n_chunk_steps=20", "model.pi0.noise_level=0.1", "actor.optim.lr=1e-5", "actor.optim.value_lr=1e-3",
         *steps(args.ppo_steps, "ppo")])),
        ("world model", f"{out}/wm/model", tool_step("world_models.train", ["world_model/ltx_libero",
         f"data.path={ep}", f"output_dir={out}/wm", f"train.vae_steps={args.vae_steps}",
         f"train.dynamics_steps={args.dyn_steps}"])),
        ("rl_release_libero", f"{out}/rl_release_libero/checkpoints/global_step_{args.rl_steps}", tool_step(
         "policy_and_value.train", ["rl_release_libero", f"rollout.model_dir={out}/sft/policy",
         f"env.train.dynamics_model_config={out}/wm/model", f"env.train.reward_model_config={out}/rm/model",
         f"env.train.dynamics_model_image_root={ep}", f"algorithm.offline_data_path={out}/offline_episodes",
         *steps(args.rl_steps, "rl_release_libero")])),
    ]  # fmt: skip
    if args.episodes_dir is None:
        collect = ["--suite", "libero_object", "--tasks", *TASKS, "--episodes-per-task", str(args.episodes),
                   "--num-envs", "6", "--image-size", "64", "--action-noise", "0.05", "--fail-fraction", "0.2",
                   "--max-episode-steps", "220", "--seed", "7", "--out", ep]  # fmt: skip
        stages.insert(0, ("collect episodes", ep, tool_step("toolkits.collect_episodes", collect)))
    return stages


def run(args: Args) -> Stages:
    """The stages not done yet, in order, up to ``--stop-after``."""
    os.makedirs(args.out, exist_ok=True)
    s = Stages("libero-loop")
    if s.run_plan(plan(args), args.stop_after):
        return s
    s.log(f"success in LIBERO: imitation in {args.out}/eval_imitation.md; PPO and rl_release_libero before -> after "
          f"in {args.out}/ppo/metrics.jsonl and {args.out}/rl_release_libero/metrics.jsonl (eval/success_once)")  # fmt: skip
    return s


def main(argv: list[str] | None = None) -> int:
    return recipe_main(Args, run, argv, tool_prog("toolkits.recipes.libero_loop"), __doc__)


if __name__ == "__main__":
    sys.exit(main())
