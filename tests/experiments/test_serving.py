"""experiments/serving.py (chapter 06): the runs it asks for, a smoke-scale run of its measurements and its
report, and what the chapter says about the committed results/serving.json."""

import json

import pytest

import booklib as B
from llmparts import recipes, serve
from llmparts.experiments import REGISTRY
from llmparts.experiments.base import Context, Result
from llmparts.experiments.serving import DRAFT, EXPERIMENT
from llmparts.model import GPT
from llmparts.strings import STRINGS


def test_the_served_model_is_the_ablations_llama_run_and_each_draft_seed_trains_once():
    config = EXPERIMENT.config("full")
    target, *drafts = EXPERIMENT.tasks(config, "full")
    ablation = REGISTRY["ablation"]
    assert target.key in {t.key for t in ablation.tasks(ablation.config("full"), "full")}
    assert target.key in {t.key for t in REGISTRY["weights"].tasks(REGISTRY["weights"].config("full"), "full")}
    assert [d.kwargs["seed"] for d in drafts] == config["draft_seeds"] and len(config["draft_seeds"]) >= 3
    assert len({d.key for d in drafts}) == len(drafts)


def test_the_draft_is_the_llama_recipe_at_one_layer_and_a_small_fraction_of_the_target():
    draft, target = GPT(recipes.llama(**DRAFT)), GPT(recipes.llama())
    assert draft.config.vocab_size == target.config.vocab_size and draft.config.block_size == target.config.block_size
    assert draft.config.n_layer == 1 and draft.num_params() < target.num_params() / 10


@pytest.fixture(scope="module")
def smoke_result(tmp_path_factory):
    """The experiment at smoke scale, in this process: its training runs, then run() (two real servers)."""
    config = EXPERIMENT.config("smoke")
    outputs = {t.label: t.fn(**t.kwargs, threads=1) for t in EXPERIMENT.tasks(config, "smoke")}
    record = EXPERIMENT.run(config, outputs, Context("smoke", 1, tmp_path_factory.mktemp("serving")))
    return Result("serving", config, {"wall_time_s": 30.0, "threads": 1}, record), outputs


def test_the_quantization_tables_float32_row_is_the_served_models_own_validation_loss(smoke_result):
    result, outputs = smoke_result
    float32 = next(r for r in result.record.quant if r["variant"] == "float32")
    # the same batches; train() evaluates under its own attention kernel and precision context: rounding only
    assert float32["val_loss"] == pytest.approx(outputs["ablation llama seed 0"].run.val_loss, abs=1e-3)
    assert float32["loss_delta"] == 0


def test_speculative_output_is_greedy_output_for_every_k_and_draft(smoke_result):
    result, _ = smoke_result
    assert [r["k"] for r in result.record.spec] == result.config["spec_ks"]
    assert all(r["identical"] for r in result.record.spec)


def test_the_simulator_predicts_the_real_engines_steps_for_continuous_batching(smoke_result):
    result, _ = smoke_result
    for row in result.record.load:
        assert row["tokens"] == sum(serve.request_lengths(result.config["sim_requests"], 0))
        # Continuous batching refills a slot the step it frees, so arrival timing barely matters. A static
        # batch's members depend on when requests arrive, so no single run bounds it either way.
        if row["mode"] == "continuous":
            assert row["sim_steps"] <= row["engine_steps"] <= 1.1 * row["sim_steps"], row


def test_report_has_its_tables_figures_and_variables_in_both_languages(smoke_result):
    result, _ = smoke_result
    report = EXPERIMENT.report(result)
    assert set(report.tables) == {"serving_cache", "serving_batch", "serving_simulation", "serving_load",
                                  "serving_quant", "serving_spec", "serving_memory"}
    for name, by_lang in report.tables.items():
        assert set(by_lang) == set(STRINGS)
        assert by_lang["en"].count("\n|") == by_lang["zh"].count("\n|") and "{#tbl-" + name + "}" in by_lang["en"]
    for lang in STRINGS:
        assert len(report.figures["serving_cache"](lang).axes[0].lines) == 2
        assert report.figures["serving_batching"](lang).axes[0].get_legend() is not None
    variables = report.variables["serving"]
    assert variables["minutes"] == "0.5" and variables["requests"] == str(result.config["sim_requests"])


# ---------------------------------------------------------------- chapter 06's claims about results/serving.json

def committed() -> dict:
    return json.loads((B.ROOT / "results" / "serving.json").read_text(encoding="utf-8"))


def test_the_caches_advantage_grows_with_the_context_and_the_cached_step_stays_nearly_flat():
    cache = committed()["cache"]
    speedups = [r["speedup"] for r in cache]
    assert speedups[-1] > 2 * speedups[0] and speedups[-1] > 3  # "from ... to ...": it grows
    s = committed()["summary"]
    assert s["cache_uncached_growth"] > 2 * s["cache_cached_growth"]  # "grew ... and the cached one ..."


def test_batching_multiplies_throughput_for_a_smaller_growth_in_each_steps_time():
    s = committed()["summary"]
    assert s["batch_throughput_gain"] > 2 and s["batch_latency_growth"] < s["batch_throughput_gain"]


