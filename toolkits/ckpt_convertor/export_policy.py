"""Export a training checkpoint as a complete policy directory, ready for ``rollout.model_dir`` and the server.

    python -m toolkits.ckpt_convertor.export_policy --checkpoint LOGDIR/checkpoints/global_step_N --out DIR \\
        [--weights rollout|actor] [--model-dir PATH]
    python -m toolkits.ckpt_convertor.export_policy --checkpoint ... --registry ROOT [--not-current]

With ``--layout openpi`` the weights are named as openpi's PyTorch port and the statistics are also written where
openpi's policy loader looks, ``assets/<asset_id>/norm_stats.json`` (``--asset-id``, default the env type, e.g.
``metaworld``); this repo reads both layouts. With ``--registry`` the directory is published as the next version of a policy registry
(``toolkits/deploy/registry.py``; its manifest names the checkpoint and the weights) instead of written to ``--out``.

``--weights rollout`` (default) takes ``rollout/model.safetensors``, the (EMA) weights evaluation ran;
``actor`` the model tensors of the ``actor/`` DCP folder. The policy is rebuilt from the checkpoint's
``config.yaml`` (the job config saved beside the weights) exactly as the job built it (state and action sizes
from the job's own envs: Meta-World, LIBERO, ManiSkill or a world model), which needs the
job's ``rollout.model_dir`` for the tokenizer and normalisation statistics (``--model-dir`` if it has
moved), the weights are loaded strictly, LoRA adapters are merged into the base weights, and the
directory gets ``config.json``, ``model.safetensors``, the tokenizer, ``norm_stats.json`` and
``deploy.json`` (cameras and their order, image size, state and action sizes, chunk size, prompts).
It is written under a temporary name and renamed when complete. A missing, truncated or mismatched
file is one line naming it (exit 2). ``convert_dcp_to_state_dict.py`` still writes the bare ``.pt``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

from toolkits.base.cli import tool_prog

REPO = Path(__file__).resolve().parents[2]
WEIGHTS_CHOICES = ("rollout", "actor")
LAYOUTS = ("worldrl", "openpi")
PI0_TYPES = ("pi0", "pi05")


class ExportError(ValueError):
    """A problem with the export's input or output, in one line naming the file or option."""


def resolve_checkpoint(path: str | Path) -> Path:
    """A ``global_step_N`` directory, or a ``checkpoints`` / log directory (then its ``latest`` step)."""
    path = Path(path)
    for candidate in (path, path / "checkpoints"):
        latest = candidate / "latest"
        if latest.is_file() and not (candidate / "config.yaml").is_file():
            step = candidate / latest.read_text().strip()
            if step.is_dir():
                return step
    if not path.is_dir():
        raise ExportError(f"--checkpoint={path}: no such directory")
    return path


