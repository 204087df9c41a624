"""Compose a job config with Hydra (no working-directory change, no output folders): the composition every
job and tool shares, before its own schema validates the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from toolkits.base.errors import ConfigError

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
# mappings an override replaces instead of merging into (Hydra merges dicts): a placement given on the
# command line is the whole placement, and ``{}`` is an empty one, not "keep the config's"
REPLACED_MAPPINGS = ("cluster.component_placement",)


def available_configs(config_dir: str | Path | None = None) -> dict[str, str]:
    """Top-level job configs -> the first comment line of each file (its description)."""
    root = Path(config_dir or CONFIG_DIR)
    out = {}
    for path in sorted(root.glob("*.yaml")):
        first = next((ln for ln in path.read_text().splitlines() if ln.startswith("#")), "# ")
        out[path.stem] = first.lstrip("# ").strip()
    return out


def compose_config(config_name: str, overrides: list[str], config_dir: str | Path | None = None) -> dict:
    """Hydra compose + interpolation -> a plain dict (not yet validated).

    Value overrides (``key=value`` or ``+key=value``) are given to Hydra as ``++key=value`` (set or add),
    so users need not know which keys a YAML file spells out; the schema then accepts the key or rejects
    it with a did-you-mean line. Config-group choices (``cluster=separate``, ``env@env.train=...``) and
    deletions (``~key``) pass as written.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    root = Path(config_dir or CONFIG_DIR)
    if not (root / f"{config_name}.yaml").is_file():
        raise ConfigError(
            f"config error: CONFIG={config_name!r}: no such config; allowed: {', '.join(available_configs(root))}"
        )
    overrides = set_or_add(overrides, {p.name for p in root.iterdir() if p.is_dir()})
    try:
        with initialize_config_dir(config_dir=str(root), version_base=None):
            cfg = compose(config_name=config_name, overrides=overrides)
        _replace_mappings(cfg, overrides)
        missing = sorted(OmegaConf.missing_keys(cfg))
        if missing:
            raise ConfigError(
                f"config error: {missing[0]}=???: CONFIG={config_name!r} needs it set "
                f"(e.g. {missing[0]}=PATH; also unset: {', '.join(missing[1:]) or 'nothing else'})"
            )
        return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
    except (HydraException, OmegaConfBaseException) as err:
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
