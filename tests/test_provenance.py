"""provenance.py: results know the code and config they came from; a fingerprint that changes with the code,
not with its comments, docstrings or reports."""

import ast

import pytest

from llmparts import provenance
from llmparts.experiments import REGISTRY
from llmparts.provenance import CORE_SOURCES, fingerprint, normalized_source, source_path
from llmparts.reproduce import sources

MODULE = '''"""Module docstring."""
import math


def area(r):
    """Area of a circle."""
    return math.pi * r ** 2  # pi r squared


class Circle:
    def run(self):
        return area(1)

    def report(self, result):
        return f"{result:.2f}"


def report_table(result):
    return str(result)
'''
# Modules that decide no number: the report's words, formats and figures, and the provenance itself.
DECIDE_NOTHING = {f"src/llmparts/{name}.py" for name in ("strings", "tables", "figures", "provenance")}


def write_module(folder, text):
    (folder / "m.py").write_text(text)
    return fingerprint({"iters": 10}, ["m.py"], root=folder)


def test_fingerprint_ignores_docstrings_comments_and_formatting(tmp_path):
    before = write_module(tmp_path, MODULE)
    edited = MODULE.replace('"""Area of a circle."""', '"""The area, pi r^2."""').replace("# pi r squared", "")
    edited = edited.replace('"""Module docstring."""', "# a comment instead of a docstring\n")
    assert write_module(tmp_path, edited.replace("r ** 2", "r**2")) == before


def test_fingerprint_ignores_the_report_code_of_an_experiment(tmp_path):
    before = write_module(tmp_path, MODULE)
    edited = MODULE.replace('f"{result:.2f}"', 'f"{result:.4f}"').replace("str(result)", "repr(result)")
    assert write_module(tmp_path, edited) == before
    assert write_module(tmp_path, MODULE.replace("return area(1)", "return area(2)")) != before


def test_fingerprint_changes_when_code_changes(tmp_path):
    before = write_module(tmp_path, MODULE)
    assert write_module(tmp_path, MODULE.replace("r ** 2", "r ** 3")) != before


def test_fingerprint_changes_when_config_changes(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    assert fingerprint({"iters": 10}, ["m.py"], root=tmp_path) != fingerprint({"iters": 11}, ["m.py"], root=tmp_path)


def test_fingerprint_of_a_missing_source_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.py"):
        fingerprint({}, ["nope.py"], root=tmp_path)


def test_docstring_only_function_keeps_a_valid_body():
    assert "Pass" in normalized_source('def f():\n    """only a docstring"""\n')


def test_package_sources_are_found_in_the_installed_package():
    assert source_path("src/llmparts/train.py") == provenance.PACKAGE_DIR / "train.py"
    assert source_path("examples/tiny_modern.py").parts[-2:] == ("examples", "tiny_modern.py")


def package_imports(tree):
    """The module's `from .x import y` statements, but not those under `if __name__ == "__main__":`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            yield node
        yield from package_imports(node)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_experiments_sources_exist_and_cover_the_package_modules_its_code_imports(name):
    covered = set(sources(REGISTRY[name]))
    for rel in sorted(covered):
        path = source_path(rel)
        assert path.is_file(), rel
        if not rel.startswith("src/llmparts/"):
            continue
        package = rel.removeprefix("src/").rsplit("/", 1)[0].split("/")  # llmparts or llmparts/experiments
        for node in package_imports(ast.parse(path.read_text(encoding="utf-8"))):
                base = package[:len(package) - node.level + 1]
                for module in ([node.module] if node.module else [a.name for a in node.names]):
                    imported = "src/" + "/".join(base + module.split(".")) + ".py"
                    if source_path(imported).is_file() and imported not in DECIDE_NOTHING:
                        assert imported in covered, f"{rel} imports {imported}, which {name}'s fingerprint misses"


def test_core_sources_are_the_training_code():
    assert "src/llmparts/train.py" in CORE_SOURCES and "src/llmparts/report.py" not in CORE_SOURCES


def test_provenance_records_commit_runtime_and_smoke_flag():
    files = sources(REGISTRY["ablation"])
    prov = provenance.provenance({"a": 1}, files, threads=3, seeds=[0, 1], wall_time_s=1.234, smoke=True)
    assert len(prov["commit"]) == 40 and prov["threads"] == 3 and prov["seeds"] == [0, 1]
    assert prov["smoke"] is True and prov["wall_time_s"] == 1.23
    assert prov["fingerprint"] == fingerprint({"a": 1}, files)
