"""Import a script under benchmarks/ as a module (benchmarks/ is not a package), for the tests of its parts."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, freshly executed (a test may patch its functions without touching another's);
    registered in ``sys.modules`` under ``name`` (replacing an earlier load), as an import would, so its dataclasses
    can resolve their types."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
