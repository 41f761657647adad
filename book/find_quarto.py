"""Find Quarto 1.8.27 (the version the GitHub workflows pin), installing it where that needs no one's help.

In order: `quarto` on PATH when it is that version; the offline build from ../shared/tools/quarto, installed
once into build/quarto (on this project's machines and CI); PyPI's `quarto-cli==1.8.27` in the active
virtual environment (`pip install -e ".[book]"`; its installer fetches the official binary). Otherwise one
line says what to install.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION = "1.8.27"
OFFLINE_TOOLS = ROOT.parent / "shared" / "tools" / "quarto"
OFFLINE_PREFIX = ROOT / "build" / "quarto"


class QuartoNotFound(Exception):
    pass


def version_of(quarto: str) -> str | None:
    try:
        run = subprocess.run([quarto, "--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return run.stdout.strip() if run.returncode == 0 else None


def in_virtualenv() -> bool:
    return sys.prefix != sys.base_prefix


def candidates():
    """(where, path or an installer) in the order they are tried."""
    yield "PATH", lambda: shutil.which("quarto")
    yield "build/quarto", lambda: _offline_build()
    yield "quarto-cli from PyPI", lambda: _pypi()


def _offline_build() -> str | None:
    quarto = OFFLINE_PREFIX / "bin" / "quarto"
    if not (OFFLINE_PREFIX / ".complete").exists():
        if not (OFFLINE_TOOLS / "install.sh").exists():
            return None
        print(f"installing Quarto {VERSION} from {OFFLINE_TOOLS} into {OFFLINE_PREFIX} (about 20 s)", file=sys.stderr)
        run = subprocess.run(["bash", str(OFFLINE_TOOLS / "install.sh"), str(OFFLINE_PREFIX)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout[-2000:] + run.stderr[-2000:], file=sys.stderr)
            return None
    return str(quarto)


def _pypi() -> str | None:
    scripts = Path(sys.executable).parent
    quarto = scripts / "quarto"
    if not quarto.exists():
        if not in_virtualenv():
            return None
        print(f"installing quarto-cli=={VERSION} from PyPI into {sys.prefix}", file=sys.stderr)
        run = subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"quarto-cli=={VERSION}"],
                             capture_output=True, text=True)
        if run.returncode != 0 or not quarto.exists():
            return None
    return str(quarto)


def find_quarto() -> str:
    tried = []
    for where, locate in candidates():
        path = locate()
        found = path and version_of(path)
        if found == VERSION:
            return path
        tried.append(f"{where}: {found or 'none'}")
    raise QuartoNotFound(f"Quarto {VERSION} is needed to render the book ({'; '.join(tried)}): "
                         f"pip install -e \".[book]\" or install it from https://quarto.org/docs/download/")


def quarto_resource(quarto: str, name: str) -> Path:
    """A file of Quarto's own resources (e.g. language/_language-zh-TW.yml) for the Quarto at `quarto`."""
    real = Path(os.path.realpath(quarto)).parent
    places = [os.environ.get("QUARTO_SHARE_PATH", ""), real / ".." / "share",  # official layout
              real / ".." / "src" / "src" / "resources"]                        # the offline build
    try:
        import quarto_cli  # PyPI quarto-cli keeps the official layout inside its package
        places += [p.parent / "share" for p in Path(quarto_cli.__file__).parent.rglob("bin/quarto")]
    except ImportError:
        pass
    for place in places:
        if place and (Path(place) / name).exists():
            return (Path(place) / name).resolve()
    raise QuartoNotFound(f"Quarto's resource {name} is not beside {quarto}: is it a complete Quarto {VERSION}?")


if __name__ == "__main__":  # `python3 book/find_quarto.py`: the path of Quarto 1.8.27, installed if it can be
    try:
        print(find_quarto())
    except QuartoNotFound as err:
        print(f"book/find_quarto.py: {err}", file=sys.stderr)
        raise SystemExit(2)
