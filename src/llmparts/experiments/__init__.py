"""The experiments behind every number in the book: one module each in this folder, found by `REGISTRY`.

A module defines a subclass of `base.Experiment` and one instance of it named EXPERIMENT; its words live in
llmparts/strings.py. `llmparts reproduce` (reproduce.py) runs them and `python -m llmparts.report`
(report.py) turns their results into the book's tables, figures and variables. CONTRIBUTING.md shows how
to add one.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import Experiment


def discover() -> dict[str, Experiment]:
    """name -> experiment, for every module here that defines EXPERIMENT, in the order of their names."""
    found = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        experiment = getattr(importlib.import_module(f"{__name__}.{module}"), "EXPERIMENT", None)
        if experiment is not None:
            if experiment.name in found:
                raise ValueError(f"experiment name ({experiment.name!r}) of {module}.py is taken already")
            found[experiment.name] = experiment
    return found


REGISTRY = discover()
