"""``worldrl registry``: make a policy registry, publish policy directories into it, list, show, verify, roll back.

    worldrl registry init --registry ROOT
    worldrl registry publish --registry ROOT --policy-dir DIR [--note TEXT] [--not-current]
    worldrl registry list --registry ROOT
    worldrl registry show --registry ROOT [--version N]        (default: the current one)
    worldrl registry rollback --registry ROOT [--to N]         (default: the current version's parent)
    worldrl registry set-current --registry ROOT --version N
    worldrl registry verify --registry ROOT [--version N]
    worldrl registry clean --registry ROOT                     (what publishes killed midway left in staging/)

``worldrl export --checkpoint C --registry ROOT`` publishes a trained checkpoint as the next version.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from toolkits.base.cli import tool_prog
from toolkits.base.errors import ConfigError, config_error
from toolkits.deploy.registry import PolicyRegistry, RegistryError, parse_version


def _version(registry: PolicyRegistry, text: str | None) -> int:
    """``--version`` as a number, or the current version when not given."""
    if text is not None:
        return parse_version(text)
    registry.current_path()  # raises when nothing is published yet
    return registry.current()


def _publish(args: argparse.Namespace) -> str:
    from policy_and_value.models.pi0.configuration_pi0 import policy_dir_problem
    from toolkits.deploy.deploy_checks import policy_dir_deploy_problem

    problem = policy_dir_problem(args.policy_dir) or policy_dir_deploy_problem(args.policy_dir)
    if problem is not None:
        raise config_error("--policy-dir", args.policy_dir, problem)
    registry = PolicyRegistry(args.registry)
    source = {"note": args.note} if args.note else {}
    version = registry.publish_directory(args.policy_dir, source=source, make_current=not args.not_current)
    state = "current" if not args.not_current else f"not current (current: {registry.current()})"
    return f"published {args.policy_dir} as version {version} of {args.registry}, {state}"


def _list(args: argparse.Namespace) -> str:
    registry = PolicyRegistry(args.registry)
    current = registry.current()
    lines = []
    for version in registry.versions():
        m = registry.manifest(version)
        mark = "*" if version == current else " "
        origin = m.source.get("checkpoint") or m.source.get("policy_dir") or "-"
        gate = " ".join(f"{k}={v}" for k, v in m.gate.items())
        lines.append(
            f"{mark} {version:4d}  parent {m.parent or '-':>4}  {m.created}  {origin}  {gate}".rstrip()
        )
    return "\n".join(lines) if lines else f"{args.registry}: no versions yet"


def _show(args: argparse.Namespace) -> str:
    registry = PolicyRegistry(args.registry)
    version = _version(registry, args.version)
    data = {"path": str(registry.path(version)), "current": version == registry.current(),
            **asdict(registry.manifest(version))}  # fmt: skip
    data["files"] = len(data["files"])
    return json.dumps(data, indent=1)


def _rollback(args: argparse.Namespace) -> str:
    registry = PolicyRegistry(args.registry)
    before = registry.current()
    version = registry.rollback(None if args.to is None else parse_version(args.to))
    return f"rolled back {args.registry}: current is version {version} (was {before})"


def _set_current(args: argparse.Namespace) -> str:
    registry = PolicyRegistry(args.registry)
    version = parse_version(args.version)
    registry.set_current(version)
    return f"{args.registry}: current is version {version}"


def _verify(args: argparse.Namespace) -> str:
    registry = PolicyRegistry(args.registry)
    versions = registry.versions() if args.version is None else [parse_version(args.version)]
    bad = {v: registry.verify(v) for v in versions}
    bad = {v: problems for v, problems in bad.items() if problems}
    if bad:
        raise RegistryError("; ".join(f"version {v}: {', '.join(p)}" for v, p in bad.items()))
    return f"{args.registry}: {len(versions)} version(s) match their manifests"


def main(argv: list[str] | None = None) -> int:
    """CLI: one action; prints what it did, or one error line (exit 2)."""
    p = argparse.ArgumentParser(
        prog=tool_prog("toolkits.deploy.registry_cli"), description=__doc__.splitlines()[0]
    )
    sub = p.add_subparsers(dest="action", required=True)
    actions = {
        "init": (lambda a: f"{PolicyRegistry.create(a.registry).root}: a policy registry", "make an empty registry"),
        "publish": (_publish, "publish a policy directory as the next version"),
        "list": (_list, "every version (* current), its parent, origin and gate"),
        "show": (_show, "a version's manifest"),
        "rollback": (_rollback, "point current back (at the parent, or --to N)"),
        "set-current": (_set_current, "point current at any version"),
        "verify": (_verify, "check versions' files against their manifests"),
        "clean": (lambda a: f"removed {PolicyRegistry(a.registry).clean_staging()} stale staging dir(s)",
                  "remove what killed publishes left"),
    }  # fmt: skip
    for name, (_, what) in actions.items():
        q = sub.add_parser(name, help=what, description=what)
        q.add_argument("--registry", required=True, help="the registry's root directory")
        if name == "publish":
            q.add_argument("--policy-dir", required=True, help="an exported policy directory")
            q.add_argument("--note", default=None, help="a note kept in the manifest's source")
            q.add_argument("--not-current", action="store_true", help="publish without moving the pointer")
        if name in ("show", "verify"):
            q.add_argument(
                "--version", default=None, help="a version (default: show the current, verify all)"
            )
        if name == "set-current":
            q.add_argument("--version", required=True, help="the version to serve")
        if name == "rollback":
            q.add_argument(
                "--to", default=None, help="the version to go back to (default: the current's parent)"
            )
    args = p.parse_args(argv)
    try:
        print(actions[args.action][0](args))
    except (RegistryError, ConfigError, OSError) as err:
        message = str(err) if isinstance(err, ConfigError) else f"error: {' '.join(str(err).split())}"
        print(message, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
