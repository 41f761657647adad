"""Chapter 08, drift: the three domains, what the trained char model makes of them, and fine-tuning it on a
little of the new one.

- Domains: held-out Shakespeare (the validation split), modern English and Chinese. The last two are
  frozen snapshots of this book's own prose (data/drift/, with data/drift/snapshot.json naming the
  commit, date and sha256). They are written only on request, `python -m llmparts.driftlab snapshot`,
  so results never go stale because a chapter was edited.
- The char model's vocabulary is tinyshakespeare's 65 characters. Every character outside it is
  *dropped* before the model scores a text (`in_vocab`), and how many were dropped is recorded: most
  of Chinese, a few percent of modern English (digits, brackets, quotes).
- Scoring: the mean cross-entropy of each 64-character window (`window_losses`); llmparts.drift builds
  streams and runs the detector from those pools.
- Adaptation: `finetune` continues training the model on modern English, scoring both domains as it goes,
  with or without replaying some Shakespeare in every batch.

The pure-NumPy detector lives in llmparts.drift; experiments/drift.py schedules and reports this.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from .atomic import write_text
from .bpe import BPETokenizer
from .checks import ArgumentParser
from .config import ModelConfig
from .data import DataError, get_batch
from .model import GPT
from .train import evaluate

SNAPSHOT_DIR = Path("data/drift")
MANIFEST = "snapshot.json"
LANGS = ("en", "zh")
# The pages whose prose the snapshots hold: the book as it stood before chapters 06-09.
PAGES = ("index", "01-minimal-gpt", "02-modern-parts", "03-llama2", "04-data", "05-evaluation", "appendix-rope-math")
LICENCE = "MIT (pyproject.toml's license field; the repository has no LICENSE file)"

# ---------------------------------------------------------------- the snapshots: prose only, frozen

FENCE = re.compile(r"^(`{3,}|~{3,})")
INLINE = [  # (pattern, replacement), applied in order to each line of prose
    (re.compile(r"\{\{<.*?>\}\}"), ""),                # shortcodes: {{< var ... >}}, {{< include ... >}}
    (re.compile(r"!\[[^\]]*\]\([^)]*\)(\{[^}]*\})?"), ""),  # figures
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),     # links keep their text
    (re.compile(r"\[([^\]]*)\]\{[^}]*\}"), r"\1"),     # spans such as [1.7]{.checked var=...} keep theirs
    (re.compile(r"\{[#.][^}]*\}"), ""),                # attributes: {#sec-...}, {.unnumbered}
    (re.compile(r"`[^`]*`"), ""),                      # inline code
    (re.compile(r"\$\$.*?\$\$|\$[^$]+\$"), ""),        # math
    (re.compile(r"@(sec|fig|tbl|eq)-[\w-]+"), ""),     # cross-references
    (re.compile(r"<[^>]+>"), ""),                      # HTML tags and comments on one line
    (re.compile(r"\*\*|\*|^#+\s*|^>\s*|^\s*[-+]\s+"), ""),  # emphasis, heading marks, quotes, bullets
]


def prose(qmd: str) -> str:
    """The running text of a chapter: without front matter, code blocks and cells, fenced divs, tables,
    shortcodes, inline code, math, figures and markup; paragraphs separated by one blank line."""
    lines = qmd.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), len(lines) - 1)
        lines = lines[end + 1:]
    kept, fence, in_math = [], None, False
    for line in lines:
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = None
            continue
        match = FENCE.match(stripped)
        if match:
            fence = match.group(1)
            continue
        if stripped.startswith("$$"):  # display math on its own lines
            in_math = not (in_math or stripped.endswith("$$") and len(stripped) > 2)
            continue
        if in_math or stripped.startswith((":::", "|", "%%")):
            continue
        for pattern, replacement in INLINE:
            line = pattern.sub(replacement, line)
        kept.append(" ".join(line.split()))
    text = "\n".join(kept)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def book_prose(root: Path, lang: str) -> str:
    """The prose of PAGES in one edition, in order."""
    return "\n".join(prose((root / "book" / lang / f"{page}.qmd").read_text(encoding="utf-8")) for page in PAGES)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def snapshot(root: Path, out_dir: Path | None = None) -> dict:
    """Write out_dir/{en,zh}.txt from the book's pages as they are now, with snapshot.json and README.md
    saying where they came from. Nothing in the pipeline calls this: the committed snapshot changes only when
    someone runs `python -m llmparts.driftlab snapshot` (the tests call it on a copy)."""
    root = Path(root)
    out_dir = Path(out_dir or root / SNAPSHOT_DIR)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "book"], cwd=root, capture_output=True,
                                text=True).stdout.strip())
    manifest = {"commit": commit or "unknown", "book_dirty": dirty, "date": datetime.date.today().isoformat(),
                "pages": list(PAGES), "licence": LICENCE, "files": {}}
    for lang in LANGS:
        text = book_prose(root, lang)
        write_text(out_dir / f"{lang}.txt", text)
        manifest["files"][lang] = {"file": f"{lang}.txt", "chars": len(text), "sha256": sha256_text(text)}
    write_text(out_dir / MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    write_text(out_dir / "README.md", readme(manifest))
    return manifest


def readme(manifest: dict) -> str:
    rows = "\n".join(f"| `{f['file']}` | {f['chars']} | `{f['sha256']}` |" for f in manifest["files"].values())
    dirty = " (with uncommitted edits under book/)" if manifest["book_dirty"] else ""
    return f"""# Drift domains: a frozen snapshot of this book's prose

