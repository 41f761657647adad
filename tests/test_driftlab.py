"""llmparts.driftlab: the frozen prose snapshots, the char vocabulary on other text, scoring and fine-tuning."""

import json
import shutil

import numpy as np
import pytest
import torch

import booklib as B
from llmparts import driftlab, recipes
from llmparts.bpe import BPETokenizer
from llmparts.data import DataError, fixed_batches
from llmparts.model import GPT

PAGE = """---
engine: markdown
title: "x"
---

# A chapter {#sec-x}

Text with `code`, a {{< var ablation.iters >}} value, $x^2$ and a [link](https://example.org) to @sec-x.

```{pyodide}
print("cell")
```

````markdown
```python
nested
```
````

::: {.callout-note}
## Inside a callout
**Bold** prose stays, and [1.7]{.checked var="a.b"} keeps its text.
:::

| table | row |
|---|---|

$$
E = mc^2
$$

![caption](/images/x.png){#fig-x}

- a bullet
"""


def test_prose_keeps_running_text_and_drops_code_cells_tables_math_and_markup():
    assert driftlab.prose(PAGE) == ("A chapter\n\nText with , a value, and a link to .\n\nInside a callout\n"
                                    "Bold prose stays, and 1.7 keeps its text.\n\na bullet\n")


def test_committed_snapshots_match_their_manifest_and_hold_no_code():
    manifest = driftlab.manifest(B.ROOT)
    assert manifest["pages"] == list(driftlab.PAGES) and "MIT" in manifest["licence"]
    for lang in driftlab.LANGS:
        text = driftlab.load_snapshot(lang, B.ROOT)  # checks the sha256
        assert len(text) == manifest["files"][lang]["chars"] > 30000
        assert "```" not in text and "{{<" not in text and "import " not in text
    assert "Preface" in driftlab.load_snapshot("en", B.ROOT) and "前言" in driftlab.load_snapshot("zh", B.ROOT)
    readme = (B.ROOT / "data" / "drift" / "README.md").read_text(encoding="utf-8")
    assert manifest["commit"] in readme and all(f["sha256"] in readme for f in manifest["files"].values())


def test_an_edited_snapshot_is_refused_with_the_command_that_retakes_it(tmp_path):
    shutil.copytree(B.ROOT / "data" / "drift", tmp_path / "data" / "drift")
    (tmp_path / "data" / "drift" / "en.txt").write_text("edited\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"en.txt has sha256 .*python -m llmparts.driftlab snapshot"):
        driftlab.load_snapshot("en", tmp_path)
    with pytest.raises(DataError, match="snapshot.json is missing"):
        driftlab.load_snapshot("en", tmp_path / "elsewhere")


def test_snapshot_is_taken_only_on_request_and_reproduces_from_the_same_pages(tmp_path):
    for lang in driftlab.LANGS:  # a copy of the pages: the real data/drift is never rewritten by a test
        (tmp_path / "book" / lang).mkdir(parents=True)
        for page in driftlab.PAGES:
            shutil.copy(B.ROOT / "book" / lang / f"{page}.qmd", tmp_path / "book" / lang)
    written = driftlab.snapshot(tmp_path)
    for lang in driftlab.LANGS:
        text = (tmp_path / "data" / "drift" / f"{lang}.txt").read_text(encoding="utf-8")
        assert driftlab.sha256_text(text) == written["files"][lang]["sha256"]
        assert text == driftlab.book_prose(B.ROOT, lang)
    assert json.loads((tmp_path / "data" / "drift" / "snapshot.json").read_text())["files"] == written["files"]


def test_snapshot_command_refuses_a_folder_that_is_not_a_checkout(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        driftlab.main(["snapshot", "--root", str(tmp_path)])
    assert exit.value.code == 2
    assert capsys.readouterr().err == (f"python -m llmparts.driftlab: error: --root ({tmp_path}) must be a checkout "
                                       f"of this repository (it has no book/en/)\n")


def test_in_vocab_drops_unknown_characters_and_counts_them():
    assert driftlab.in_vocab("To be 2B? 我", "Tobe ?B") == ("To be B? ", 2)


def test_tokenizer_stats_chinese_is_unknown_to_characters_but_costs_bpe_three_bytes_each():
    bpe = BPETokenizer()  # no merges: one token per byte
    stats = driftlab.tokenizer_stats("我喜歡你", "abc", bpe)
    assert stats["unknown_share"] == 1.0 and stats["unknown_distinct"] == 4
    assert stats["bytes_per_char"] == stats["bpe_tokens_per_char"] == 3.0
    assert driftlab.tokenizer_stats("abca", "abc", bpe)["unknown_share"] == 0.0


def test_windows_are_distinct_non_overlapping_and_refuse_too_many():
    ids = torch.arange(100)
    chunks = driftlab.windows(ids, 4, 9, seed=0)  # ten windows of 10 fit
    assert chunks.shape == (4, 10) and len({int(c[0]) for c in chunks}) == 4
    assert all(int(c[0]) % 10 == 0 and (c == torch.arange(int(c[0]), int(c[0]) + 10)).all() for c in chunks)
    with pytest.raises(ValueError, match=r"n \(11\) must be at most the 10 windows"):
        driftlab.windows(ids, 11, 9, seed=0)


def tiny_model():
    torch.manual_seed(0)
    return GPT(recipes.llama(n_layer=1, n_embd=32, n_head=2, n_kv_head=1, vocab_size=8, block_size=16))


def test_window_losses_average_to_the_models_own_loss():
    model = tiny_model()
    chunks = torch.randint(0, 8, (5, 17), generator=torch.Generator().manual_seed(0))
    per_window = driftlab.window_losses(model, chunks, batch=2)
    _, loss = model(chunks[:, :-1], chunks[:, 1:].contiguous())
    assert per_window.shape == (5,) and np.mean(per_window) == pytest.approx(loss.item(), rel=1e-5)


def test_finetune_lowers_the_loss_on_its_text_and_is_reproducible():
    text = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7] * 40)
    other = torch.randint(0, 8, (320,), generator=torch.Generator().manual_seed(1))
    sets = {"new": fixed_batches(text, 2, 4, 16), "old": fixed_batches(other, 2, 4, 16)}
    curves = [driftlab.finetune(tiny_model(), text, sets, steps=10, eval_every=5, lr=1e-2, batch_size=4,
                                seq_len=16, seed=0) for _ in range(2)]
    assert curves[0] == curves[1]
    assert [p["step"] for p in curves[0]] == [0, 5, 10]
    assert curves[0][-1]["new"] < curves[0][0]["new"] - 0.5
