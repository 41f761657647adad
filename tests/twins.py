"""A small PyTorch model and its NumPy twin holding the same weights, for the tests that hold one against the
other (tests/test_numpy_model.py, tests/test_batching.py)."""

import llmparts.model as tm
import llmparts.numpy_model as nm


def small_kwargs(**overrides) -> dict:
    base = dict(vocab_size=23, block_size=128, n_layer=2, n_head=4, n_embd=16)
    base.update(overrides)
    return base


def twins(ordinary_scale, **overrides):
    """A torch model with weights of ordinary scale and a NumPy model holding the same weights."""
    torch_model = ordinary_scale(tm.GPT(tm.ModelConfig(**small_kwargs(**overrides))))
    numpy_model = nm.NumpyGPT(nm.ModelConfig(**small_kwargs(**overrides)))
    numpy_model.load_state_dict({k: v.numpy() for k, v in torch_model.state_dict().items()})
    return torch_model, numpy_model
