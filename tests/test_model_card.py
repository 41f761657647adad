"""model_card.py: the cards come from the evidence, in the shape a model hub reads, in both languages."""

import pytest
import yaml

from llmparts import model_card, recipes
from llmparts.strings import STRINGS


def runs():
    return [{"seed": s, "params": 729856, "val_loss": v, "auc": a, "regurgitated": r, "control_regurgitated": 0.0}
            for s, v, a, r in ((0, 1.50, 0.52, 0.01), (1, 1.52, 0.54, 0.02), (2, 1.49, 0.53, 0.0))]


def card():
    released = {"model": recipes.llama().to_dict(), "train": {"max_iters": 2000, "batch_size": 12, "seq_len": 64,
                                                             "dtype": "bfloat16"}, "seeds": [0, 1, 2]}
    repro = {"repeat_bit_identical": True, "changes_bits": ["float32"], "seed_val_delta": 0.02}
    return model_card.evidence(released, runs(), repro, weights_sha256="ab" * 32,
                               data={"url": "https://x/input.txt", "sha256": "cd" * 32, "train_chars": 900,
                                     "val_chars": 100, "vocab_size": 65},
                               provenance={"fingerprint": "ef" * 32, "commit": "0" * 40, "dirty": False,
                                           "torch": "2.13.0+cpu"})


def front_matter(text):
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_metrics_are_the_mean_and_sample_std_over_seeds():
    m = card()["metrics"]["val_loss"]
    assert m["value"] == pytest.approx(1.50333333) and m["noise"] == pytest.approx(0.01527525) and m["seeds"] == 3


def test_hf_card_front_matter_is_yaml_with_the_hubs_fields_and_the_measured_values():
    meta = front_matter(model_card.hf_card(card()))
    assert meta["language"] == ["en"] and meta["license"] == "mit" and "llama" in meta["tags"]
    assert meta["datasets"] == ["tiny_shakespeare"] and meta["pipeline_tag"] == "text-generation"
    results = meta["model-index"][0]["results"][0]
    values = {m["type"]: m["value"] for m in results["metrics"]}
    assert values == {"loss": 1.5033, "roc_auc": 0.53, "exact_match": 0.01}


def test_hf_card_body_names_the_hashes_use_limits_and_reproducibility():
    text = model_card.hf_card(card())
    for needle in ("ab" * 32, "cd" * 32, "ef" * 32, "## Intended use", "## Limits", "729,856 parameters",
                   "1.5033 ± 0.0153", STRINGS["en"]["governance"]["variant_float32"]):
        assert needle in text


def test_release_metrics_say_which_way_is_better_with_the_seed_noise():
    metrics = model_card.release_metrics(card())
    assert metrics["fingerprint"] == "ef" * 32
    assert metrics["metrics"]["membership_auc"] == {"value": pytest.approx(0.53), "noise": pytest.approx(0.01),
                                                    "seeds": 3, "lower_is_better": True}


@pytest.mark.parametrize("lang", list(STRINGS))
def test_page_cards_are_captioned_tables_with_every_metric(lang):
    model = model_card.report_model_card(card(), lang)
    assert model.rstrip().endswith("{#tbl-model_card}") and "0.5300 ± 0.0100" in model and "1.0% ± 1.0%" in model
    assert all(STRINGS[lang]["card"][name] in model for name in model_card.METRICS)
    data = model_card.report_data_card(card(), lang)
    assert data.rstrip().endswith("{#tbl-data_card}") and "cdcdcdcdcdcdcdcd" in data and "900" in data
