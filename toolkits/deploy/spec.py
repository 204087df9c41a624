"""``deploy.json``: what a robot must know to drive a policy directory, beside its ``config.json``.

Cameras (names, in the order the policy reads its views), image size, state and action sizes, the
action chunk the robot executes per query, the prompts (task -> instruction) the policy was trained
on, action bounds and the job it came from. ``toolkits.ckpt_convertor.export_policy`` writes it; a
directory without one (e.g. an imitation output) gets it from the env it acts in:

    python -m toolkits.deploy.spec --policy-dir DIR --env ENV [key=value ...]

``ENV`` is an env config (``configs/env/NAME.yaml`` or a YAML file) of a Meta-World, LIBERO or ManiSkill
env and ``key=value`` overrides its keys (e.g. ``tasks=[reach-v3,door-open-v3]``); the policy's sizes come
from its ``config.json`` and must be the env's. Otherwise the server takes the cameras on its command line.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolkits.base.cli import tool_prog

DEPLOY_FILE = "deploy.json"
FORMAT_VERSION = 1
SIMULATORS = ("metaworld", "libero", "maniskill")  # the env types a robot stands in for


@dataclass
class DeploySpec:
    """The robot-facing description of a policy directory."""

    cameras: list[str]
    image_size: int
    state_dim: int
    action_dim: int
    chunk_size: int  # actions executed per query (the policy's num_action_chunks)
    prompts: dict[str, str] = field(default_factory=dict)  # task name -> instruction text
    state_type: str | None = None  # metaworld: "full" (39) or "proprio" (4)
    action_low: list[float] | None = None
    action_high: list[float] | None = None
    max_episode_steps: int | None = None
    source: dict[str, Any] = field(default_factory=dict)  # checkpoint, weights, global step, config

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict with the format version first."""
        return {"format_version": FORMAT_VERSION, **asdict(self)}

    def save(self, directory: str | Path) -> Path:
        """Write ``directory/deploy.json``; returns its path."""
        path = Path(directory) / DEPLOY_FILE
        path.write_text(json.dumps(self.to_dict(), indent=2))
        return path

    @classmethod
    def load(cls, directory: str | Path) -> DeploySpec:
        """Read ``directory/deploy.json``; unknown keys are an error naming them."""
        path = Path(directory) / DEPLOY_FILE
        data = json.loads(path.read_text())
        data.pop("format_version", None)
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown} (known: {sorted(known)})")
        return cls(**data)


def spec_for_policy_dir(
    directory: str | Path, cameras: list[str] | None = None, tasks: list[str] | None = None
) -> DeploySpec:
    """The directory's ``deploy.json``, or one made from its ``config.json`` and the given cameras (then
    required) and tasks; cameras or tasks given override the file's."""
    from policy_and_value.models.pi0 import Pi0Config
    from policy_and_value.models.pi0.factory import task_prompts

    directory = Path(directory)
    config = directory / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"--policy-dir={directory}: no config.json (not a policy directory)")
    if (directory / DEPLOY_FILE).is_file():
        spec = DeploySpec.load(directory)
    else:
        if not cameras:
            raise ValueError(
                f"--policy-dir={directory}: no {DEPLOY_FILE}; pass --cameras with the camera names in the "
                "order the policy was trained with (e.g. --cameras corner gripperPOV)"
            )
        cfg = Pi0Config.load(config)
        spec = DeploySpec(
            cameras=list(cameras), image_size=cfg.vision.image_size, state_dim=cfg.state_dim,
            action_dim=cfg.action_dim, chunk_size=cfg.num_action_chunks,
        )  # fmt: skip
    if cameras:
        spec.cameras = list(cameras)
    if tasks:
        spec.prompts = dict(zip(tasks, task_prompts(tasks), strict=True))
    return spec


