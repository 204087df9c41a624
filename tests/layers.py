"""The import-layer check of docs/design.md: every import (at module level or inside a function) goes to the same
layer or one below, and no imports form a cycle, between modules or between the parts the layer table names."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

PACKAGES = ("policy_and_value", "world_models", "reward_models", "toolkits", "experiments", "benchmarks")
BLOCK = re.compile(r"```layers\n(.*?)```", re.S)


def read_layers(design_md: Path) -> list[tuple[str, list[str]]]:
    """The ``layers`` block of docs/design.md, top layer first: (layer name, module prefixes) per line."""
    match = BLOCK.search(design_md.read_text())
    if match is None:
        raise ValueError(f"{design_md}: no ```layers block")
    rows = [line.split() for line in match.group(1).splitlines() if line.strip() and not line.startswith("#")]
    return [(row[0], row[1:]) for row in rows]


def modules(root: Path) -> dict[str, Path]:
    """Module name -> file for every .py file of ``PACKAGES`` under ``root``."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports, wherever the import stands (functions included)."""
    known = modules(root)
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(
                        here[: len(here) - node.level + 1] + ([node.module] if node.module else [])
                    )
                targets = [f"{base}.{a.name}" for a in node.names] or [base]
            for target in targets:
                resolved = _resolve(target, known)
                if resolved and resolved != name:
                    graph[name].add(resolved)
    return graph


def unit_of(module: str, layers: list[tuple[str, list[str]]]) -> tuple[int, str] | None:
    """(layer index counted from the bottom, the longest prefix of the table that holds ``module``)."""
    best: tuple[int, str] | None = None
    for index, (_, prefixes) in enumerate(reversed(layers)):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[1])
            ):
                best = (index, prefix)
    return best


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(set(graph) | {t for ts in graph.values() for t in ts}):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def check(root: Path, layers: list[tuple[str, list[str]]]) -> list[str]:
    """Every problem, one line each: a module no layer holds, an import of a higher layer, an import cycle
    between modules or between the table's parts."""
    names = [name for name, _ in reversed(layers)]
    graph = import_graph(root)
    problems = []
    units: dict[str, set[str]] = defaultdict(set)
    for module in sorted(modules(root)):
        if unit_of(module, layers) is None:
            problems.append(f"{module}: in no layer of docs/design.md")
    for source, targets in sorted(graph.items()):
        src = unit_of(source, layers)
        for target in sorted(targets):
            dst = unit_of(target, layers)
            if src is None or dst is None:
                continue
            if dst[0] > src[0]:
                problems.append(
                    f"{source} ({names[src[0]]}) imports {target} ({names[dst[0]]}), a layer above it"
                )
            if dst[1] != src[1]:
                units[src[1]].add(dst[1])
    problems += [f"import cycle between modules: {' -> '.join(c)}" for c in _cycles(graph)]
    problems += [f"import cycle between parts: {' -> '.join(c)}" for c in _cycles(units)]
    return problems
