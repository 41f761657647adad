"""CONTRIBUTING.md's worked example: the experiment module and its strings, as printed, run end to end."""

import ast
import importlib.util
import json
import re
import sys

import pytest
import yaml

from llmparts import report, reproduce
from llmparts.provenance import project_root
from llmparts.strings import STRINGS

TEXT = (project_root() / "CONTRIBUTING.md").read_text(encoding="utf-8")


def block(first_line: str) -> str:
    """The body of the ```python block that opens with first_line."""
    (body,) = re.findall(rf"```python\n{re.escape(first_line)}\n(.*?)```", TEXT, flags=re.S)
    return body


def strings_entry(lang: str) -> dict:
    return ast.literal_eval("{" + block(f"# src/llmparts/strings.py, in {lang.upper()}") + "}")


@pytest.fixture
def tying(monkeypatch):
    """The example's module, loaded as llmparts.experiments.tying, and its strings, added to both tables."""
    path = project_root() / "build" / "contributing-example" / "tying.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block("# src/llmparts/experiments/tying.py"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("llmparts.experiments.tying", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # where its dataclass looks itself up
    spec.loader.exec_module(module)
    for lang in STRINGS:
        monkeypatch.setitem(STRINGS[lang], "tying", strings_entry(lang)["tying"])
    monkeypatch.setattr(reproduce, "REGISTRY", {"tying": module.EXPERIMENT})
    monkeypatch.setattr(report, "REGISTRY", {"tying": module.EXPERIMENT})
    return module.EXPERIMENT


def test_the_examples_strings_have_the_same_keys_and_placeholders_in_both_languages():
    en, zh = strings_entry("en")["tying"], strings_entry("zh")["tying"]
    assert en.keys() == zh.keys() and len(en["header"]) == len(zh["header"])
    assert re.findall(r"\{\w+\}", en["caption"]) == re.findall(r"\{\w+\}", zh["caption"])


@pytest.mark.slow
def test_the_worked_example_runs_through_reproduce_and_report(tying, tmp_path):
    assert reproduce.main(["--smoke", "--jobs", "1", "--out_dir", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "results" / "tying.json").read_text())
    assert [len(saved["losses"][head]) for head in ("tied", "untied")] == [2, 2]
    assert saved["params"]["untied"] - saved["params"]["tied"] == 65 * 128  # the output head's own matrix
    assert "build/contributing-example/tying.py" in saved["provenance"]["sources"]
    variables = yaml.safe_load((tmp_path / "_variables.yml").read_text(encoding="utf-8"))
    assert variables["tying"]["delta"] == f"{saved['delta']:+.4f}"
    zh = (tmp_path / "results" / "tables" / "tying.zh.md").read_text(encoding="utf-8")
    assert "| 共用（一個矩陣） |" in zh and zh.rstrip().endswith("{#tbl-tying}")