def task_instructions(env: Any, tasks: list[str]) -> dict[str, str]:
    """Task name -> the instruction ``env`` (an ``EnvConfig``) gives the policy as its prompt: Meta-World's
    table, the LIBERO suite's task language, ManiSkill's table (a world-model env: Meta-World's table,
    else the name). KeyError naming a task the env lacks; ImportError (naming the install command) when
    LIBERO's benchmark is not installed."""
    from policy_and_value.envs.metaworld_tasks import PROMPTS

    if env.env_type == "libero":
        from policy_and_value.envs.libero_tasks import task_instructions as libero_instructions

        return libero_instructions(env.suite, tasks)
    if env.env_type == "maniskill":
        from policy_and_value.envs.maniskill_tasks import TASKS

        table = {task: instruction for task, (instruction, _) in TASKS.items()}
    elif env.env_type == "metaworld":
        table = PROMPTS
    else:
        return {t: PROMPTS.get(t, t) for t in tasks}
    for task in tasks:
        if task not in table:
            close = difflib.get_close_matches(task, list(table), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            allowed = ", ".join(table) if len(table) <= 10 else f"one of its {len(table)} task names"
            raise KeyError(f"{task!r} is not a {env.env_type} task; {hint}allowed: {allowed}")
    return {t: table[t] for t in tasks}


def simulator_cameras(env_type: str) -> tuple[str, ...]:
    """The camera names a Meta-World, LIBERO or ManiSkill env renders."""
    if env_type == "libero":
        from policy_and_value.envs.libero_tasks import CAMERAS
    elif env_type == "maniskill":
        from policy_and_value.envs.maniskill_tasks import CAMERAS
    else:
        from policy_and_value.envs.metaworld_tasks import CAMERAS
    return CAMERAS


def spec_for_env(
    policy_cfg: Any, env: Any, tasks: list[str] | None = None, source: dict[str, Any] | None = None
) -> DeploySpec:
    """The ``deploy.json`` of a policy (its ``Pi0Config``) acting in ``env`` (an ``EnvConfig``): the env's
    cameras, state type, episode limit and the instructions of ``tasks`` (default ``env.tasks``), the
    policy's image, state, action and chunk sizes, which must be the env's (ValueError naming both)."""
    from policy_and_value.config.sizes import env_sizes

    sizes = env_sizes(env) if env.env_type in SIMULATORS else None
    if sizes is not None:
        for name, want in zip(("action_dim", "state_dim"), sizes, strict=True):
            have = getattr(policy_cfg, name)
            if want != have:
                raise ValueError(
                    f"the policy has {name}={have}, a {env.env_type} env with state_type={env.state_type} "
                    f"gives {want}"
                )
        allowed = simulator_cameras(env.env_type)
        for camera in env.cameras:
            if camera not in allowed:
                raise ValueError(
                    f"camera {camera!r} is not a {env.env_type} camera; allowed: {', '.join(allowed)}"
                )
    tasks = list(tasks if tasks is not None else env.tasks)
    action_dim = policy_cfg.action_dim
    return DeploySpec(
        cameras=list(env.cameras), image_size=policy_cfg.vision.image_size, state_dim=policy_cfg.state_dim,
        action_dim=action_dim, chunk_size=policy_cfg.num_action_chunks, prompts=task_instructions(env, tasks),
        state_type=env.state_type, action_low=[-1.0] * action_dim, action_high=[1.0] * action_dim,
        max_episode_steps=env.max_episode_steps, source=dict(source or {}),
    )  # fmt: skip


def load_env_config(env: str, overrides: list[str]) -> Any:
    """The ``EnvConfig`` of ``configs/env/<env>.yaml`` (or the YAML file ``env``) with ``key=value``
    overrides; a ``ConfigError`` (one line) when it is missing or invalid."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from policy_and_value.config.env_schema import validate_env
    from toolkits.base.compose import CONFIG_DIR
    from toolkits.base.errors import config_error

    env_dir = CONFIG_DIR / "env"  # the env configs job configs compose (env@env.train=NAME)
    path = env_dir / f"{env}.yaml"
    path = path if path.is_file() else Path(env)
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in env_dir.glob("*.yaml")))
        raise config_error("--env", env, f"no such env config; allowed: {names} (or a YAML file)")
    try:
        data = OmegaConf.to_container(
            OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(overrides))
        )
    except (OmegaConfBaseException, ValueError) as err:
        raise config_error("overrides", overrides, " ".join(str(err).split())) from None
    config = validate_env(data)
    if config.env_type not in SIMULATORS:
        raise config_error(
            "env_type", config.env_type, f"a robot stands in for a simulator: {', '.join(SIMULATORS)}"
        )
    return config


def main(argv: list[str] | None = None) -> int:
    """CLI: write ``deploy.json`` into a policy directory from the env it acts in; one line on error (exit 2)."""
    from policy_and_value.models.pi0.configuration_pi0 import Pi0Config, policy_dir_problem
    from toolkits.base.errors import ConfigError, config_error

    p = argparse.ArgumentParser(prog=tool_prog("toolkits.deploy.spec"), description=__doc__.splitlines()[0])
    p.add_argument("--policy-dir", required=True, help="the policy directory to write deploy.json into")
    p.add_argument("--env", required=True, help="an env config: configs/env/NAME.yaml (NAME) or a YAML file")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="overrides of the env config's keys")
    args = p.parse_args(argv)
    try:
        problem = policy_dir_problem(args.policy_dir)
        if problem is not None:
            raise config_error("--policy-dir", args.policy_dir, problem)
        env = load_env_config(args.env, args.overrides)
        policy_cfg = Pi0Config.load(Path(args.policy_dir) / "config.json")
        source = {"written_by": "toolkits.deploy.spec", "env": args.env, "overrides": list(args.overrides)}
        try:
            spec = spec_for_env(policy_cfg, env, source=source)
        except (KeyError, ValueError, ImportError) as err:
            reason = err.args[0] if isinstance(err, KeyError) else str(err)
            raise config_error("--env", args.env, reason) from None
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    path = spec.save(args.policy_dir)
    print(
        f"wrote {path}: cameras {spec.cameras} at {spec.image_size}x{spec.image_size}, state {spec.state_dim} "
        f"({spec.state_type}), {spec.chunk_size} x {spec.action_dim} actions per query, {len(spec.prompts)} prompts"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