def load_job_config(checkpoint: Path) -> Any:
    """The job config saved in the checkpoint (``config.yaml``), validated by the schema."""
    import yaml
    from pydantic import ValidationError

    from policy_and_value.config import JobConfig

    path = checkpoint / "config.yaml"
    if not path.is_file():
        raise ExportError(f"{path}: missing (the job config saved with every checkpoint)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ExportError(f"{path}: unreadable YAML ({' '.join(str(err).split())})") from None
    try:
        return JobConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ExportError(f"{path}: not a job config ({where}: {first['msg']})") from None


def deploy_env(cfg: Any) -> Any:
    """The env config a robot stands in for: the first real simulator (Meta-World, LIBERO, ManiSkill) of
    eval, train and the train groups; ``env.train`` where there is none (imagination alone)."""
    from policy_and_value.config.env_checks import env_groups
    from toolkits.deploy.spec import SIMULATORS

    candidates = [cfg.env.eval, cfg.env.train, *(c for _, c in env_groups(cfg.env.train))]
    for env in candidates:
        if env is not None and env.env_type in SIMULATORS:
            return env
    return cfg.env.train


def job_sizes(cfg: Any, checkpoint: Path) -> tuple[int, int]:
    """(action_dim, state_dim) of the policy the job built: what its envs give (``env_sizes``: the train env
    or its groups, then eval; the validated job has them agree), ``model.action_dim`` when set."""
    from policy_and_value.config.env_checks import env_groups
    from policy_and_value.config.sizes import env_sizes

    train = cfg.env.train
    envs = [c for _, c in env_groups(train)] or [train]
    unknown = []
    for env in [*envs, cfg.env.eval]:
        if env is None:
            continue
        try:
            sizes = env_sizes(env)
        except OSError:  # a world-model env whose model folder is gone: the job's other envs tell
            sizes = None
        if sizes is not None:
            return cfg.model.action_dim or sizes[0], sizes[1]
        unknown.append(env.dynamics_model_config or "no dynamics_model_config")
    raise ExportError(
        f"{checkpoint / 'config.yaml'}: cannot tell the policy's state and action sizes: the job's envs are world "
        f"models whose model folders are missing ({', '.join(unknown)}); restore env.train.dynamics_model_config"
    )


def policy_env_spec(cfg: Any, checkpoint: Path) -> Any:
    """The ``EnvSpec`` the job built its policy for (what env worker 0 reports for ``env.train``): sizes of
    the job's own envs (Meta-World, LIBERO, ManiSkill or a world model), the tasks of the train env or
    of its groups."""
    from policy_and_value.config.env_checks import env_groups
    from policy_and_value.envs.base import EnvSpec

    train = cfg.env.train
    if train.env_type == "gym":
        raise ExportError(
            "env.train.env_type=gym: export_policy exports pi0 policies of Meta-World, LIBERO, ManiSkill or "
            "world-model jobs (gym envs give no camera images)"
        )
    action_dim, state_dim = job_sizes(cfg, checkpoint)
    envs = [c for _, c in env_groups(train)] or [train]
    first = envs[0]
    return EnvSpec(
        action_dim=action_dim,
        num_action_chunks=cfg.model.num_action_chunks or first.num_action_chunks,
        state_dim=state_dim,
        image_shape=(len(first.cameras), first.image_size, first.image_size),
        tasks=tuple(dict.fromkeys(t for env in envs for t in env.tasks)),
        action_low=(-1.0,) * action_dim,
        action_high=(1.0,) * action_dim,
    )


def resolve_model_dir(cfg: Any, override: str | None, checkpoint: Path) -> str | None:
    """``rollout.model_dir`` of the job (or ``--model-dir``) as an existing path: as written, or relative
    to the repository (jobs run from its root)."""
    given = override or cfg.rollout.model_dir
    if given is None:
        return None
    for candidate in (Path(given), REPO / given):
        if (candidate / "config.json").is_file():
            return str(candidate)
    option = "--model-dir" if override else f"rollout.model_dir (in {checkpoint / 'config.yaml'})"
    raise ExportError(
        f"{option}={given}: no policy directory there; the export needs the job's initial policy for its "
        "tokenizer and normalisation statistics (pass --model-dir PATH if it moved)"
    )


def read_weights(checkpoint: Path, weights: str) -> tuple[dict[str, Any], str]:
    """The policy's state dict from the rollout safetensors or the actor DCP, and the file it came from."""
    from toolkits.base.checkpoint import ROLLOUT_WEIGHTS, CheckpointError

    if weights == "rollout":
        from safetensors.torch import load_file

        path = checkpoint / ROLLOUT_WEIGHTS
        try:
            return load_file(str(path)), str(path)
        except Exception as err:  # noqa: BLE001 - safetensors raises its own types for bad files
            raise CheckpointError(f"{path}: unreadable ({' '.join(str(err).split())})") from None
    from toolkits.ckpt_convertor.convert_dcp_to_state_dict import load_model_state_dict

    dcp_dir = checkpoint / "actor"  # verified by verify_checkpoint before, and again by load_model_state_dict
    try:
        with warnings.catch_warnings():  # DCP warns that it reads without a process group, as intended
            warnings.filterwarnings("ignore", message="torch.distributed is disabled")
            return load_model_state_dict(str(dcp_dir)), str(dcp_dir)
    except CheckpointError:
        raise
    except Exception as err:  # noqa: BLE001 - DCP's reader errors are long; keep one line
        raise CheckpointError(
            f"{dcp_dir}: unreadable ({type(err).__name__}: {' '.join(str(err).split())[:300]})"
        ) from None


def load_strict(policy: Any, state: dict[str, Any], source: str) -> None:
    """Every tensor of the policy the job config builds, and nothing else, with the same shapes."""
    own = policy.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    wrong = [k for k in set(own) & set(state) if tuple(own[k].shape) != tuple(state[k].shape)]
    if missing or unexpected or wrong:
        raise ExportError(
            f"{source}: does not match the policy its config.yaml builds: missing {missing[:5]} "
            f"({len(missing)}), unexpected {unexpected[:5]} ({len(unexpected)}), wrong shapes {sorted(wrong)[:5]}"
        )
    policy.load_state_dict(state, strict=True)


def merged_policy(policy: Any) -> Any:
    """The same policy without LoRA: adapters folded into the base weights (a plain ``Pi0Policy``)."""
    if not policy.cfg.is_lora:
        return policy
    from policy_and_value.models.pi0 import Pi0Policy
    from policy_and_value.models.pi0.lora import merge_lora
    from policy_and_value.models.pi0.weights import load_policy_state_dict, policy_state_dict

    merge_lora(policy)
    plain = Pi0Policy(
        policy.cfg.replace(is_lora=False, lora_path=None), policy.tokenizer, policy.normalizer.stats() or None
    )
    load_policy_state_dict(plain, policy_state_dict(policy), source="the merged LoRA weights")
    return plain.eval()


def deploy_spec(cfg: Any, policy: Any, checkpoint: Path, weights: str) -> Any:
    """``deploy.json`` of the exported policy: the robot-facing env's cameras, state type and episode limit,
    the policy's sizes, and the instructions of every task the job trained or evaluated on."""
    from policy_and_value.config.env_checks import env_groups
    from toolkits.base.checkpoint import named_step
    from toolkits.deploy.spec import spec_for_env

    env = deploy_env(cfg)
    tasks: list[str] = []
    for e in (cfg.env.train, cfg.env.eval, *(c for _, c in env_groups(cfg.env.train))):
        tasks += [t for t in (e.tasks if e is not None else []) if t not in tasks]
    source = {
        "checkpoint": str(checkpoint.resolve()), "weights": weights, "global_step": named_step(str(checkpoint)),
        "experiment": cfg.runner.logger.experiment_name, "lora_merged": bool(cfg.model.pi0.get("is_lora")),
        "norm_stats": bool(policy.normalizer.stats()),  # False: trained without (identity), served the same
    }  # fmt: skip
    where = f"{checkpoint / 'config.yaml'}: env.{'eval' if env is cfg.env.eval else 'train'}"
    try:
        return spec_for_env(policy.cfg, env, tasks, source)
    except KeyError as err:
        raise ExportError(f"{where}: {err.args[0]}") from None
    except (ValueError, ImportError) as err:
        raise ExportError(f"{where}: {' '.join(str(err).split())}") from None


def check_output(out: Path, checkpoint: Path) -> None:
    """Refuse to replace anything but an earlier policy directory (never a checkpoint or a log dir)."""
    if out.resolve() == checkpoint.resolve() or checkpoint.resolve() in out.resolve().parents:
        raise ExportError(f"--out={out}: inside the checkpoint; choose a directory outside it")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "config.json").is_file())):
        raise ExportError(f"--out={out}: exists and is not a policy directory; choose a new path")