Chapter 08 (drift) needs text that is not Shakespeare: modern English and Chinese. These files are the
running prose of the book's own pages, taken once and frozen, so that chapter 08's results do not go stale
whenever a chapter is edited.

- Origin: `book/en/*.qmd` and `book/zh/*.qmd` of this repository, pages {", ".join(manifest["pages"])};
  commit `{manifest["commit"]}`{dirty}, taken on {manifest["date"]}.
- What was kept: prose only. Front matter, code blocks and cells, tables, fenced divs' markers, shortcodes,
  inline code, math, figures and cross-references were removed (`llmparts.driftlab.prose`).
- Licence: {manifest["licence"]}; the text is the book's own.

| file | characters | sha256 |
|---|---|---|
{rows}

`llmparts.driftlab.load_snapshot` refuses a file whose sha256 differs from `snapshot.json`. Nothing
rewrites these files automatically; to take a new snapshot (and so change chapter 08's numbers), run
`python -m llmparts.driftlab snapshot` and then `llmparts reproduce --only drift`.
"""


def manifest(root: Path = Path(".")) -> dict:
    path = Path(root) / SNAPSHOT_DIR / MANIFEST
    if not path.is_file():
        raise DataError(f"{path} is missing: take the snapshot with `python -m llmparts.driftlab snapshot`")
    return json.loads(path.read_text(encoding="utf-8"))


def load_snapshot(lang: str, root: Path = Path(".")) -> str:
    """The frozen text of one language, checked against its sha256 in snapshot.json."""
    entry = manifest(root)["files"][lang]
    path = Path(root) / SNAPSHOT_DIR / entry["file"]
    text = path.read_text(encoding="utf-8")
    if sha256_text(text) != entry["sha256"]:
        raise DataError(f"{path} has sha256 {sha256_text(text)}, expected {entry['sha256']} ({MANIFEST}): "
                        f"restore it from git, or take a new snapshot with `python -m llmparts.driftlab snapshot`")
    return text


# ---------------------------------------------------------------- the char model on other text

def in_vocab(text: str, chars: str) -> tuple[str, int]:
    """text without the characters outside the vocabulary chars, and how many were dropped."""
    allowed = set(chars)
    kept = "".join(c for c in text if c in allowed)
    return kept, len(text) - len(kept)


def tokenizer_stats(text: str, chars: str, bpe: BPETokenizer) -> dict:
    """What each tokenizer makes of a text: the char vocabulary's unknown characters, UTF-8 bytes per
    character, and BPE tokens per character."""
    distinct = set(text)
    unknown = distinct - set(chars)
    return {"chars": len(text), "distinct": len(distinct), "unknown_distinct": len(unknown),
            "unknown_share": sum(c in unknown for c in text) / len(text),
            "bytes_per_char": len(text.encode("utf-8")) / len(text),
            "bpe_tokens_per_char": len(bpe.encode(text)) / len(text)}


def windows(ids: torch.Tensor, n: int, length: int, seed: int) -> torch.Tensor:
    """n distinct non-overlapping windows of length + 1 ids (inputs and targets), chosen at random."""
    chunks = ids[: len(ids) // (length + 1) * (length + 1)].view(-1, length + 1)
    if n > len(chunks):
        raise ValueError(f"n ({n}) must be at most the {len(chunks)} windows of {length + 1} in the text")
    pick = torch.randperm(len(chunks), generator=torch.Generator().manual_seed(seed))[:n]
    return chunks[pick]


@torch.no_grad()
def window_losses(model: GPT, chunks: torch.Tensor, batch: int = 256) -> np.ndarray:
    """Each window's mean cross-entropy (nats per character) of predicting its next characters."""
    model.eval()
    out = []
    for part in chunks.split(batch):
        logits, _ = model(part[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), part[:, 1:], reduction="none")
        out.append(loss.mean(dim=1))
    return torch.cat(out).numpy().astype(float)


def load_model(model_config: ModelConfig, state_dict: dict) -> GPT:
    model = GPT(model_config)
    model.load_state_dict(state_dict)
    return model


# ---------------------------------------------------------------- adaptation

def finetune(model: GPT, train_ids: torch.Tensor, eval_sets: dict, steps: int, eval_every: int, lr: float,
             batch_size: int, seq_len: int, seed: int, replay_ids: torch.Tensor | None = None,
             replay_rows: int = 0) -> list[dict]:
    """Continue training model on train_ids with AdamW at a constant lr (gradients clipped at 1), scoring it on
    every eval set (name -> fixed (x, y) batches) before the first step and every eval_every steps.

    With replay_ids, replay_rows of each batch's batch_size windows come from that (old) text instead:
    rehearsal, the simplest defence against forgetting. Returns one dict per evaluation,
    {"step": s, name: loss, ...}; the model is changed in place.
    """
    if not 0 <= replay_rows < batch_size or (replay_rows > 0) != (replay_ids is not None):
        raise ValueError(f"replay_rows ({replay_rows!r}) must be in [1, batch_size ({batch_size})) with replay_ids, "
                         f"and 0 without")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    curve = [{"step": 0, **{name: evaluate(model, batches) for name, batches in eval_sets.items()}}]
    model.train()
    for step in range(1, steps + 1):
        x, y = get_batch(train_ids, batch_size - replay_rows, seq_len, generator)
        if replay_rows:
            old_x, old_y = get_batch(replay_ids, replay_rows, seq_len, generator)
            x, y = torch.cat([x, old_x]), torch.cat([y, old_y])
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % eval_every == 0:
            curve.append({"step": step, **{name: evaluate(model, batches) for name, batches in eval_sets.items()}})
    return curve


# ---------------------------------------------------------------- command line

def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m llmparts.driftlab",
                            description="Take a new frozen snapshot of the book's prose for chapter 08 (drift).")
    sub = parser.add_subparsers(dest="command", required=True)
    take = sub.add_parser("snapshot", help=f"write {SNAPSHOT_DIR}/{{en,zh}}.txt, {MANIFEST} and README.md")
    take.add_argument("--root", default=".", help="the repository checkout (default: the current directory)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not (root / "book" / "en").is_dir():
        parser.error(f"--root ({args.root}) must be a checkout of this repository (it has no book/en/)")
    written = snapshot(root)
    for lang, entry in written["files"].items():
        print(f"{SNAPSHOT_DIR / entry['file']}: {entry['chars']} characters, sha256 {entry['sha256'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
