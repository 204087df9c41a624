"""``worldrl``: one command line for every job, tool and recipe. Each subcommand runs the ``main(argv)`` of the module
``python -m`` runs (the two stay the same program); modules are imported only for the subcommand asked for, so
``worldrl --help`` answers at once."""

from __future__ import annotations

import difflib
import importlib
import sys

# subcommand -> (the module whose main(argv) it runs, one line of what it does)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("policy_and_value.train", "an RL job from configs/ or experiments/configs/ (co-evolution too)"),
    "sft": ("policy_and_value.offline.train_sft", "imitation (SFT) of a pi0 policy on recorded episodes"),
    "eval": ("policy_and_value.offline.evaluate", "a policy directory's success in a simulator"),
    "collect": ("toolkits.collect_episodes", "record episodes of scripted experts or a policy"),
    "label": ("reward_models.label", "add a reward model's values and advantages to episodes"),
    "train-world-model": ("world_models.train", "the video dynamics model (VAE, then denoiser)"),
    "train-state-model": (
        "world_models.train_state_model",
        "the state world model (ensemble, heads, renderer)",
    ),
    "train-reward-model": ("reward_models.train", "a progress model or success classifier"),
    "render-episodes": (
        "world_models.render_episodes",
        "redraw a dataset's frames as a world-model env does",
    ),
    "replay": ("world_models.replay", "world-model prediction videos beside the recorded frames"),
    "export": ("toolkits.ckpt_convertor.export_policy", "a checkpoint as a complete policy directory"),
    "convert": (
        "toolkits.ckpt_convertor.convert_dcp_to_state_dict",
        "a DCP checkpoint as a plain .pt state dict",
    ),
    "deploy-spec": ("toolkits.deploy.spec", "write a policy directory's deploy.json"),
    "serve": ("toolkits.deploy.serve_policy", "serve a policy directory over openpi's websocket protocol"),
    "serve-lerobot": (
        "toolkits.deploy.serve_lerobot",
        "serve a policy directory over LeRobot's async-inference gRPC protocol",
    ),
    "registry": (
        "toolkits.deploy.registry_cli",
        "versioned policy directories: publish, list, roll back",
    ),
    "improve": (
        "toolkits.online.improver",
        "improve a registry's policy on its server's recordings, gate, publish",
    ),
    "robot-client": ("toolkits.deploy.robot_client", "play Meta-World episodes through a policy server"),
}
EPISODE_TOOLS: dict[str, tuple[str, str]] = {
    "merge": ("toolkits.episodes.merge", "merge datasets with the same cameras"),
    "subset": ("toolkits.episodes.subset", "a small copy: N successful and M failed episodes a task"),
    "lerobot": ("toolkits.episodes.lerobot.cli", "to and from LeRobot's v3.0 format (export / import)"),
    "libero-hdf5": ("toolkits.episodes.libero_hdf5", "LIBERO's published demonstrations as episodes"),
}
RECIPES: dict[str, tuple[str, str]] = {
    "quickstart-assets": (
        "toolkits.recipes.quickstart_assets",
        "rebuild the quickstart's models from scratch",
    ),
    "outcome-start": (
        "toolkits.recipes.outcome_start",
        "the outcome recipes' starting policy and its anchor",
    ),
    "state-outcome": (
        "toolkits.recipes.state_outcome",
        "the state world model of the outcome recipes, gauged",
    ),
    "refit-state-model": (
        "toolkits.recipes.refit_state_model",
        "align a state model with a new policy, gauged",
    ),
    "coevolution-data": (
        "toolkits.recipes.coevolution_data",
        "the episodes co-evolution refits its model on",
    ),
    "observation-model": (
        "toolkits.recipes.observation_model",
        "a world model from what a robot records, gauged",
    ),
    "libero-loop": ("toolkits.recipes.libero_loop", "the whole loop on LIBERO-Object at a CPU size"),
    "libero-observation-model": (
        "toolkits.recipes.libero_observation",
        "LIBERO-Object's world model from what a robot records",
    ),
}
GROUPS = {"episodes": EPISODE_TOOLS, "recipe": RECIPES}


def _listing(title: str, table: dict[str, tuple[str, str]]) -> str:
    return "\n".join([title, *(f"  {name:20s} {what}" for name, (_, what) in table.items())])


def usage() -> str:
    """What ``worldrl --help`` prints."""
    return "\n\n".join([
        "usage: worldrl COMMAND [args ...]    (worldrl COMMAND --help for each)",
        _listing("jobs and tools:", COMMANDS),
        _listing("worldrl episodes TOOL:", EPISODE_TOOLS),
        _listing("worldrl recipe NAME (pipelines that chain the tools, each stage timed):", RECIPES),
        "jobs: worldrl train --help lists them; research arms are in experiments/configs/",
    ])  # fmt: skip


def _unknown(what: str, name: str, table: dict[str, tuple[str, str]]) -> int:
    close = difflib.get_close_matches(name, list(table), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    print(f"error: {what} {name!r}: {hint}allowed: {', '.join(table)}", file=sys.stderr)
    return 2


def run(module: str, prog: str, argv: list[str]) -> int:
    """``module.main(argv)`` with ``prog`` as the program name its usage lines show."""
    sys.argv[0] = prog
    return int(importlib.import_module(module).main(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    """The ``worldrl`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command in GROUPS:
        table = GROUPS[command]
        if not rest or rest[0] in ("-h", "--help"):
            print(_listing(f"usage: worldrl {command} NAME [args ...]", table))
            return 0 if rest else 2
        if rest[0] not in table:
            return _unknown(f"worldrl {command}", rest[0], table)
        return run(table[rest[0]][0], f"worldrl {command} {rest[0]}", rest[1:])
    if command not in COMMANDS:
        return _unknown("command", command, {**COMMANDS, **{g: ("", "") for g in GROUPS}})
    return run(COMMANDS[command][0], f"worldrl {command}", rest)


if __name__ == "__main__":
    sys.exit(main())
