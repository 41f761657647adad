"""The NumPy port runs in the browser: imported from the worker's filesystem, generating text from the weights."""

import json

import numpy as np
import pytest

pytestmark = pytest.mark.browser

PROMPT = "ROMEO:"
CELL = f"""
import json
import numpy as np
from llmparts.numpy_model import NumpyGPT, CharTokenizer
model = NumpyGPT.from_npz("char_llama.npz")
tok = CharTokenizer.from_npz("char_llama.npz")
idx = np.array([tok.encode({PROMPT!r})])
logits = model.forward(idx)
greedy = tok.decode(model.generate(idx, 40, temperature=0)[0].tolist())
sampled = tok.decode(model.generate(idx, 40, temperature=0.8, top_k=10, rng=np.random.default_rng(1))[0].tolist())
print(json.dumps({{"logits": logits[0, -1].tolist(), "greedy": greedy, "sampled": sampled}}))
"""


def test_numpy_port_generates_the_same_text_in_the_browser_as_in_cpython(open_page, site, site_files):
    from llmparts.numpy_model import CharTokenizer, NumpyGPT

    weights = site.root / "results" / "weights" / "char_llama.npz"
    model, tok = NumpyGPT.from_npz(weights), CharTokenizer.from_npz(weights)
    idx = np.array([tok.encode(PROMPT)])
    expected_logits = model.forward(idx)[0, -1]
    expected_greedy = tok.decode(model.generate(idx, 40, temperature=0)[0].tolist())

    p = open_page([CELL], name="numpy-port", files=site_files)
    assert "missing" not in p.status()
    p.run(1)
    assert p.output(1, "error") == []
    got = json.loads("".join(p.output(1, "stdout")))
    np.testing.assert_allclose(got["logits"], expected_logits, atol=1e-4)
    assert got["greedy"] == expected_greedy
    assert len(got["sampled"]) == len(PROMPT) + 40 and got["sampled"].startswith(PROMPT)
    assert set(got["sampled"]) <= set(tok.chars)
