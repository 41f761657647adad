"""numpy_serving.py runs in the browser: it must never import torch (its numbers are tested beside the
PyTorch modules, in tests/test_sampling.py, test_batching.py and test_quantize.py)."""

import subprocess
import sys


def test_importing_numpy_serving_does_not_import_torch():
    code = "import sys, llmparts.numpy_serving; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
