"""The Makefile on a fresh machine: it exports no path that does not exist, `make test` gets its system
packages (or stops) before running pytest, and skipping the browser tests is explicit and reported."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")  # `make test` always has it

PRINT_ENV = "print-recipe-env:\n\t@env -0\n"


def recipe_environment(makefile_dir: Path, env: dict) -> dict:
    """The environment a recipe of makefile_dir/Makefile runs with."""
    extra = makefile_dir / "print-env.mk"
    extra.write_text(PRINT_ENV)
    try:
        out = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", str(extra),
                              "print-recipe-env"], cwd=makefile_dir, env=env, capture_output=True, text=True,
                             timeout=60, check=True).stdout
    finally:
        extra.unlink()
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def exported_by_make(makefile_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TINYSHAKESPEARE"}
    return {k: v for k, v in recipe_environment(makefile_dir, env).items() if env.get(k) != v}


def dry_run(*args: str, env_extra: dict | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SKIP_BROWSER", "MAKEFLAGS", "MAKELEVEL")}
    out = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT, env={**env, **(env_extra or {})},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def index_of(lines: list[str], needle: str) -> int:
    found = [i for i, line in enumerate(lines) if needle in line]
    assert found, f"no recipe line runs `{needle}`"
    return found[0]


@pytest.mark.parametrize("where", ["fresh folder without the dataset", "this checkout"])
def test_make_exports_no_path_that_does_not_exist(where, tmp_path):
    if where == "this checkout":
        folder = ROOT
    else:
        folder = tmp_path
        shutil.copy(ROOT / "Makefile", folder / "Makefile")
    exported = exported_by_make(folder)
    assert "TINYSHAKESPEARE" not in exported or Path(exported["TINYSHAKESPEARE"]).is_file()
    for name, value in exported.items():
        if value.startswith("/"):
            assert Path(value).exists(), f"make exports {name}={value}, which does not exist"


def test_make_test_ensures_chromium_cjk_font_and_npm_before_pytest():
    lines = dry_run("test")
    deps = index_of(lines, "scripts/system_deps.py chromium cjk-font npm")
    assert deps < index_of(lines, "-m pytest")


@pytest.mark.parametrize("how", ["environment", "command line"])
def test_skip_browser_is_the_only_way_make_test_goes_without_chromium(how):
    lines = (dry_run("test", env_extra={"SKIP_BROWSER": "1"}) if how == "environment"
             else dry_run("test", "SKIP_BROWSER=1"))
    deps = index_of(lines, "scripts/system_deps.py")
    assert "chromium" not in lines[deps] and "cjk-font npm" in lines[deps]
    assert deps < index_of(lines, "-m pytest")


@pytest.mark.parametrize("target", ["reproduce", "smoke"])
def test_reproduce_checks_for_the_cjk_font_before_any_training(target):
    lines = dry_run(target)
    assert index_of(lines, "scripts/system_deps.py cjk-font") < index_of(lines, "llmparts.cli reproduce")


# ---------------------------------------------------------------- SKIP_BROWSER=1 in pytest
BROWSER_TEST = "import pytest\npytestmark = pytest.mark.browser\n\ndef test_in_the_browser():\n    pass\n"
PLAIN_TEST = "def test_plain():\n    pass\n"


def run_pytest(tmp_path: Path, skip_browser: str | None) -> subprocess.CompletedProcess:
    shutil.copy(ROOT / "tests/conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_browser_like.py").write_text(BROWSER_TEST)
    (tmp_path / "test_plain.py").write_text(PLAIN_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    browser: runs in Chromium\n")
    env = {k: v for k, v in os.environ.items() if k != "SKIP_BROWSER"}
    if skip_browser is not None:
        env["SKIP_BROWSER"] = skip_browser
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_browser_tests_run_by_default(tmp_path):
    out = run_pytest(tmp_path, None)
    assert out.returncode == 0 and "2 passed" in out.stdout
    assert "SKIP_BROWSER" not in out.stdout


def test_skip_browser_skips_them_and_the_summary_says_so(tmp_path):
    out = run_pytest(tmp_path, "1")
    assert out.returncode == 0 and "1 passed, 1 skipped" in out.stdout
    assert out.stdout.splitlines()[-2:-1] == ["SKIP_BROWSER=1: 1 browser tests were not run"]  # above the counts


def test_skip_browser_with_another_value_is_a_usage_error(tmp_path):
    out = run_pytest(tmp_path, "yes")
    assert out.returncode == 4
    assert "SKIP_BROWSER ('yes') must be 1 (skip the browser tests), 0 or unset" in out.stderr
