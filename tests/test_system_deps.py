"""scripts/system_deps.py: a missing system package is installed where the machine allows it (apt-get as root
or with password-less sudo), otherwise the run stops with one line naming the command to run.

Nothing here installs or removes anything: the machine's state is simulated by pointing the checks at
paths that do not exist and by recording the apt-get commands instead of running them.
"""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import scriptlib

ROOT = Path(__file__).resolve().parents[1]
system_deps = scriptlib.load("system_deps")

ROOT_PREFIX = ["env", "DEBIAN_FRONTEND=noninteractive"]


@pytest.fixture
def no_chromium(monkeypatch, tmp_path):
    """Chromium's path points at a file that does not exist (yet)."""
    path = tmp_path / "bin" / "chromium"
    monkeypatch.setattr(system_deps, "CHROMIUM", path)
    return path


class Apt:
    """Records the commands it is given; `provides` says which file appears when a package is installed."""

    def __init__(self, status=0, provides=None):
        self.status, self.provides, self.commands = status, provides or {}, []

    def __call__(self, command):
        self.commands.append(command)
        if self.status == 0 and "install" in command:
            for package, path in self.provides.items():
                if package in command:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text("#!/bin/sh\n")
                    path.chmod(0o755)
        return SimpleNamespace(returncode=self.status)


def test_chromium_is_the_binary_the_browser_tests_launch():
    assert system_deps.CHROMIUM == Path(scriptlib.load("browser_site").CHROMIUM)


def test_missing_chromium_that_cannot_be_installed_stops_with_one_line_naming_the_command(no_chromium):
    error = system_deps.ensure(["chromium"], find_prefix=lambda: None, run=Apt())
    assert "\n" not in error
    assert f"{no_chromium} is missing" in error
    assert "run `sudo apt-get install -y --no-install-recommends chromium`" in error
    assert "SKIP_BROWSER=1 make test" in error


def test_the_readme_shows_the_line_a_user_without_chromium_sees(monkeypatch):
    monkeypatch.setattr(system_deps.os, "access", lambda path, mode: False)
    line = system_deps.ensure(["chromium"], find_prefix=lambda: None, run=Apt())
    assert f"``{line}``" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_missing_chromium_is_installed_with_apt_get_as_root(no_chromium):
    apt = Apt(provides={"chromium": no_chromium})
    assert system_deps.ensure(["chromium"], find_prefix=lambda: ROOT_PREFIX, run=apt) is None
    assert apt.commands == [
        ROOT_PREFIX + ["apt-get", "update", "-qq"],
        ROOT_PREFIX + ["apt-get", "install", "-y", "--no-install-recommends", "-qq", "chromium"],
    ]


def test_present_requirements_run_no_command(no_chromium):
    no_chromium.parent.mkdir(parents=True)
    no_chromium.write_text("")
    no_chromium.chmod(0o755)
    apt = Apt()
    assert system_deps.ensure(["chromium"], find_prefix=lambda: ROOT_PREFIX, run=apt) is None
    assert apt.commands == []


def test_failed_install_says_which_command_failed_and_what_is_still_missing(no_chromium):
    error = system_deps.ensure(["chromium"], find_prefix=lambda: ROOT_PREFIX, run=Apt(status=100))
    assert "\n" not in error
    assert f"{no_chromium} is missing" in error
    assert "`env DEBIAN_FRONTEND=noninteractive apt-get update -qq` failed with exit status 100" in error


def test_everything_missing_is_installed_in_one_apt_call_and_what_stays_missing_is_named(no_chromium, monkeypatch):
    monkeypatch.setattr(system_deps.shutil, "which", lambda name: None)  # no npm, before and after
    apt = Apt(provides={"chromium": no_chromium})
    error = system_deps.ensure(["chromium", "npm"], find_prefix=lambda: ROOT_PREFIX, run=apt)
    assert apt.commands[-1][-3:] == ["chromium", "nodejs", "npm"]
    assert len(apt.commands) == 2
    assert "npm is missing" in error and "after installing chromium nodejs npm" in error
    assert error.endswith("run `sudo apt-get install -y --no-install-recommends nodejs npm`")  # chromium is here now


def test_cjk_font_check_is_the_search_the_figures_make(monkeypatch):
    from llmparts import figures

    def no_font():
        raise RuntimeError("no font draws the zh figures' characters")

    monkeypatch.setattr(figures, "cjk_font_path", no_font)
    assert "no CJK font" in system_deps.cjk_font_missing()
    monkeypatch.setattr(figures, "cjk_font_path", lambda: "/fonts/NotoSansCJK-Regular.ttc")
    assert system_deps.cjk_font_missing() is None
    assert system_deps.REQUIREMENTS["cjk-font"].packages == ("fonts-noto-cjk",)


def test_apt_get_runs_directly_as_root_and_never_without_apt_get(monkeypatch):
    monkeypatch.setattr(system_deps.os, "geteuid", lambda: 0)
    monkeypatch.setattr(system_deps.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert system_deps.apt_prefix() == ROOT_PREFIX
    monkeypatch.setattr(system_deps.shutil, "which", lambda name: None)
    assert system_deps.apt_prefix() is None


def test_without_apt_get_the_command_line_exits_1_with_one_line(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no apt-get, no npm, no sudo
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/system_deps.py"), "npm"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "run `sudo apt-get install -y --no-install-recommends nodejs npm`" in proc.stderr


@pytest.mark.parametrize("argv,message", [([], "name at least one requirement"),
                                          (["chrome"], "unknown requirement 'chrome'")])
def test_usage_errors_exit_2(argv, message):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/system_deps.py"), *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: system_deps.py {chromium,cjk-font,npm}") and message in proc.stderr
