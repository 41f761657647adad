"""The committed results/, images/ and _variables.yml: fresh for the current code, full scale, complete,
and exactly what llmparts.report makes of results/*.json."""

import hashlib
import json
import re

import pytest
import yaml

from llmparts import report
from llmparts.experiments import REGISTRY
from llmparts.provenance import fingerprint, project_root
from llmparts.reproduce import sources

REPO_ROOT = project_root()
RESULTS = REPO_ROOT / "results"
LANGS = ("zh", "en")
RESULT_NAMES = list(REGISTRY)


def load(name):
    path = RESULTS / f"{name}.json"
    assert path.is_file(), f"results/{name}.json is missing: run `make reproduce`"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", RESULT_NAMES)
def test_committed_results_are_not_stale_for_the_current_code(name):
    data = load(name)
    prov = data["provenance"]
    assert prov["sources"] == sorted(sources(REGISTRY[name])), \
        f"results/{name}.json was fingerprinted over other sources: run `make reproduce`"
    assert fingerprint(data["config"], prov["sources"]) == prov["fingerprint"], \
        f"results/{name}.json is stale for the current code (fingerprint mismatch): run `make reproduce`"


@pytest.mark.parametrize("name", RESULT_NAMES)
def test_committed_results_come_from_the_full_run_not_the_smoke_run(name):
    assert load(name)["provenance"]["smoke"] is False, \
        f"results/{name}.json holds smoke-scale results: run `make reproduce`"


@pytest.mark.parametrize("name", RESULT_NAMES)
def test_committed_config_is_the_one_the_full_run_uses(name):
    assert load(name)["config"] == json.loads(json.dumps(REGISTRY[name].config("full"))), \
        f"results/{name}.json was made with another experiment config: run `make reproduce`"


def test_every_generated_table_and_figure_exists_in_both_languages():
    reports = report.collect_reports(report.load_results(RESULTS)).values()
    missing = [f"results/tables/{t}.{lang}.md" for r in reports for t in r.tables for lang in LANGS
               if not (RESULTS / "tables" / f"{t}.{lang}.md").is_file()]
    missing += [f"images/{f}.{lang}.png" for r in reports for f in r.figures for lang in LANGS
                if not (REPO_ROOT / "images" / f"{f}.{lang}.png").is_file()]
    assert not missing, f"missing generated files {missing}: run `make reproduce`"


def test_exported_weights_are_the_file_weights_json_describes():
    meta = load("weights")
    data = (REPO_ROOT / meta["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == meta["sha256"] and len(data) == meta["bytes"] < 8 * 2**20


def test_report_reproduces_committed_variables_and_tables_byte_for_byte(tmp_path):
    assert report.main(["--results", str(RESULTS), "--out", str(tmp_path), "--no_figures"]) == 0
    generated = [tmp_path / "_variables.yml"] + sorted((tmp_path / "results" / "tables").glob("*.md"))
    for path in generated:
        rel = path.relative_to(tmp_path)
        committed = REPO_ROOT / rel
        assert committed.is_file(), f"{rel} is not committed: run `make reproduce`"
        assert committed.read_bytes() == path.read_bytes(), \
            f"{rel} differs from what llmparts.report writes from results/: run `python -m llmparts.report`"


def chapter_texts():
    return {p: p.read_text(encoding="utf-8") for p in sorted((REPO_ROOT / "book").rglob("*.qmd"))}


def test_chapters_include_only_generated_tables_and_figures_that_exist():
    missing = []
    for path, text in chapter_texts().items():
        for rel in re.findall(r"\{\{<\s*include\s+/?(results/tables/\S+)\s*>\}\}", text):
            missing += [f"{path.name}: {rel}"] if not (REPO_ROOT / rel).is_file() else []
        for rel in re.findall(r"\]\(/?(images/[^)\s]+)\)", text):
            missing += [f"{path.name}: {rel}"] if not (REPO_ROOT / rel).is_file() else []
    assert not missing, f"chapters point at generated files that do not exist: {missing}"


def test_chapters_use_only_variables_the_report_writes():
    variables = yaml.safe_load((REPO_ROOT / "_variables.yml").read_text(encoding="utf-8"))
    known = set(report.flat_keys(variables))
    unknown = [f"{path.name}: {key}" for path, text in chapter_texts().items()
               for key in re.findall(r"\{\{<\s*var\s+(\S+)\s*>\}\}", text) if key not in known]
    assert not unknown, f"chapters use variables that _variables.yml does not hold: {unknown}"
