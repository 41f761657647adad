"""Every word the book's generated tables, figures and variables show, per language.

One table per language with the same keys (tests/test_strings.py checks that, and tests/test_glossary.py
checks the zh words against book/glossary.yml). A value is a string, a list of strings (a table's header)
or a mapping of them; `{name}` marks a value the report fills in with str.format. An experiment's report
looks its words up here and never writes a word in either language itself.
"""

from __future__ import annotations

EN = {
    "yes": "yes",
    "no": "no",
    "identical": "identical",
    "different": "different",
    "verdict": {
        "accuracy": "accuracy", "economy": "economy", "cheaper_but_worse": "cheaper but worse",
        "noise": "within noise", "worse": "worse", "reference": "reference",
    },
    "variant": {
        "baseline": "baseline (LayerNorm, GELU, learned positions, MHA)", "rmsnorm": "+RMSNorm",
        "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA (2 KV heads)", "mqa": "MQA (1 KV head)",
        "llama": "LLaMA recipe (all four, 2 KV heads)",
    },
    "variant_short": {
        "baseline": "baseline", "rmsnorm": "+RMSNorm", "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA",
        "mqa": "MQA", "llama": "LLaMA",
    },
    "ablation": {
        "header": ["Config", "Val loss (mean ± std)", "Δ vs baseline", "Beyond noise?", "Verdict", "Params",
                   "KV bytes/token", "Training tokens/s"],
        "caption": "Ablation: final validation loss on fixed validation batches after {iters} iterations, "
                   "{n} seeds per config. A delta is beyond noise when its absolute value exceeds {factor}× the "
                   "pooled seed std ({noise}), that is {threshold}. Accuracy = loss lower beyond noise; economy = "
                   "cheaper than the baseline (fewer KV-cache bytes, {saving} or more fewer parameters, or fewer "
                   "normalization statistics) and loss not worse beyond noise; cheaper but worse = cheaper, with "
                   "loss worse beyond noise; worse = nothing saved, loss worse beyond noise",
        "axis": "validation loss (mean ± std over {n} seeds)",
        "noise_band": "baseline ± {k}× noise",
    },
    "additivity": {
        "single": "single {part} Δ",
        "sum": "sum of the four Δ",
        "predicted": "predicted: baseline + sum of Δ",
        "actual": "actual: LLaMA recipe",
        "gap": "gap (absolute difference, actual vs predicted)",
        "header": ["Item", "Val loss / Δ"],
        "caption": "Additivity: the single-part deltas added up, against the all-on run (means over seeds)",
    },
    "extrapolation": {
        "training_length": "{length} (training length)",
        "header": ["Eval length (characters)", "Learned positions (mean ± std)", "RoPE (mean ± std)"],
        "caption": "Extrapolation: both position schemes trained on sequences of length {train_len} ({n} seeds), "
                   "validation loss at longer lengths. The learned table has {block} rows, but training only uses "
                   "the first {train_len}; rows {train_len}–{last} never receive a gradient and keep their random "
                   "initial values",
        "learned": "learned positions",
        "rope": "RoPE",
        "train_len": "training length {n}",
        "untrained": "learned rows {first}–{last}: never trained",
        "eval_len": "evaluation length (characters)",
        "val_loss": "validation loss",
        "band": "shaded: ± 1 std over {n} seeds",
    },
    "data": {
        "char": "characters ({v})",
        "bpe": "BPE ({v})",
        "tokenizers_header": ["Tokenizer (vocabulary)", "Steps (same FLOPs)", "Characters per token",
                              "64 tokens reach (characters)", "Embedding parameters", "Val loss per token",
                              "Bits per character"],
        "tokenizers_caption": "Characters against byte-level BPE at equal training compute: the LLaMA recipe, {seeds} "
                              "seeds each (mean ± std), the same validation text; BPE trained on the training split only. "
                              "Compare tokenizers by the last column",
        "all": "all",
        "scale_header": ["Share of the training split", "Characters", "Passes over it", "Loss on its training text",
                         "Validation loss", "Gap (val − train)"],
        "scale_caption": "The LLaMA recipe on the first part of the training split, {steps} steps each, {seeds} "
                         "seeds (mean ± std)",
        "hygiene_header": ["Check", "Items", "Distinct", "Repeats of an earlier one", "Share of the characters"],
        "lines": "non-empty lines, exact",
        "lines_normalized": "non-empty lines, normalised",
        "long_lines": "lines of 30+ characters, exact",
        "long_lines_normalized": "lines of 30+ characters, normalised",
        "passages": "speeches (blocks between blank lines), exact",
        "near": "speeches of 5+ words, MinHash near duplicates (Jaccard ≥ 0.5)",
        "pairs": "{n} pairs",
        "overlap": "validation speeches sharing a 13-word sequence with training",
        "of": "{hits} of {n}",
        "hygiene_caption": "Duplicates in tinyshakespeare, found by hashing (llmparts.hygiene)",
        "leak_header": ["Model", "Loss on the leaked half", "Loss on the held-out half"],
        "clean": "trained on the training split",
        "leaky": "trained on it plus the leaked half",
        "difference": "difference (paired by seed)",
        "leak_caption": "A leak, measured: the first half of the validation split copied once into training "
                        "({chars} characters); {seeds} seeds, mean ± std",
        "speed_header": ["Measured", "llmparts.bpe (Python)", "tokenizers (Rust)", "Time, ours / theirs"],
        "train_time": "train {m} merges on the training split (s)",
        "encode_time": "encode the validation split (s)",
        "uncached_time": "the same, ours without its cache of encoded chunks (s)",
        "same_ids": "same token ids on the validation split",
        "same_merges": "same set of merges",
        "speed_caption": "Our BPE against Hugging Face tokenizers, best of {repeats} runs on this machine",
        "fig_x": "share of the training split (log scale)",
        "fig_y": "loss (nats per character)",
        "fig_train": "on its own training text",
        "fig_val": "on the validation text",
        "fig_passes": "{n} passes",
    },
    "hands_on": {
        "baseline": "baseline",
        "all": "all three (LLaMA recipe)",
        "header": ["Config", "Val loss", "Params", "Δ"],
        "caption": "Output of examples/tiny_modern.py: {steps} steps per config, one seed; the whole script "
                   "took {minutes} minutes here",
    },
    "generation": {
        "header": ["Implementation", "KV heads", "Cache bytes/token", "Cache bytes", "Tokens/s without cache",
                   "Tokens/s with cache", "Speedup", "Greedy output"],
        "caption": "Generation: a {prompt_len}-token prompt and {new_tokens} new tokens, with and without "
                   "the KV cache; greedy outputs compared token by token",
    },
    "llama2_params": {
        "embedding": "token embedding (tied with the output head)",
        "attention": "attention (wq, wk, wv, wo; all layers)",
        "feed_forward": "feed-forward (SwiGLU; all layers)",
        "norms": "norms (RMSNorm weights)",
        "total": "**total**",
        "untied": "total with an untied output head",
        "header": ["Component", "Parameters", "Share"],
        "caption": "Parameter breakdown of the LLaMA2 preset (counted by code)",
    },
    "llama2_kv_cache": {
        "header": ["Attention", "KV heads", "Bytes per token", "Whole cache at {context} tokens"],
        "caption": "KV-cache size of the LLaMA2 preset (fp32: 2 × layers × KV heads × head dim × 4 bytes per token)",
    },
    "attention_cost": {
        "header": ["Sequence length", "Attention scores per layer per head (quadratic)",
                   "Cached positions per layer per head (linear)", "KV cache (GQA, fp32)",
                   "FLOPs per generated token"],
        "caption": "How attention cost grows with sequence length: the score matrix is quadratic, the KV cache "
                   "linear; FLOPs per token are 2 × weights plus attention's 4 × layers × length × width "
                   "(LLaMA2 preset)",
    },
    "decode_memory": {
        "cache": "cache",
        "weights": "weights",
        "header": ["Batch (sequences)", "Context per sequence (tokens)", "KV cache (GQA, fp32)", "Weights (fp32)",
                   "Cache ÷ weights", "Larger read per step"],
        "caption": "The two things every decoding step reads from memory: all the weights (the same every step) "
                   "and the whole KV cache (growing with batch × context). The cache catches up with the weights "
                   "only at about {crossover} cached tokens, summed over the batch (LLaMA2 preset)",
    },
    "serving": {
        "cache_header": ["Context (tokens)", "No cache (ms/token)", "KV cache (ms/token)", "No cache (tokens/s)",
                         "KV cache (tokens/s)", "Cache speedup"],
        "cache_caption": "The next token at a growing context, without a cache (a forward pass over the whole context) "
                         "and with one (a pass over one token that reads the cached keys and values): the LLaMA recipe "
                         "with block_size {block}, batch 1, median of {repeats} runs",
        "batch_header": ["Batch", "Tokens/s", "vs batch 1", "ms per decode step", "vs batch 1"],
        "batch_caption": "Greedy batched generation with the KV cache on the book's char model: {prompt}-character "
                         "prompts, {tokens} new tokens each; one decode step is every sequence's time per token",
        "sim_header": ["Slots", "Static: tokens/step", "Continuous: tokens/step", "Continuous ÷ static",
                       "Static p50 (steps)", "Continuous p50 (steps)"],
        "sim_caption": "The simulator (numpy_serving.simulate_batching): {n} requests, {clients} clients each sending "
                       "its next request when its last one ends; lengths mostly 4–12 tokens, one in five 40–50; mean ± "
                       "std over {seeds} draws of the lengths; latency from arrival to the last token, in decode steps",
        "load_header": ["Slots", "Batching", "Tokens/s", "p50 (s)", "p99 (s)", "Engine steps", "Simulated steps",
                        "ms per step"],
        "load_caption": "The real server (llmparts serve) under the same load, side by side in one run: {n} streamed "
                        "greedy requests from {clients} concurrent clients on 127.0.0.1; the engine's decode steps "
                        "come from /health, the simulated ones from the same request lengths",
        "continuous": "continuous",
        "static": "static",
        "variants": {"float32": "float32", "int8 per channel": "int8 per channel", "int4 group 32": "int4, groups of 32",
                     "int4 group 128": "int4, groups of 128", "torch dynamic int8": "PyTorch dynamic int8"},
        "quant_header": ["Weights", "Block linears", "Whole model (torch.save)", "Val loss", "Δ loss", "Tokens/s",
                         "vs float32"],
        "quant_caption": "Weight-only quantization of the book's char model (the block linears; the tied embedding "
                         "stays float32), scored on the same {batches} validation batches; tokens/s: greedy decoding "
                         "with the KV cache, batch 1",
        "spec_header": ["k (draft tokens)", "Acceptance", "Tokens per target pass", "Speedup", "Same text as greedy"],
        "spec_caption": "Greedy speculative decoding: the book's char model checks the guesses of a one-layer draft "
                        "({params} parameters) trained by the same pipeline; mean ± std over {seeds} draft seeds, each "
                        "averaged over {prompts} prompts of {tokens} new tokens",
        "models": {"char": "our char model", "llama2": "LLaMA2 preset"},
        "memory_header": ["Model", "Weights", "Weight bytes", "KV bytes per token", "Crossover (cached tokens)",
                          "Context", "Batch at crossover"],
        "memory_caption": "Where the KV cache (float32, GQA) outweighs the weights: weight bytes ÷ cache bytes per token, "
                          "the cached tokens summed over a batch; at the full context, that many sequences",
        "fig_uncached": "no cache: the whole context each step",
        "fig_cached": "KV cache: one token each step",
        "fig_context": "context (tokens)",
        "fig_ms": "ms for the next token (log scale)",
        "fig_sim": "simulated, {mode}",
        "fig_real": "real server, {mode}",
        "fig_ideal": "every slot busy",
        "fig_slots": "slots (sequences decoded together)",
        "fig_tokens_per_step": "tokens per decode step",
    },
    "drift": {
        "shakespeare": "Shakespeare (held out)",
        "en": "modern English (this book)",
        "zh": "Chinese (this book)",
        "cannot": "cannot encode",
        "domains_header": ["Domain", "Characters", "Distinct", "Outside the char vocabulary", "UTF-8 bytes per character",
                           "BPE tokens per character", "Char model's loss"],
        "domains_caption": "The three domains: the share of characters the 65-character vocabulary cannot encode, "
                           "what a byte-level BPE of {vocab} tokens (learned on the training split) spends on them, "
                           "and the trained LLaMA char model's mean loss per {window}-character window (nats per "
                           "character, characters outside the vocabulary dropped)",
        "detector_header": ["h", "False alarms", "On fresh streams", "Alarm too early", "Missed", "Delay (batches)"],
        "detector_caption": "CUSUM on the per-batch loss with threshold h, {streams} streams per row: {n} batches of "
                            "{b} windows, modern English rising from batch {start} to all of the batch over {ramp} "
                            "batches. False alarms: the share of streams that never drift yet alarm (and on a second, "
                            "fresh set); too early: drifting streams that alarm before the drift starts; delay: "
                            "batches from the start of the drift to the alarm, mean ± std",
        "adapt_header": ["Fine-tuning step", "Modern English", "Shakespeare", "Modern English, with replay",
                         "Shakespeare, with replay"],
        "adapt_caption": "Fine-tuning the trained char model on {chars} characters of modern English (AdamW, lr "
                         "{lr}, batches of {batch} windows; with replay, {replay} of them are Shakespeare's training "
                         "text): held-out loss on both domains, mean ± std over {seeds} seeds",
        "fig_rate": "stated false-alarm rate",
        "fig_tradeoff_x": "false alarms: streams without drift that alarm (%)",
        "fig_tradeoff_y": "detection delay (batches after the drift starts)",
        "fig_modern": "modern English (new domain)",
        "fig_shakespeare": "Shakespeare (old domain)",
        "fig_replay": ", replaying {n} of {b} windows",
        "fig_adapt_x": "fine-tuning steps",
        "fig_adapt_y": "held-out loss (nats per character)",
    },
    # ---- chapter 07, governance (llmparts.experiments.governance, llmparts.model_card)
    "governance": {
        "variant_reference": "reference (bfloat16, 1 thread, seed 0)",
        "variant_repeat": "the same again",
        "variant_threads": "2 threads",
        "variant_float32": "float32 instead of bfloat16",
        "variant_seed": "seed 1",
        "pin_none": "nothing: same bits",
        "pin_bits": "pin for identical bits; the metric moves less than a new seed",
        "pin_metric": "pin: the metric moves as much as a new seed",
        "pin_seed": "pin: this is the noise itself",
        "repro_header": ["Run", "Same bits", "Largest weight difference", "Val loss", "Δ vs reference", "What a release must pin"],
        "repro_caption": "The book's recipe trained {steps} steps, changing one thing at a time; each run in its "
                         "own process",
        "size_small": "small",
        "size_book": "book size",
        "size_large": "large",
        "leak_header": ["Model", "Params", "Step", "Passes over the slice", "Train loss", "Val loss",
                        "Membership AUC", "Regurgitated", "Held-out control"],
        "leak_caption": "Memorisation: the LLaMA recipe at three sizes trained on a slice of {chars} characters "
                        "({seeds} seeds, mean ± std). AUC: {lines} training lines against {lines} unseen lines "
                        "scored by their loss; regurgitated: {passages} training passages of {length} characters "
                        "completed exactly by greedy decoding from the first {prefix}",
        "fig_chance": "chance: the test learns nothing",
        "fig_auc": "membership-test AUC",
        "fig_regurgitated": "training passages regurgitated",
        "fig_x": "training step",
        "fig_control": "dotted: unseen passages (the control)",
    },
    "card": {
        "val_loss": "validation loss (nats per character)",
        "membership_auc": "membership-inference AUC (0.5: nothing leaks)",
        "regurgitated": "share of training passages regurgitated",
        "summary": "A character-level LLaMA (RMSNorm, SwiGLU, RoPE, grouped-query attention) with {params} "
                   "parameters: {layers} layers, width {width}, {heads} query heads sharing {kv} key/value heads, "
                   "a context of {block} characters over a vocabulary of {vocab}. Trained on tinyshakespeare by "
                   "the book *From GPT to LLaMA*; every number below was measured by its pipeline.",
        "summary_short": "LLaMA recipe, {params} parameters ({layers} layers, width {width}, {heads} heads, "
                         "{kv} KV heads)",
        "use_title": "Intended use",
        "use": "Teaching: reading, running and taking apart a small language model, in the browser or on a CPU.",
        "limits_title": "Limits",
        "limits": "It writes Shakespeare-like text one character at a time and knows nothing else: no facts, no "
                  "instructions, no safety training; it cannot encode a character outside its vocabulary. Do not "
                  "use its text for anything a person relies on.",
        "metrics_title": "Metrics",
        "metrics_header": ["Metric", "Mean ± seed std", "Seeds"],
        "control": "Unseen passages completed exactly (the regurgitation test's control): {value} of them.",
        "training_title": "Training",
        "repro_title": "Reproducibility",
        "repro": "The same run repeated gives bit-identical weights: {repeat}. Changes that alter the bits: {changes}.",
        "provenance_title": "Provenance",
        "yes": "yes",
        "no": "no",
        "none": "none",
        "header": ["Field", "Value"],
        "field_model": "Model",
        "field_training": "Training",
        "training_short": "{iters} steps, batches of {batch} × {seq} characters, {dtype}, {seeds} seeds",
        "field_control": "unseen passages completed exactly (control)",
        "field_repeat": "same run twice: identical bits",
        "field_changes": "changes that alter the bits",
        "field_use": "Intended use",
        "field_limits": "Limits",
        "field_weights": "weights (.npz) sha256",
        "field_fingerprint": "code fingerprint",
        "field_torch": "PyTorch",
        "model_caption": "The model card, generated from results/governance.json",
        "data_caption": "The data card, generated from the pipeline's provenance",
        "data_source": "Source",
        "data_source_value": "tinyshakespeare from Karpathy's char-rnn ({url})",
        "data_sha": "sha256 (checked on every load)",
        "data_size": "Characters",
        "data_size_value": "{train} for training (first 90%), {val} for validation (last 10%)",
        "data_vocab": "Vocabulary (distinct characters)",
        "data_licence": "Licence",
        "data_licence_value": "Shakespeare's text is in the public domain; char-rnn's repository is MIT-licensed",
        "data_gaps": "What is not known",
        "data_gaps_value": "the source edition; repeated lines are kept (chapter 04 counts them)",
    },
    "alignment": {
        "base": "base (pre-trained)",
        "sft": "SFT",
        "dpo": "DPO, β = {beta}",
        "header": ["Model", "Reward", "Speaker half", "Verse half", "KL to reference (nats)", "Repetition",
                   "Val loss (ordinary text)"],
        "caption": "The char model before and after post-training, mean ± std over {seeds} seeds: one sampled "
                   "completion of {chars} characters per held-out prompt ({prompts} prompts); KL to the SFT model "
                   "(the DPO reference), estimated on those samples; DPO runs {steps} steps",
        "samples_header": ["Model", "Samples (seed 0, ⏎ is a newline)"],
        "samples_caption": "The first {n} samples of each model on the same held-out prompts, as generated",
        "fig_sft": "SFT (the reference)",
        "fig_base": "base",
        "fig_x": "KL to the reference, nats per completion (log scale above 1)",
        "fig_y": "Reward (mean over prompts)",
    },
}

