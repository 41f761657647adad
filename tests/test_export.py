"""export.py: the .npz the browser loads, and a Hugging Face Llama checkpoint that gives our logits."""

import json
import logging

import numpy as np
import pytest
import torch

from llmparts import export
from llmparts.model import GPT, ModelConfig
from llmparts.numpy_model import NumpyGPT
from llmparts.tokenizer import CharTokenizer

torch.set_num_threads(1)

LLAMA_RECIPE = dict(use_rmsnorm=True, use_swiglu=True, use_rope=True, bias=False)


def small_config(**overrides) -> ModelConfig:
    base = dict(vocab_size=13, block_size=32, n_layer=2, n_head=4, n_embd=16)
    base.update(overrides)
    return ModelConfig(**base)


# ---------------------------------------------------------------- npz

def test_npz_holds_every_state_dict_tensor_as_float32_plus_config_and_chars(tmp_path):
    model = GPT(small_config(**LLAMA_RECIPE, n_kv_head=2))
    path = export.to_npz(model, tmp_path / "m.npz", chars="\n !abcdefghij")
    with np.load(path) as data:
        assert set(data.files) == set(model.state_dict()) | {"config_json", "chars"}
        assert all(data[k].dtype == np.float32 for k in model.state_dict())
        assert json.loads(str(data["config_json"])) == model.config.to_dict()
    assert CharTokenizer.from_npz(path).decode([3, 4, 1, 5]) == "ab c"


@pytest.mark.parametrize("parts", [{}, LLAMA_RECIPE], ids=["gpt", "llama"])
def test_numpy_model_from_npz_gives_torch_logits_within_1e_5(parts, tmp_path, ordinary_scale):
    model = ordinary_scale(GPT(small_config(**parts, n_kv_head=2, tie_embeddings=False)))
    numpy_model = NumpyGPT.from_npz(export.to_npz(model, tmp_path / "m.npz"))
    assert numpy_model.config.to_dict() == model.config.to_dict()
    idx = np.random.default_rng(0).integers(0, 13, size=(2, 12))
    with torch.no_grad():
        expected = model(torch.from_numpy(idx))[0].numpy()
    assert np.abs(numpy_model.forward(idx) - expected).max() <= 1e-5


@pytest.mark.parametrize("tie", [True, False])
def test_from_npz_gives_back_the_same_torch_model_and_vocabulary(tie, tmp_path, ordinary_scale):
    model = ordinary_scale(GPT(small_config(**LLAMA_RECIPE, n_kv_head=2, tie_embeddings=tie)))
    loaded, chars = export.from_npz(export.to_npz(model, tmp_path / "m.npz", chars="\n !abcdefghij"))
    assert chars == "\n !abcdefghij" and loaded.config == model.config and not loaded.training
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in model.state_dict().items())
    assert (loaded.lm_head.weight is loaded.tok_emb.weight) == tie
    assert export.from_npz(export.to_npz(model, tmp_path / "bare.npz"))[1] is None


def test_npz_without_chars_has_no_vocabulary_and_says_so(tmp_path):
    path = export.to_npz(GPT(small_config()), tmp_path / "m.npz")
    with pytest.raises(ValueError, match=r"holds no 'chars' vocabulary"):
        CharTokenizer.from_npz(path)


def test_npz_refuses_chars_that_do_not_match_vocab_size(tmp_path):
    with pytest.raises(ValueError, match=r"chars has 3 characters but the model's vocab_size is 13"):
        export.to_npz(GPT(small_config()), tmp_path / "m.npz", chars="abc")
    assert list(tmp_path.iterdir()) == []


def test_npz_write_is_atomic_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    export.to_npz(GPT(small_config()), path)
    before = path.read_bytes()

    def broken_savez(f, **arrays):
        f.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        export.to_npz(GPT(small_config(n_layer=1)), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temp file left behind


# ---------------------------------------------------------------- Hugging Face

def hf_logits(out_dir, idx):
    transformers = pytest.importorskip("transformers")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    hf = transformers.LlamaForCausalLM.from_pretrained(out_dir).eval()
    with torch.no_grad():
        return hf(idx).logits


@pytest.mark.parametrize("n_kv_head, tie", [(4, True), (2, False), (1, True)], ids=["mha", "gqa-untied", "mqa"])
def test_hf_llama_gives_our_logits_within_1e_4(n_kv_head, tie, tmp_path, ordinary_scale):
    # rope_theta 500 and eps 1e-6 are not HF's defaults: a dropped setting would show in the logits.
    config = small_config(**LLAMA_RECIPE, n_kv_head=n_kv_head, tie_embeddings=tie, rope_theta=500.0, norm_eps=1e-6)
    model = ordinary_scale(GPT(config))
    export.to_hf(model, tmp_path)
    idx = torch.randint(0, 13, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours = model(idx)[0]
    assert (hf_logits(tmp_path, idx) - ours).abs().max().item() <= 1e-4


def test_hf_config_carries_our_sizes(tmp_path):
    config = small_config(**LLAMA_RECIPE, n_kv_head=2, rope_theta=500.0, tie_embeddings=False)
    hf = json.loads((export.to_hf(GPT(config), tmp_path) / "config.json").read_text())
    assert hf["architectures"] == ["LlamaForCausalLM"]
    assert (hf["hidden_size"], hf["intermediate_size"], hf["num_hidden_layers"]) == (16, config.swiglu_hidden, 2)
    assert (hf["num_attention_heads"], hf["num_key_value_heads"], hf["max_position_embeddings"]) == (4, 2, 32)
    assert (hf["rope_theta"], hf["rms_norm_eps"], hf["tie_word_embeddings"]) == (500.0, 1e-5, False)


def test_hf_export_needs_the_rope_pair_permutation(tmp_path, monkeypatch, ordinary_scale):
    model = ordinary_scale(GPT(small_config(**LLAMA_RECIPE)))
    monkeypatch.setattr(export, "_interleaved_to_halves", lambda w, n_heads, head_dim: w)
    export.to_hf(model, tmp_path)
    idx = torch.randint(0, 13, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours = model(idx)[0]
    assert (hf_logits(tmp_path, idx) - ours).abs().max().item() > 1e-2


@pytest.mark.parametrize("switch, value", [("use_rmsnorm", False), ("use_swiglu", False), ("use_rope", False),
                                           ("bias", True)])
def test_hf_export_refuses_a_model_off_the_llama_recipe(switch, value, tmp_path):
    model = GPT(small_config(**{**LLAMA_RECIPE, switch: value}))
    with pytest.raises(ValueError, match=rf"{switch} is {value}, it must be {not value}"):
        export.to_hf(model, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


# ---------------------------------------------------------------- the model card beside the weights

def test_to_hf_writes_the_card_it_is_given_or_one_that_says_nothing_was_measured(tmp_path):
    pytest.importorskip("safetensors")
    import yaml
    model = GPT(small_config(**LLAMA_RECIPE, n_kv_head=2))
    export.to_hf(model, tmp_path / "bare")
    bare = (tmp_path / "bare" / "MODEL_CARD.md").read_text()
    meta = yaml.safe_load(bare.split("---\n")[1])
    assert meta["license"] == "mit" and "llama" in meta["tags"] and "model-index" not in meta
    assert f"{model.num_params():,} parameters" in bare and "No measurements" in bare
    export.to_hf(model, tmp_path / "measured", card="---\nlanguage:\n- en\n---\n# measured\n")
    assert (tmp_path / "measured" / "MODEL_CARD.md").read_text() == "---\nlanguage:\n- en\n---\n# measured\n"
