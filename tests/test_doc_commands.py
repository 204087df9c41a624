"""Every ``python -m MODULE`` the docs, configs and scripts tell users to run names a module that exists (and,
for a package, has a ``__main__``); found with the import system's path finders, importing nothing. Every
``worldrl SUBCOMMAND`` (``worldrl episodes TOOL``, ``worldrl recipe NAME``) they write names one of ``toolkits.cli``
(which imports nothing heavy)."""

import importlib.util
import re
from importlib.machinery import PathFinder
from pathlib import Path

from tests.assets import REPO
from toolkits.cli import COMMANDS, GROUPS

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
        if not PLACEHOLDER.match(name.rsplit(".", 1)[-1]):  # TOOL, experiments.harness.NAME
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


# `worldrl WORD [WORD]` (also .venv/bin/worldrl); not worldrl.egg-info, worldrl's, `worldrl` alone
WORLDRL = re.compile(r"(?<![\w.-])worldrl[ \t]+([a-z][\w-]*)(?:[ \t]*\\?\s+([A-Za-z][\w-]*))?")
# in Markdown, commands are in code: fenced blocks and inline spans (prose such as "worldrl post-trains" is not)
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")
PROSE = re.compile(
    r"\b(?:the|a|an|one|each|every|this|that|its)\s+$", re.I
)  # "the worldrl command", "one worldrl job"


def command_regions(text: str, markdown: bool) -> list[tuple[int, str]]:
    """(offset, text) of the parts of a file that hold commands: the code of Markdown, all of any other file."""
    if not markdown:
        return [(0, text)]
    regions = [(m.start(1), m.group(1)) for m in FENCED.finditer(text)]
    blanked = FENCED.sub(lambda m: " " * len(m.group(0)), text)  # offsets kept for the inline spans
    return regions + [(m.start(1), m.group(1)) for m in INLINE.finditer(blanked)]


def worldrl_references(text: str, markdown: bool = True) -> list[tuple[int, str]]:
    """(line number, ``worldrl ...`` words) of every ``worldrl`` subcommand in ``text``'s commands whose words
    ``toolkits.cli`` does not know; placeholders in capitals (COMMAND, NAME, TOOL) and prose ("the worldrl
    command") are left out."""
    wrong = []
    for offset, region in command_regions(text, markdown):
        for match in WORLDRL.finditer(region):
            if PROSE.search(region[max(0, match.start() - 40) : match.start()]):
                continue
            command, name = match.group(1), match.group(2)
            table = GROUPS.get(command)
            if command in COMMANDS or command == "help":
                continue
            if table is not None and (name is None or PLACEHOLDER.match(name) or name in table):
                continue
            words = command if table is None else f"{command} {name}"
            wrong.append((text.count("\n", 0, offset + match.start()) + 1, words))
    return wrong


def test_every_worldrl_command_names_a_subcommand_that_exists():
    seen, wrong = 0, []
    for p in doc_files():
        text = p.read_text()
        markdown = p.suffix == ".md"
        seen += sum(len(WORLDRL.findall(region)) for _, region in command_regions(text, markdown))
        wrong += [
            f"{p.relative_to(REPO)}:{line}: worldrl {words}"
            for line, words in worldrl_references(text, markdown)
        ]
    assert seen > 50  # the scan sees the docs' commands
    assert not wrong, "worldrl subcommands that do not exist: " + "; ".join(wrong)


def test_the_scan_names_a_worldrl_subcommand_that_does_not_exist():
    text = (
        "worldrl post-trains robot policies; `worldrl` is the console script (worldrl.egg-info)\n"
        "```bash\n"
        "worldrl train rl_release runner.max_steps=5; .venv/bin/worldrl sft data.path=D\n"
        "worldrl recipe outcome-start --demos 20; worldrl episodes merge --data A B --out C\n"
        "worldrl COMMAND --help; worldrl recipe NAME --help; worldrl episodes --help; worldrl --help\n"
        "worldrl trian quickstart; worldrl recipe outcome-starts; worldrl episodes \\\n    mergee --data A\n"
        "cli.py (the worldrl command), one worldrl job\n"
        "```\n"
        "and `worldrl export --checkpoint C`, `worldrl recipe\nlibero-loop`, `worldrl serv --policy-dir P`\n"
    )
    assert worldrl_references(text) == [
        (6, "trian"), (6, "recipe outcome-starts"), (6, "episodes mergee"), (11, "serv"),
    ]  # fmt: skip
    assert worldrl_references(
        "# models: worldrl recipe libero-loop; worldrl recipe libero_loop", markdown=False
    ) == [(1, "recipe libero_loop")]
