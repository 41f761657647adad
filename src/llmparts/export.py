"""Weights out of PyTorch: an .npz for the NumPy twin (and the browser), a Hugging Face Llama checkpoint.

to_npz stores every state_dict tensor under its torch key plus the config as JSON, which is all
llmparts.numpy_model.NumpyGPT.from_npz needs. to_hf writes config.json + model.safetensors that
transformers' LlamaForCausalLM loads, for models built with the LLaMA recipe, and beside them MODEL_CARD.md:
the card llmparts.model_card generated from the measurements when one is given, else one that says there are none.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from .atomic import atomic_write, write_text
from .config import ModelConfig
from .model import GPT


def to_npz(model: GPT, path, chars: str | None = None) -> Path:
    """Write model's weights (float32, torch key names), its config and optionally its vocabulary to path."""
    path = Path(path)
    arrays = {name: t.detach().to(torch.float32).cpu().numpy() for name, t in model.state_dict().items()}
    arrays["config_json"] = np.array(json.dumps(model.config.to_dict()))
    if chars is not None:
        if len(chars) != model.config.vocab_size:
            raise ValueError(f"chars has {len(chars)} characters but the model's vocab_size is "
                             f"{model.config.vocab_size}; they must be equal")
        arrays["chars"] = np.array(chars)
    with atomic_write(path, "wb") as f:  # the browser never fetches a half-written file
        np.savez(f, **arrays)
    return path


def _check_llama_recipe(config):
    wanted = {"use_rmsnorm": True, "use_swiglu": True, "use_rope": True, "bias": False}
    for switch, value in wanted.items():
        if getattr(config, switch) != value:
            raise ValueError(f"to_hf exports only the LLaMA recipe (RMSNorm, SwiGLU, RoPE, no bias): "
                             f"{switch} is {getattr(config, switch)}, it must be {value}")


def _interleaved_to_halves(w, n_heads: int, head_dim: int):
    """Reorder each head's rows 0,2,4,...,1,3,5,...: our RoPE rotates pairs (2i, 2i+1), HF's (i, i + d/2).

    q.k is a sum over dimensions, so permuting the rows of wq and wk the same way leaves attention unchanged
    while moving each rotated pair to where HF's rotate_half expects it.
    """
    order = torch.cat([torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)])
    return w.view(n_heads, head_dim, -1)[:, order].reshape(n_heads * head_dim, -1)


def unmeasured_card(config: ModelConfig, params: int) -> str:
    """MODEL_CARD.md for weights nobody has measured: the hub's front matter, the architecture, no metrics."""
    return "\n".join([
        "---", "language:", "- en", "license: mit", "library_name: transformers", "pipeline_tag: text-generation",
        "tags:", "- llama", "- character-level", "- llmparts", "---", "", "# char-llama", "",
        f"A character-level LLaMA with {params:,} parameters: {config.n_layer} layers, width {config.n_embd}, "
        f"{config.n_head} query heads sharing {config.n_kv_head} key/value heads.", "",
        "No measurements come with this export: evaluate it (llmparts.model_card generates a measured card) "
        "before relying on it.", ""])


def to_hf(model: GPT, out_dir, card: str | None = None) -> Path:
    """Write a Hugging Face LlamaForCausalLM checkpoint (config.json + model.safetensors) and MODEL_CARD.md to
    out_dir; card is the card's text (llmparts.model_card.hf_card of these weights' evidence) or None."""
    from safetensors.torch import save  # only this exporter needs safetensors

    c = model.config
    _check_llama_recipe(c)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    hf_config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": c.vocab_size,
        "hidden_size": c.n_embd,
        "intermediate_size": c.swiglu_hidden,
        "num_hidden_layers": c.n_layer,
        "num_attention_heads": c.n_head,
        "num_key_value_heads": c.n_kv_head,
        "head_dim": c.head_dim,
        "max_position_embeddings": c.block_size,
        "rms_norm_eps": c.norm_eps,
        "rope_theta": c.rope_theta,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": c.tie_embeddings,
        "torch_dtype": "float32",
    }
    sd = {name: t.detach().to(torch.float32).cpu() for name, t in model.state_dict().items()}
    tensors = {"model.embed_tokens.weight": sd["tok_emb.weight"], "model.norm.weight": sd["norm_f.weight"]}
    if not c.tie_embeddings:
        tensors["lm_head.weight"] = sd["lm_head.weight"]
    for i in range(c.n_layer):
        ours, theirs = f"blocks.{i}.", f"model.layers.{i}."
        tensors[theirs + "self_attn.q_proj.weight"] = _interleaved_to_halves(sd[ours + "attn.wq.weight"],
                                                                           c.n_head, c.head_dim)
        tensors[theirs + "self_attn.k_proj.weight"] = _interleaved_to_halves(sd[ours + "attn.wk.weight"],
                                                                           c.n_kv_head, c.head_dim)
        tensors[theirs + "self_attn.v_proj.weight"] = sd[ours + "attn.wv.weight"]
        tensors[theirs + "self_attn.o_proj.weight"] = sd[ours + "attn.wo.weight"]
        tensors[theirs + "mlp.gate_proj.weight"] = sd[ours + "mlp.w_gate.weight"]
        tensors[theirs + "mlp.up_proj.weight"] = sd[ours + "mlp.w_up.weight"]
        tensors[theirs + "mlp.down_proj.weight"] = sd[ours + "mlp.w_down.weight"]
        tensors[theirs + "input_layernorm.weight"] = sd[ours + "attn_norm.weight"]
        tensors[theirs + "post_attention_layernorm.weight"] = sd[ours + "mlp_norm.weight"]
    write_text(out_dir / "config.json", json.dumps(hf_config, indent=2) + "\n")
    with atomic_write(out_dir / "model.safetensors", "wb") as f:
        f.write(save({k: v.contiguous() for k, v in tensors.items()}, metadata={"format": "pt"}))
    write_text(out_dir / "MODEL_CARD.md", card if card is not None else unmeasured_card(c, model.num_params()))
    return out_dir


def from_npz(path) -> tuple[GPT, str | None]:
    """The PyTorch model (in eval mode) and the vocabulary (or None) of an .npz written by to_npz."""
    with np.load(path) as data:
        config = ModelConfig.from_dict(json.loads(str(data["config_json"])))
        chars = str(data["chars"]) if "chars" in data.files else None
        state = {k: torch.from_numpy(data[k]) for k in data.files if k not in ("config_json", "chars")}
    model = GPT(config)
    model.load_state_dict(state)
    return model.eval(), chars
