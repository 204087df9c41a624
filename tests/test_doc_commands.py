"""Every ``python -m MODULE`` the docs, configs and scripts tell users to run names a module that exists (and,
for a package, has a ``__main__``); found with the import system's path finders, importing nothing."""

import importlib.util
import re
from importlib.machinery import PathFinder
from pathlib import Path

from tests.assets import REPO

DOC_GLOBS = (
    "README.md", "docs/**/*.md", "configs/**/*.yaml", "assets/**/README.md", "toolkits/**/README.md",
    "benchmarks/**/*.md", "experiments/**/*.md", "experiments/**/*.yaml", "scripts/**/*.sh", "Makefile",
)  # fmt: skip
# `-m NAME` after a Python (python, python3, .venv/bin/python, "$PY", $(VPY), launchers such as torchrun) and a dotted
# or lower-case name; `pytest -m "not slow"` selects markers and is not matched
MODULE_FLAG = re.compile(
    r"(?<![\w-])(?:python3?|\$\{?PY\}?\"?|\$\(V?PY\)|[\w./-]*bin/python3?|torchrun|launch)\s+-m\s+([A-Za-z_][\w.]*)"
)
PLACEHOLDER = re.compile(r"^[A-Z_]+$")  # python -m TOOL, MODULE: the docs' placeholders


def module_exists(name: str) -> bool:
    """Whether ``python -m name`` finds a module to run: each package on the path found without importing
    it (so no package ``__init__`` runs), a package needing its ``__main__``."""
    parts = name.split(".")
    spec = importlib.util.find_spec(parts[0])  # a top-level name: nothing is imported
    for part in parts[1:]:
        if spec is None or spec.submodule_search_locations is None:
            return False
        spec = PathFinder.find_spec(part, list(spec.submodule_search_locations))
    if spec is None:
        return False
    if spec.submodule_search_locations is not None:
        return PathFinder.find_spec("__main__", list(spec.submodule_search_locations)) is not None
    return True


def module_references(text: str) -> list[tuple[int, str]]:
    """(line number, module) of every ``python -m MODULE`` in ``text``, placeholders left out."""
    found = []
    for match in MODULE_FLAG.finditer(text):
        name = match.group(1).rstrip(".")
        if not PLACEHOLDER.match(name):
            found.append((text.count("\n", 0, match.start()) + 1, name))
    return found


def doc_files() -> list[Path]:
    """The files scanned, each once."""
    return sorted({p for pattern in DOC_GLOBS for p in REPO.glob(pattern) if p.is_file()})


def test_every_python_m_reference_names_a_module_that_exists():
    files = doc_files()
    assert any(p.name == "rl_release_full.yaml" for p in files) and any(p.name == "README.md" for p in files)
    references = [(p, line, name) for p in files for line, name in module_references(p.read_text())]
    assert len(references) > 50  # the scan sees the docs' commands
    missing = [
        f"{p.relative_to(REPO)}:{line}: python -m {name}"
        for p, line, name in references
        if not module_exists(name)
    ]
    assert not missing, "modules that do not exist: " + "; ".join(missing)


def test_the_scan_names_a_module_that_does_not_exist():
    text = (
        "# PI05_POLICY_DIR: a policy directory (python -m toolkits.ckpt_convertor.convert_openpi for openpi weights,\n"
        "    .venv/bin/python -m toolkits.deploy.serve_policy --policy-dir DIR\n"
        '  "$PY" -m policy_and_value.offline.train_sft offline/sft_pi0_tiny \\\n'
        "python -m TOOL [CONFIG]; pytest -m slow; python3 -m venv .venv; python -m toolkits.episodes\n"
        '$(VPY) -m pip install; $(PYTEST) -m "not slow" tests\n'
    )
    refs = module_references(text)
    assert refs == [
        (1, "toolkits.ckpt_convertor.convert_openpi"), (2, "toolkits.deploy.serve_policy"),
        (3, "policy_and_value.offline.train_sft"), (4, "venv"), (4, "toolkits.episodes"), (5, "pip"),
    ]  # fmt: skip
    assert [name for _, name in refs if not module_exists(name)] == [
        "toolkits.ckpt_convertor.convert_openpi",
        "toolkits.episodes",  # a package without __main__: python -m cannot run it
    ]