def test_continuous_batching_takes_fewer_steps_in_the_simulator_and_on_the_real_server():
    record = committed()
    one_slot = next(s for s in record["simulation"] if s["slots"] == 1)
    assert one_slot["throughput_ratio"][0] == 1  # "with one slot the two schedules are the same"
    ratios = [s["throughput_ratio"][0] for s in record["simulation"]]
    assert ratios == sorted(ratios)  # "the more slots, the more a static batch waits"
    for slots in record["config"]["load_slots"]:
        on, off = (next(r for r in record["load"] if r["slots"] == slots and r["mode"] == m) for m in ("continuous", "static"))
        assert on["engine_steps"] < off["engine_steps"] and on["latency_p50_s"] < off["latency_p50_s"]
    error = {m: max(r["engine_steps"] / r["sim_steps"] - 1 for r in record["load"] if r["mode"] == m)
             for m in ("continuous", "static")}
    assert error["continuous"] < error["static"]  # timing, which the simulator leaves out, costs static more


def test_in_seconds_continuous_batching_saves_less_than_in_steps():
    s, record = committed()["summary"], committed()
    assert 1 < s["load_throughput_ratio"] < s["load_steps_ratio_real"]  # "more tokens per second, fewer than steps saved"
    assert s["load_p50_ratio"] < 0.9
    on, off = (next(r for r in record["load"] if r["slots"] == s["load_slots"] and r["mode"] == m)
               for m in ("continuous", "static"))
    assert on["latency_p99_s"] / off["latency_p99_s"] > s["load_p50_ratio"]  # "the slowest gained less than the typical"
    assert on["wall_s"] / on["engine_steps"] > off["wall_s"] / off["engine_steps"]  # "a full step costs more"


def test_a_batch_of_eight_barely_lengthens_the_step_and_larger_batches_do():
    batch = {r["batch"]: r for r in committed()["batch"]}
    assert batch[8]["ms_per_token"] < 1.5 * batch[1]["ms_per_token"] < batch[32]["ms_per_token"]


def test_int8_costs_less_loss_than_int4_and_saves_about_three_quarters_of_the_bytes():
    quant = {r["variant"]: r for r in committed()["quant"]}
    assert abs(quant["int8 per channel"]["loss_delta"]) < 0.001  # "nothing measurable" next to chapter 05's noise
    assert quant["int8 per channel"]["loss_delta"] < quant["int4 group 32"]["loss_delta"]
    assert quant["int4 group 32"]["loss_delta"] <= quant["int4 group 128"]["loss_delta"]  # larger groups, coarser steps
    assert 3.5 < committed()["summary"]["int8_bytes_ratio"] < 4


def test_speculative_decoding_is_exact_and_acceptance_falls_with_k():
    spec = committed()["spec"]
    assert all(r["identical"] for r in spec)
    acceptance = [r["acceptance_rate"][0] for r in spec]
    assert acceptance == sorted(acceptance, reverse=True)
    speedups = [r["speedup"] for r in spec]  # "small and noisy": at most 1.5x, the seeds' spread as large as
    gaps = [abs(a[0] - b[0]) for a, b in zip(speedups, speedups[1:])]  # the gaps between neighbouring rows
    assert all(mean < 1.5 for mean, _ in speedups) and max(std for _, std in speedups) >= min(gaps)


def test_no_quantized_weights_decoded_faster_than_float32_on_this_cpu():
    quant = {r["variant"]: r for r in committed()["quant"]}
    base = quant["float32"]["tokens_per_sec"]
    assert quant["torch dynamic int8"]["tokens_per_sec"] < 1.1 * base  # "no faster than float32 here either"
    assert quant["int8 per channel"]["tokens_per_sec"] < 0.9 * base and quant["int4 group 32"]["tokens_per_sec"] < 0.9 * base


def test_int8_weights_move_the_crossover_four_times_earlier_and_ours_comes_before_llama2s():
    memory = {(r["model"], r["weights"]): r for r in committed()["memory"]}
    for model in ("char", "llama2"):
        assert memory[model, "float32"]["crossover_tokens"] == 4 * memory[model, "int8"]["crossover_tokens"]
    assert memory["char", "float32"]["crossover_tokens"] < memory["llama2", "float32"]["crossover_tokens"]
    llama2 = json.loads((B.ROOT / "results" / "llama2.json").read_text(encoding="utf-8"))
    assert memory["llama2", "float32"]["crossover_tokens"] == llama2["decode_memory"]["crossover_tokens"]  # chapter 03's arithmetic


@pytest.mark.parametrize("scale", ["full", "smoke"])
def test_every_speculative_prompt_and_its_new_tokens_fit_the_models_context(scale):
    config = EXPERIMENT.config(scale)
    block_size = recipes.llama().block_size
    assert all(len(p) + config["spec_tokens"] <= block_size for p in config["spec_prompts"])
    assert config["batch_prompt"] + config["batch_tokens"] <= block_size
