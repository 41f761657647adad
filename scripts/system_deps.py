"""Make sure the system packages a make target needs are here: install them where this machine allows it,
otherwise stop with one line naming the command to run.

    .venv/bin/python scripts/system_deps.py chromium cjk-font npm

Requirements: `chromium` (/usr/bin/chromium, driven by the browser tests), `cjk-font` (a font that draws the
zh figures' characters, found the way llmparts.figures finds it), `npm` (fetches the official Pyodide lock).
A missing one is installed with `apt-get install -y --no-install-recommends PACKAGES` when apt-get exists and
we are root or have password-less sudo (a Debian container, a GitHub runner); else exit 1 with one line.
Exit 0 when everything is here, 2 on a usage error. This file is the only place that installs system packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")  # the path scripts/browser_site.py launches
APT_INSTALL = ("apt-get", "install", "-y", "--no-install-recommends")


def chromium_missing() -> str | None:
    return None if os.access(CHROMIUM, os.X_OK) else f"{CHROMIUM} is missing (the browser tests drive it)"


def cjk_font_missing() -> str | None:
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from llmparts.figures import cjk_font_path  # the same search the figures make
    except ImportError as e:
        raise SystemExit(f"system_deps: cjk-font is checked with the project's Python ({e}): "
                         f"run it as .venv/bin/python scripts/system_deps.py") from None
    try:
        cjk_font_path()
    except RuntimeError:
        return "no CJK font for the zh figures (their characters would be drawn as boxes)"
    return None


def npm_missing() -> str | None:
    return None if shutil.which("npm") else "npm is missing (scripts/build_pyodide_assets.py fetches the Pyodide lock with it)"


@dataclass(frozen=True)
class Requirement:
    packages: tuple[str, ...]          # the Debian packages that provide it
    missing: Callable[[], str | None]  # None when present, else why it is missing
    instead: str = ""                  # what a user may do instead of installing it


REQUIREMENTS = {
    "chromium": Requirement(("chromium",), chromium_missing, "or `SKIP_BROWSER=1 make test` to skip the browser tests"),
    "cjk-font": Requirement(("fonts-noto-cjk",), cjk_font_missing),
    "npm": Requirement(("nodejs", "npm"), npm_missing),
}


def apt_prefix() -> list[str] | None:
    """How this machine lets us run apt-get (as root, or through password-less sudo), or None when it does not."""
    if not shutil.which("apt-get"):
        return None
    if os.geteuid() == 0:
        return ["env", "DEBIAN_FRONTEND=noninteractive"]
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    return None


def install(prefix: list[str], packages: list[str], run=subprocess.run) -> str | None:
    """apt-get update, then install the packages; None on success, else what failed."""
    for command in (prefix + ["apt-get", "update", "-qq"], prefix + [*APT_INSTALL, "-qq", *packages]):
        print("system_deps: " + " ".join(command), flush=True)
        status = run(command).returncode
        if status != 0:
            return f"`{' '.join(command)}` failed with exit status {status}"
    return None


def missing_line(missing: dict[str, str], after: str = "") -> str:
    """One line: what is missing (after what was tried) and the command that installs it."""
    packages = [p for name in missing for p in REQUIREMENTS[name].packages]
    instead = "".join(f" ({REQUIREMENTS[name].instead})" for name in missing if REQUIREMENTS[name].instead)
    return (f"system_deps: {'; '.join(missing.values())}{after}: "
            f"run `{' '.join(('sudo', *APT_INSTALL, *packages))}`{instead}")


def ensure(names: list[str], find_prefix=apt_prefix, run=subprocess.run) -> str | None:
    """Install what is missing where this machine allows it; None when all is here, else one line saying
    what is missing and the command that installs it."""
    missing = {name: why for name in names if (why := REQUIREMENTS[name].missing())}
    if not missing:
        return None
    prefix = find_prefix()
    if prefix is None:
        return missing_line(missing)
    packages = [p for name in missing for p in REQUIREMENTS[name].packages]
    failure = install(prefix, packages, run)
    still = {name: why for name in missing if (why := REQUIREMENTS[name].missing())}
    if not still:
        return None
    return missing_line(still, f" after {failure or 'installing ' + ' '.join(packages)}")


def main(argv=None) -> int:
    names = sys.argv[1:] if argv is None else list(argv)
    unknown = [n for n in names if n not in REQUIREMENTS]
    if not names or unknown:
        problem = f"unknown requirement {unknown[0]!r}" if unknown else "name at least one requirement"
        print(f"usage: system_deps.py {{{','.join(REQUIREMENTS)}}} ...: {problem}", file=sys.stderr)
        return 2
    error = ensure(names)
    if error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
