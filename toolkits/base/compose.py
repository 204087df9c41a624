"""Compose a job config with Hydra (no working-directory change, no output folders): the composition every
job and tool shares, before its own schema validates the result."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from toolkits.base.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
CONFIG_DIR = (
    REPO / "configs"
)  # the user-facing jobs and the groups they compose (env/, model/, cluster/, ...)
EXPERIMENT_CONFIG_DIR = REPO / "experiments" / "configs"  # research arms, composed from both folders
# mappings an override replaces instead of merging into (Hydra merges dicts): a placement given on the
# command line is the whole placement, and ``{}`` is an empty one, not "keep the config's"
REPLACED_MAPPINGS = ("cluster.component_placement",)


def available_configs(config_dir: str | Path | None = None) -> dict[str, str]:
    """Top-level job configs of ``config_dir`` (default ``configs/``) -> the first comment line of each file."""
    root = Path(config_dir or CONFIG_DIR)
    out = {}
    for path in sorted(root.glob("*.yaml")):
        first = next((ln for ln in path.read_text().splitlines() if ln.startswith("#")), "# ")
        out[path.stem] = first.lstrip("# ").strip()
    return out


def find_config(config_name: str, config_dir: str | Path | None = None) -> tuple[Path, str]:
    """(the folder Hydra starts from, the config's name there) for a job name, a group config name
    (``offline/sft_pi0_tiny``) or a path to a YAML file: ``configs/`` first, then ``experiments/configs/``;
    ``config_dir`` searches that folder alone."""
    if config_name.endswith((".yaml", ".yml")):
        path = Path(config_name)
        if not path.is_file():
            raise ConfigError(f"config error: CONFIG={config_name!r}: no such file")
        return path.resolve().parent, path.stem
    roots = [Path(config_dir)] if config_dir else [CONFIG_DIR, EXPERIMENT_CONFIG_DIR]
    for root in roots:
        if (root / f"{config_name}.yaml").is_file():
            return root, config_name
    research = (
        ""
        if config_dir
        else f"; research arms (experiments/configs): {', '.join(available_configs(EXPERIMENT_CONFIG_DIR))}"
    )
    raise ConfigError(
        f"config error: CONFIG={config_name!r}: no such config; jobs: {', '.join(available_configs(roots[0]))}{research}"
    )


def compose_config(config_name: str, overrides: list[str], config_dir: str | Path | None = None) -> dict:
    """Hydra compose + interpolation -> a plain dict (not yet validated).

    ``config_name`` as ``find_config`` takes it. A config outside ``configs/`` composes the groups and jobs of
    ``configs/`` and ``experiments/configs/`` too (Hydra's search path), so a research arm may extend a job.
    Value overrides (``key=value`` or ``+key=value``) are given to Hydra as ``++key=value`` (set or add),
    so users need not know which keys a YAML file spells out; the schema then accepts the key or rejects
    it with a did-you-mean line. Config-group choices (``cluster=separate``, ``env@env.train=...``) and
    deletions (``~key``) pass as written.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    root, name = find_config(config_name, config_dir)
    search = (
        [] if config_dir else [d for d in (CONFIG_DIR, EXPERIMENT_CONFIG_DIR) if d != root and d.is_dir()]
    )
    groups = {p.name for d in (root, *search) for p in d.iterdir() if p.is_dir()}
    overrides = set_or_add(overrides, groups)
    hydra_overrides = [f"hydra.searchpath=[{','.join(f'file://{d}' for d in search)}]"] if search else []
    try:
        with initialize_config_dir(config_dir=str(root), version_base=None):
            cfg = compose(config_name=name, overrides=overrides + hydra_overrides)
        _replace_mappings(cfg, overrides)
        missing = sorted(OmegaConf.missing_keys(cfg))
        if missing:
            raise ConfigError(
                f"config error: {missing[0]}=???: CONFIG={config_name!r} needs it set "
                f"(e.g. {missing[0]}=PATH; also unset: {', '.join(missing[1:]) or 'nothing else'})"
            )
        return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
    except (HydraException, OmegaConfBaseException) as err:
        listed = [o for o in overrides if re.search(r"=\[[^\"']*=", o)]  # an unquoted item holds '='
        if listed:  # key=[a.b=1]: Hydra's grammar needs list items holding '=' quoted
            key = listed[0].lstrip("+").split("=", 1)[0]
            raise ConfigError(
                f'config error: {key}: quote list items that hold "=": {key}=\'["a.b=1","c=2"]\' (as a shell '
                f"argument, the outer quotes keep the inner ones)"
            ) from None
        raise ConfigError(f"config error: overrides {overrides}: {' '.join(str(err).split())}") from None


def set_or_add(overrides: list[str], groups: set[str]) -> list[str]:
    """``key=value`` and ``+key=value`` as Hydra's ``++key=value``, except choices of the config ``groups``
    (folders of configs/, also as ``group@package``) and ``~`` / ``++`` overrides, kept as written."""
    out = []
    for override in overrides:
        bare = override.lstrip("+")
        key = bare.split("=", 1)[0]
        if override.startswith(("~", "++")) or "=" not in bare or key.split("@", 1)[0] in groups:
            out.append(override)
        else:
            out.append("++" + bare)
    return out


def _replace_mappings(cfg: Any, overrides: list[str]) -> None:
    """Set each ``REPLACED_MAPPINGS`` key given as a dict override to exactly that dict."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    for override in OverridesParser.create().parse_overrides(overrides):
        value = override.value()
        if override.key_or_group in REPLACED_MAPPINGS and isinstance(value, dict):
            OmegaConf.update(cfg, override.key_or_group, value, merge=False)
