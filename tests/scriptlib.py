"""The repository's standalone scripts (scripts/NAME.py) as modules for the tests.

scripts/ is not a package and stays out of sys.path: each script is loaded from its file, once, under its
own name, the way `python scripts/NAME.py` would import it; a script that imports a sibling gets it the same way.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load(name: str):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before running it: dataclasses and sibling imports look it up there
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]
