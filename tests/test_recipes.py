"""recipes.py: the book's models, each named once."""

import pytest

from llmparts import recipes
from llmparts.config import ModelConfig
from llmparts.model import GPT


def test_baseline_is_nanogpts_cpu_shakespeare_char_recipe_with_gpt2_parts():
    b = recipes.BASELINE
    assert (b.vocab_size, b.n_layer, b.n_head, b.n_embd, b.block_size, b.dropout, b.bias) == (65, 4, 4, 128, 64, 0.0,
                                                                                                False)
    assert not (b.use_rmsnorm or b.use_swiglu or b.use_rope) and b.n_kv_head == b.n_head


def test_llama_recipe_is_the_baseline_with_all_four_parts():
    assert recipes.LLAMA == recipes.ablation_variant("llama") == recipes.llama()
    assert recipes.LLAMA == ModelConfig(**recipes.BASELINE_SETTINGS, use_rmsnorm=True, use_swiglu=True,
                                        use_rope=True, n_kv_head=2)


def test_each_single_part_variant_changes_one_setting_of_the_baseline():
    base = recipes.BASELINE.to_dict()
    for name in recipes.SINGLE_PARTS + ("mqa",):
        changed = {k for k, v in recipes.ablation_variant(name).to_dict().items() if base[k] != v}
        assert len(changed) == 1, (name, changed)
    llama = recipes.LLAMA.to_dict()
    assert {k for k in llama if llama[k] != base[k]} == {
        k for name in recipes.SINGLE_PARTS for k in recipes.ABLATION[name]}


def test_overrides_apply_on_top_of_the_variant():
    c = recipes.ablation_variant("rope", block_size=256)
    assert c.use_rope and c.block_size == 256 and c.n_layer == 4
    assert recipes.llama(n_kv_head=1).n_kv_head == 1


def test_unknown_variant_is_named():
    with pytest.raises(ValueError, match=r"ablation variant \('rms'\) must be one of 'baseline', 'rmsnorm'"):
        recipes.ablation_variant("rms")


def test_llama2_preset_is_the_one_chapter_03_counts():
    assert recipes.LLAMA2 == ModelConfig.llama2()
    assert GPT(recipes.LLAMA2).num_params() == 82_594_560


def test_attention_names_the_kv_heads_for_the_baselines_four_query_heads():
    assert recipes.ATTENTION == {"MHA": recipes.BASELINE.n_head, "GQA": 2, "MQA": 1}
