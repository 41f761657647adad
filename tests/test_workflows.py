"""The GitHub workflows pass zizmor (a security linter for GitHub Actions) offline, with no finding."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_workflows_pass_zizmor_offline_with_no_finding():
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    assert zizmor, "zizmor is missing: it comes with the test extra (pip install -e '.[test]')"
    out = subprocess.run([zizmor, "--offline", ".github/workflows/"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No findings to report" in out.stdout, out.stdout