def export_policy(
    checkpoint: str | Path,
    out: str | Path | None,
    weights: str = "rollout",
    model_dir: str | None = None,
    registry: str | Path | None = None,
    make_current: bool = True,
    layout: str = "worldrl",
    asset_id: str | None = None,
) -> Path:
    """Rebuild the job's policy from ``checkpoint``, load ``weights``, merge LoRA and write ``out`` atomically, or
    publish it as the next version of ``registry``; returns the directory written."""
    import torch

    from policy_and_value.models.pi0 import save_pretrained
    from policy_and_value.models.registry import make_policy
    from toolkits.base.checkpoint import verify_checkpoint
    from toolkits.base.model_dir import replace_dir_atomically
    from toolkits.deploy.deploy_checks import norm_stats_problem
    from toolkits.deploy.registry import PolicyRegistry

    if weights not in WEIGHTS_CHOICES:
        raise ExportError(f"--weights={weights}: allowed values: {', '.join(WEIGHTS_CHOICES)}")
    if layout not in LAYOUTS:
        raise ExportError(f"--layout={layout}: allowed values: {', '.join(LAYOUTS)}")
    if asset_id is not None and (not asset_id or "/" in asset_id or asset_id.startswith(".")):
        raise ExportError(f"--asset-id={asset_id}: a plain folder name (e.g. metaworld)")
    if (out is None) == (registry is None):
        raise ExportError("export: give one of --out DIR and --registry ROOT")
    ckpt = resolve_checkpoint(checkpoint)
    versions = PolicyRegistry(registry) if registry is not None else None  # refused before any work
    if out is not None:
        check_output(Path(out), ckpt)
    verify_checkpoint(str(ckpt))
    cfg = load_job_config(ckpt)
    if cfg.model.policy_type not in PI0_TYPES:
        raise ExportError(
            f"model.policy_type={cfg.model.policy_type} (in {ckpt / 'config.yaml'}): export_policy writes pi0/pi05 "
            "directories; convert_dcp_to_state_dict.py exports the actor-critics' weights"
        )
    spec = policy_env_spec(cfg, ckpt)
    init_dir = resolve_model_dir(cfg, model_dir, ckpt)
    torch.manual_seed(cfg.runner.seed)  # as the workers build it (every weight is then overwritten)
    policy = make_policy(
        cfg.model, spec, logprob_type=cfg.algorithm.logprob_type,
        value_per_action=cfg.algorithm.reward_type == "action_level", model_dir=init_dir,
    )  # fmt: skip
    state, source = read_weights(ckpt, weights)
    load_strict(policy, state, source)
    policy = merged_policy(policy.eval())
    deploy = deploy_spec(cfg, policy, ckpt, weights)
    problem = norm_stats_problem(
        policy.normalizer.stats(), policy.cfg.norm_mode, deploy.state_dim, deploy.action_dim, deploy.action_low,
        deploy.action_high, trained_without=not deploy.source["norm_stats"],
    )  # fmt: skip
    if problem is not None:
        raise ExportError(
            f"--checkpoint={ckpt}: {problem} (rollout.model_dir {init_dir} gave the statistics)"
        )

    def write(tmp: Path) -> None:
        """Fill the temporary directory (renamed into place when complete)."""
        save_pretrained(policy, tmp, layout=layout)
        deploy.save(tmp)
        if layout == "openpi" and (tmp / "norm_stats.json").is_file():  # where openpi's loader reads them
            folder = tmp / "assets" / (asset_id or deploy_env(cfg).env_type)
            folder.mkdir(parents=True)
            shutil.copy2(tmp / "norm_stats.json", folder / "norm_stats.json")

    if versions is not None:
        source = {"checkpoint": str(ckpt.resolve()), "weights": weights}
        return versions.path(versions.publish(write, source=source, make_current=make_current))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    return replace_dir_atomically(out, write)


