"""How fast the book's browser cells are, in headless Chromium with the offline Pyodide of build/pyodide/.

    python scripts/bench_browser.py            # cold and warm start, first figure, forward pass, chars/s

Reports: time from page load to "ready" (Pyodide + numpy + the NumPy port's files), cold (fresh browser
profile) and warm (HTTP cache filled); time to the first matplotlib figure (its first import included);
one forward pass of the char model over a full block; generated characters per second with the KV cache.
The worker gets the files book/quarto/_quarto.yml lists under pyodide.files, served from a copy of the site's layout.
Goals (issue 4): ready < 7 s, >= 100 chars/s. Uses results/weights/char_llama.npz when `make reproduce`
has written it, else a random model of the same shape (speed does not depend on the weights' values).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from browser_site import CHROMIUM, CHROMIUM_FLAGS, ROOT, Site, lay_out

PAGE = """---
lang: en
pyodide:
  base-url: pyodide/
  timeout: 120
  files: FILES
---

```{pyodide}
import matplotlib.pyplot as plt
plt.plot([0, 1, 4, 9]);
```

```{pyodide}
import json, time
import numpy as np
from llmparts.numpy_model import NumpyGPT, CharTokenizer
model, tok = NumpyGPT.from_npz("char_llama.npz"), CharTokenizer.from_npz("char_llama.npz")
block = model.config.block_size
idx = np.array([tok.encode("ROMEO:\\n" * block)[:block]])
model.forward(idx)  # warm-up
forward_ms = []
for _ in range(5):
    t0 = time.perf_counter(); model.forward(idx); forward_ms.append(1000 * (time.perf_counter() - t0))
prompt = np.array([tok.encode("ROMEO:")])
new = block - prompt.shape[1]
rates = []
for seed in range(3):
    t0 = time.perf_counter()
    model.generate(prompt, new, temperature=1.0, top_k=10, rng=np.random.default_rng(seed))
    rates.append(new / (time.perf_counter() - t0))
print(json.dumps({"block_size": block, "params": model.num_params(), "forward_ms": sorted(forward_ms)[2],
                  "new_chars": new, "chars_per_s": sorted(rates)[1]}))
```
"""


def page_markdown() -> str:
    files = yaml.safe_load((ROOT / "book" / "quarto" / "_quarto.yml").read_text(encoding="utf-8"))["pyodide"]["files"]
    return PAGE.replace("FILES", json.dumps(files))


def measure(context, url: str) -> dict:
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector('.pyodide-page-bar[data-state="ready"]', timeout=120_000)
    ready_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    page.locator("#pyodide-cell-1 button.pyodide-run").click()
    page.wait_for_selector("#pyodide-cell-1 img.pyodide-figure", timeout=120_000)
    figure_s = time.perf_counter() - t0
    page.locator("#pyodide-cell-2 button.pyodide-run").click()
    page.wait_for_selector('#pyodide-cell-2[data-runs="1"]', timeout=300_000)
    errors = page.locator(".pyodide-error").all_inner_texts()
    if errors:
        raise SystemExit("bench cell failed:\n" + "\n".join(errors))
    model = json.loads(page.locator("#pyodide-cell-2 .pyodide-stdout").inner_text())
    page.close()
    return {"ready_s": ready_s, "first_figure_s": figure_s, **model}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        site, profile = Path(tmp) / "site", Path(tmp) / "profile"
        site.mkdir()
        weights = lay_out(site)
        served = Site(site)
        url = served.page("bench", page_markdown())
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(str(profile), executable_path=args.chromium,
                                                            headless=True, args=CHROMIUM_FLAGS)
            cold = measure(context, url)
            warm = measure(context, url)
            context.close()
        served.shutdown()
    version = re.search(r"Chromium [\d.]+", subprocess.run([args.chromium, "--version"], capture_output=True,
                                                           text=True).stdout)
    report = {"chromium": version.group(0) if version else "?", "weights": weights, "cold": cold, "warm": warm}
    print(f"browser bench ({report['chromium']}, Pyodide 0.27.7 from 127.0.0.1, weights: {weights})")
    print(f"{'':22}{'cold':>10}{'warm':>10}   goal")
    print(f"{'ready (numpy) s':22}{cold['ready_s']:10.2f}{warm['ready_s']:10.2f}   < 7")
    print(f"{'first figure s':22}{cold['first_figure_s']:10.2f}{warm['first_figure_s']:10.2f}")
    print(f"{'forward, 1x' + str(cold['block_size']) + ' ms':22}{cold['forward_ms']:10.1f}{warm['forward_ms']:10.1f}")
    print(f"{'generate chars/s':22}{cold['chars_per_s']:10.0f}{warm['chars_per_s']:10.0f}   >= 100")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
