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