def main(argv: list[str] | None = None) -> int:
    """CLI: export and print what was written, or one error line (exit 2)."""
    from toolkits.base.checkpoint import CheckpointError

    p = argparse.ArgumentParser(
        prog=tool_prog("toolkits.ckpt_convertor.export_policy"), description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--checkpoint", required=True, help="LOGDIR/checkpoints/global_step_N (or LOGDIR: the latest)"
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="the policy directory to write (replaced if it is one)")
    where.add_argument("--registry", help="publish as the next version of this policy registry")
    p.add_argument(
        "--not-current", action="store_true", help="with --registry: publish, leave current as it is"
    )
    p.add_argument(
        "--weights", choices=WEIGHTS_CHOICES, default="rollout", help="rollout (EMA, evaluated) or actor"
    )
    p.add_argument("--model-dir", default=None, help="the job's rollout.model_dir, if it has moved")
    p.add_argument(
        "--layout", choices=LAYOUTS, default="worldrl", help="openpi: also readable by openpi's loader"
    )
    p.add_argument("--asset-id", default=None, help="with --layout openpi: assets/<asset_id>/norm_stats.json")
    args = p.parse_args(argv)
    try:
        out = export_policy(
            args.checkpoint, args.out, args.weights, args.model_dir, args.registry, not args.not_current,
            args.layout, args.asset_id,
        )  # fmt: skip
    except (ExportError, CheckpointError, OSError, ValueError, KeyError) as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    from toolkits.deploy.spec import DeploySpec

    d = DeploySpec.load(out)
    print(
        f"exported the {args.weights} weights of {d.source['checkpoint']} to {out}: cameras {d.cameras} at "
        f"{d.image_size}x{d.image_size}, state {d.state_dim}, {d.chunk_size} x {d.action_dim} actions per query"
        f"{', LoRA merged' if d.source['lora_merged'] else ''}\n"
        f"serve it: python -m toolkits.deploy.serve_policy --policy-dir {out}"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