ZH = {
    "yes": "是",
    "no": "否",
    "identical": "完全相同",
    "different": "不同",
    "verdict": {
        "accuracy": "準", "economy": "省", "cheaper_but_worse": "省了但更差", "noise": "雜訊內", "worse": "更差",
        "reference": "基準",
    },
    "variant": {
        "baseline": "基準（LayerNorm、GELU、學習式位置、MHA）", "rmsnorm": "+RMSNorm",
        "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA（2 個 KV 頭）", "mqa": "MQA（1 個 KV 頭）",
        "llama": "LLaMA 配方（四個全開，2 個 KV 頭）",
    },
    "variant_short": {
        "baseline": "基準", "rmsnorm": "+RMSNorm", "swiglu": "+SwiGLU", "rope": "+RoPE", "gqa": "GQA",
        "mqa": "MQA", "llama": "LLaMA 配方",
    },
    "ablation": {
        "header": ["組態", "驗證損失（平均 ± 標準差）", "Δ（對基準）", "超出雜訊？", "判定", "參數",
                   "KV 位元組/token", "訓練 tokens/秒"],
        "caption": "消融實驗：每個組態訓練 {iters} 步、{n} 個種子，在固定的驗證批次上量最終損失。"
                   "Δ 的絕對值大於 {factor} 倍合併種子標準差（{noise}，即 {threshold}）才算超出雜訊。"
                   "「準」= 損失降低超出雜訊；「省」= 比基準便宜（KV 快取、參數少 {saving} 以上，或正規化統計量較少），"
                   "而且損失沒有變差超出雜訊；「省了但更差」= 便宜，但損失變差超出雜訊；「更差」= 沒省什麼，損失變差超出雜訊",
        "axis": "驗證損失（{n} 個種子的平均 ± 標準差）",
        "noise_band": "基準 ± {k} 倍雜訊",
    },
    "additivity": {
        "single": "單獨 {part} 的 Δ",
        "sum": "四個 Δ 相加",
        "predicted": "預測：基準 + Δ 總和",
        "actual": "實際：LLaMA 配方",
        "gap": "差距（實際與預測之差的絕對值）",
        "header": ["項目", "驗證損失 / Δ"],
        "caption": "可加性：四個零件各自的改善相加，對照四個全開的實際結果（種子平均）",
    },
    "extrapolation": {
        "training_length": "{length}（訓練長度）",
        "header": ["評估長度（字元）", "學習式位置（平均 ± 標準差）", "RoPE（平均 ± 標準差）"],
        "caption": "外推：兩種位置方案都在長度 {train_len} 的序列上訓練（{n} 個種子），再量更長序列的驗證損失。"
                   "學習式位置表有 {block} 列，但訓練只用到前 {train_len} 列；第 {train_len}–{last} 列從沒收到梯度，"
                   "仍是初始化時的隨機值",
        "learned": "學習式位置",
        "rope": "RoPE",
        "train_len": "訓練長度 {n}",
        "untrained": "學習式位置表第 {first}–{last} 列：從未訓練",
        "eval_len": "評估長度（字元）",
        "val_loss": "驗證損失",
        "band": "陰影：{n} 個種子的 ± 1 標準差",
    },
    "data": {
        "char": "字元（{v}）",
        "bpe": "BPE（{v}）",
        "tokenizers_header": ["分詞器（詞彙表）", "步數（同樣的 FLOPs）", "每個 token 的字元數", "64 個 token 涵蓋的字元數", "嵌入參數",
                              "每個 token 的驗證損失", "每字元位元數"],
        "tokenizers_caption": "同樣的訓練運算量下，字元與位元組層級 BPE 的比較：LLaMA 配方，各 {seeds} 個種子（平均 ± 標準差），同一份驗證文字；BPE "
                              "只用訓練集學習。比較分詞器要看最後一欄",
        "all": "全部",
        "scale_header": ["用了訓練集的多少", "字元數", "讀過幾遍", "在自己訓練文字上的損失", "驗證損失", "差距（驗證 − 訓練）"],
        "scale_caption": "LLaMA 配方只用訓練集的前一部分，各訓練 {steps} 步、{seeds} 個種子（平均 ± 標準差）",
        "hygiene_header": ["檢查", "項目數", "不同的", "重複前面出現過的", "占字元的比例"],
        "lines": "非空行，完全相同",
        "lines_normalized": "非空行，正規化後相同",
        "long_lines": "30 字元以上的行，完全相同",
        "long_lines_normalized": "30 字元以上的行，正規化後相同",
        "passages": "台詞段落（空行之間的區塊），完全相同",
        "near": "5 個單字以上的台詞段落，MinHash 近似重複（Jaccard ≥ 0.5）",
        "pairs": "{n} 對",
        "overlap": "和訓練文字共用連續 13 個單字的驗證段落",
        "of": "{n} 段中 {hits} 段",
        "hygiene_caption": "用雜湊找出 tinyshakespeare 裡的重複（llmparts.hygiene）",
        "leak_header": ["模型", "外洩那一半的損失", "保留那一半的損失"],
        "clean": "只用訓練集訓練",
        "leaky": "訓練集加上外洩的那一半",
        "difference": "差值（依種子配對）",
        "leak_caption": "量一次外洩：驗證集前一半複製一份放進訓練資料（{chars} 個字元）；{seeds} 個種子，平均 ± 標準差",
        "speed_header": ["量測項目", "llmparts.bpe（Python）", "tokenizers（Rust）", "時間：我們 / 它們"],
        "train_time": "在訓練集上學 {m} 個合併（秒）",
        "encode_time": "編碼整個驗證集（秒）",
        "uncached_time": "同上，但我們的不用已編碼片段的快取（秒）",
        "same_ids": "驗證集上的 token id 完全相同",
        "same_merges": "學到的合併集合相同",
        "speed_caption": "我們的 BPE 與 Hugging Face tokenizers 的比較，這台機器上 {repeats} 次取最快",
        "fig_x": "用了訓練集的多少（對數刻度）",
        "fig_y": "損失（每字元 nats）",
        "fig_train": "在自己的訓練文字上",
        "fig_val": "在驗證文字上",
        "fig_passes": "讀 {n} 遍",
    },
    "hands_on": {
        "baseline": "基準",
        "all": "三個全開（LLaMA 配方）",
        "header": ["組態", "驗證損失", "參數", "Δ"],
        "caption": "examples/tiny_modern.py 的輸出：每個組態 {steps} 步、單一種子；整支程式在這台機器上跑了 {minutes} 分鐘",
    },
    "generation": {
        "header": ["實作與注意力", "KV 頭數", "快取位元組/token", "快取總位元組", "無快取 tokens/秒", "有快取 tokens/秒",
                   "加速", "貪婪解碼的輸出"],
        "caption": "生成速度：提示 {prompt_len} 個 token、生成 {new_tokens} 個，有無 KV 快取的比較；"
                   "貪婪解碼的輸出逐 token 比對",
    },
    "llama2_params": {
        "embedding": "詞嵌入（與輸出層共用）",
        "attention": "注意力（wq、wk、wv、wo，全部層）",
        "feed_forward": "前饋層（SwiGLU，全部層）",
        "norms": "正規化（RMSNorm 權重）",
        "total": "**總計**",
        "untied": "輸出層不共用時的總計",
        "header": ["元件", "參數", "占比"],
        "caption": "LLaMA2 預設組態的參數分解（由程式逐一清點）",
    },
    "llama2_kv_cache": {
        "header": ["注意力", "KV 頭數", "位元組/token", "{context} 個 token 的整個快取"],
        "caption": "LLaMA2 預設組態的 KV 快取大小（fp32：2 × 層數 × KV 頭數 × 頭維度 × 4 位元組/token）",
    },
    "attention_cost": {
        "header": ["序列長度", "注意力分數（每層每頭，平方成長）", "快取位置（每層每頭，線性成長）", "KV 快取（GQA，fp32）",
                   "生成一個 token 的 FLOPs"],
        "caption": "注意力的成本隨序列長度成長：分數矩陣是平方、KV 快取是線性；每個 token 的 FLOPs 是權重的 2 × 參數，"
                   "加上注意力的 4 × 層數 × 長度 × 寬度（LLaMA2 預設組態）",
    },
    "decode_memory": {
        "cache": "快取",
        "weights": "權重",
        "header": ["批次（序列數）", "每條序列的上下文（token）", "KV 快取（GQA，fp32）", "權重（fp32）", "快取 ÷ 權重",
                   "每步讀得比較多的"],
        "caption": "解碼每一步要從記憶體讀的兩樣東西：全部權重（每步都一樣）和整份 KV 快取（隨批次 × 上下文成長）。"
                   "快取要累積到約 {crossover} 個 token（整個批次加起來）才追上權重（LLaMA2 預設組態）",
    },
    "serving": {
        "cache_header": ["上下文（token）", "無快取（毫秒/token）", "KV 快取（毫秒/token）", "無快取（token/秒）",
                         "KV 快取（token/秒）", "快取加速"],
        "cache_caption": "上下文越來越長時產生下一個 token：沒有快取（整段上下文做一次前向傳遞）與有快取（只算一個 token，"
                         "讀取快取的 key 與 value）；LLaMA 配方，block_size {block}，批次 1，{repeats} 次的中位數",
        "batch_header": ["批次", "token/秒", "相對批次 1", "每個解碼步（毫秒）", "相對批次 1"],
        "batch_caption": "本書字元模型用 KV 快取做批次貪婪解碼：提示 {prompt} 個字元，各產生 {tokens} 個新 token；"
                         "一個解碼步就是每條序列每個 token 的時間",
        "sim_header": ["槽位", "靜態：token/步", "連續：token/步", "連續 ÷ 靜態", "靜態 p50（步）", "連續 p50（步）"],
        "sim_caption": "模擬器（numpy_serving.simulate_batching）：{n} 個請求、{clients} 個客戶端，每個客戶端在上一個請求"
                       "結束時送出下一個；長度多半 4–12 個 token，五個裡有一個 40–50；長度抽 {seeds} 次的平均 ± 標準差；"
                       "延遲是從抵達到最後一個 token，以解碼步計",
        "load_header": ["槽位", "批次處理", "token/秒", "p50（秒）", "p99（秒）", "引擎步數", "模擬步數", "每步毫秒"],
        "load_caption": "真正的伺服器（llmparts serve）承受同樣的負載，在同一次執行裡並排量測：{clients} 個並行客戶端"
                        "在 127.0.0.1 上送出 {n} 個串流貪婪解碼請求；引擎的解碼步數取自 /health，模擬步數來自同一組請求長度",
        "continuous": "連續",
        "static": "靜態",
        "variants": {"float32": "float32", "int8 per channel": "int8，每個輸出通道", "int4 group 32": "int4，每組 32",
                     "int4 group 128": "int4，每組 128", "torch dynamic int8": "PyTorch 動態 int8"},
        "quant_header": ["權重", "區塊線性層", "整個模型（torch.save）", "驗證損失", "Δ 損失", "token/秒", "相對 float32"],
        "quant_caption": "本書字元模型的僅權重量化（區塊內的線性層；共用的嵌入維持 float32），用同樣的 {batches} 個驗證批次"
                         "評分；token/秒：批次 1、使用 KV 快取的貪婪解碼",
        "spec_header": ["k（草稿 token）", "接受率", "每次目標傳遞的 token", "加速", "與貪婪解碼文字相同"],
        "spec_caption": "貪婪推測解碼：本書字元模型檢查一個單層草稿模型（{params} 個參數，同一條管線訓練）的猜測；"
                        "{seeds} 個草稿種子的平均 ± 標準差，每個種子平均 {prompts} 個提示、各 {tokens} 個新 token",
        "models": {"char": "我們的字元模型", "llama2": "LLaMA2 預設組態"},
        "memory_header": ["模型", "權重", "權重位元組", "每個 token 的 KV 位元組", "交叉點（快取的 token）",
                          "上下文", "交叉點的批次"],
        "memory_caption": "KV 快取（float32，GQA）何時比權重還重：權重位元組 ÷ 每個 token 的快取位元組，"
                          "快取的 token 是整個批次加總；在完整上下文下，就是這麼多條序列",
        "fig_uncached": "無快取：每步重算整段上下文",
        "fig_cached": "KV 快取：每步只算一個 token",
        "fig_context": "上下文（token）",
        "fig_ms": "產生下一個 token 的毫秒數（對數刻度）",
        "fig_sim": "模擬，{mode}",
        "fig_real": "真實伺服器，{mode}",
        "fig_ideal": "每個槽位都在忙",
        "fig_slots": "槽位（一起解碼的序列數）",
        "fig_tokens_per_step": "每個解碼步的 token 數",
    },
    "drift": {
        "shakespeare": "莎士比亞（保留文字）",
        "en": "現代英文（本書）",
        "zh": "中文（本書）",
        "cannot": "無法編碼",
        "domains_header": ["領域", "字元數", "不同字元", "字元詞彙表以外的字元", "每字元 UTF-8 位元組", "每字元 BPE token",
                           "字元模型的損失"],
        "domains_caption": "三個領域：65 個字元的詞彙表無法編碼的字元占比、{vocab} 個 token 的位元組層級 BPE（在訓練集上學得）"
                           "要花多少 token，以及訓練好的 LLaMA 字元模型在每個 {window} 字元視窗上的平均損失"
                           "（每字元 nats，詞彙表以外的字元先刪除）",
        "detector_header": ["h", "誤報", "另一批串流", "太早警報", "漏掉", "延遲（批次）"],
        "detector_caption": "以門檻為 h 的 CUSUM 監看每批次損失，每列 {streams} 條串流：{n} 個批次、每批 {b} 個視窗，現代英文從第 "
                            "{start} 批開始、在 {ramp} 個批次內升到整批。誤報：從不漂移卻發出警報的串流占比（以及另一批新串流上的"
                            "占比）；太早：漂移開始前就警報的漂移串流；延遲：從漂移開始到警報的批次數，平均 ± 標準差",
        "adapt_header": ["微調步數", "現代英文", "莎士比亞", "現代英文（重播）", "莎士比亞（重播）"],
        "adapt_caption": "把訓練好的字元模型在 {chars} 個字元的現代英文上微調（AdamW，學習率 {lr}，每批 {batch} 個視窗；"
                         "重播時其中 {replay} 個取自莎士比亞的訓練文字）：兩個領域的保留文字損失，{seeds} 個種子的平均 ± 標準差",
        "fig_rate": "設定的誤報率",
        "fig_tradeoff_x": "誤報：沒有漂移卻警報的串流（%）",
        "fig_tradeoff_y": "偵測延遲（漂移開始後的批次數）",
        "fig_modern": "現代英文（新領域）",
        "fig_shakespeare": "莎士比亞（舊領域）",
        "fig_replay": "，重播 {b} 個視窗中的 {n} 個",
        "fig_adapt_x": "微調步數",
        "fig_adapt_y": "保留文字的損失（每字元 nats）",
    },
    # ---- 第 07 章，治理（llmparts.experiments.governance、llmparts.model_card）
    "governance": {
        "variant_reference": "參考（bfloat16、1 個執行緒、種子 0）",
        "variant_repeat": "原樣再跑一次",
        "variant_threads": "2 個執行緒",
        "variant_float32": "float32 取代 bfloat16",
        "variant_seed": "種子 1",
        "pin_none": "不必：位元相同",
        "pin_bits": "要位元相同就得固定；指標的變動小於換種子",
        "pin_metric": "必須固定：指標的變動和換種子一樣大",
        "pin_seed": "必須固定：它就是雜訊本身",
        "repro_header": ["執行", "位元相同", "最大權重差", "驗證損失", "與參考之差", "發布必須固定什麼"],
        "repro_caption": "本書配方訓練 {steps} 步，一次只改一件事；每次執行各在自己的行程裡",
        "size_small": "小",
        "size_book": "本書大小",
        "size_large": "大",
        "leak_header": ["模型", "參數", "步數", "掃過切片的次數", "訓練損失", "驗證損失", "成員推論 AUC", "逐字吐出",
                        "未見過的對照"],
        "leak_caption": "記憶：LLaMA 配方的三種大小在 {chars} 個字元的切片上訓練（{seeds} 個種子，平均 ± 標準差）。"
                        "AUC：以損失為分數，{lines} 行訓練文字對上 {lines} 行沒見過的文字；逐字吐出：{passages} 段 "
                        "{length} 個字元的訓練段落，從前 {prefix} 個字元起以貪婪解碼一字不差寫完的比例",
        "fig_chance": "機率水準：測試什麼都看不出",
        "fig_auc": "成員推論 AUC",
        "fig_regurgitated": "逐字吐出的訓練段落",
        "fig_x": "訓練步數",
        "fig_control": "點線：沒見過的段落（對照）",
    },
    "card": {
        "val_loss": "驗證損失（每字元 nats）",
        "membership_auc": "成員推論 AUC（0.5：毫無洩漏）",
        "regurgitated": "逐字吐出的訓練段落比例",
        "summary": "字元層級的 LLaMA（RMSNorm、SwiGLU、RoPE、分組查詢注意力），{params} 個參數：{layers} 層、寬度 "
                   "{width}、{heads} 個 query 頭共用 {kv} 個 key/value 頭，上下文 {block} 個字元，詞彙 {vocab} 個字元。"
                   "由《從 GPT 到 LLaMA》一書在 tinyshakespeare 上訓練；以下每個數字都由它的管線量測。",
        "summary_short": "LLaMA 配方，{params} 個參數（{layers} 層、寬度 {width}、{heads} 個頭、{kv} 個 KV 頭）",
        "use_title": "預期用途",
        "use": "教學：在瀏覽器或 CPU 上閱讀、執行、拆解一個小語言模型。",
        "limits_title": "限制",
        "limits": "它一次一個字元寫出像莎士比亞的文字，除此之外一無所知：沒有事實知識、不會聽指令、沒有安全訓練；"
                  "詞彙以外的字元它連編碼都做不到。別把它寫的文字用在任何有人依賴的地方。",
        "metrics_title": "指標",
        "metrics_header": ["指標", "平均 ± 種子標準差", "種子數"],
        "control": "沒見過的段落被一字不差寫完的比例（逐字吐出測試的對照）：{value}。",
        "training_title": "訓練",
        "repro_title": "可重現性",
        "repro": "同一次執行重跑，權重逐位元相同：{repeat}。會改變位元的變動：{changes}。",
        "provenance_title": "來源",
        "yes": "是",
        "no": "否",
        "none": "無",
        "header": ["項目", "內容"],
        "field_model": "模型",
        "field_training": "訓練",
        "training_short": "{iters} 步，每批 {batch} × {seq} 個字元，{dtype}，{seeds} 個種子",
        "field_control": "沒見過的段落被一字不差寫完（對照）",
        "field_repeat": "同一次執行跑兩次：位元相同",
        "field_changes": "會改變位元的變動",
        "field_use": "預期用途",
        "field_limits": "限制",
        "field_weights": "權重（.npz）sha256",
        "field_fingerprint": "程式碼指紋",
        "field_torch": "PyTorch",
        "model_caption": "模型卡，由 results/governance.json 產生",
        "data_caption": "資料卡，由管線記下的來源資訊產生",
        "data_source": "來源",
        "data_source_value": "Karpathy 的 char-rnn 裡的 tinyshakespeare（{url}）",
        "data_sha": "sha256（每次載入都檢查）",
        "data_size": "字元數",
        "data_size_value": "{train} 個用於訓練（前 90%），{val} 個用於驗證（後 10%）",
        "data_vocab": "詞彙（不同的字元）",
        "data_licence": "授權",
        "data_licence_value": "莎士比亞的作品屬於公有領域；char-rnn 儲存庫採 MIT 授權",
        "data_gaps": "未知之處",
        "data_gaps_value": "來源版本不詳；重複的行保留著（第 04 章數過）",
    },
    "alignment": {
        "base": "基礎模型（預訓練）",
        "sft": "SFT",
        "dpo": "DPO，β = {beta}",
        "header": ["模型", "獎勵", "說話者分數", "詩行分數", "與參考模型的 KL（nats）", "重複率", "驗證損失（一般文字）"],
        "caption": "後訓練前後的字元模型，{seeds} 個種子的平均 ± 標準差：每個保留提示（共 {prompts} 個）抽樣一段 "
                   "{chars} 個字元的續寫；KL 是對 SFT 模型（DPO 的參考模型）在這些樣本上的估計；DPO 訓練 {steps} 步",
        "samples_header": ["模型", "樣本（種子 0，⏎ 是換行）"],
        "samples_caption": "各模型在同樣的保留提示上的前 {n} 個樣本，原樣照錄",
        "fig_sft": "SFT（參考模型）",
        "fig_base": "基礎模型",
        "fig_x": "與參考模型的 KL，每段續寫的 nats（大於 1 的部分為對數刻度）",
        "fig_y": "獎勵（提示的平均）",
    },
}

STRINGS = {"zh": ZH, "en": EN}  # the book's two editions
LANGS = tuple(STRINGS)
