"""Chapter 06's serving paths on a CUDA device (CI has none, so they run only here, by hand).

    PYTHONPATH=src python3 scripts/check_cuda_serving.py [--device cuda] [--json OUT.json]

With the book's trained char model (results/weights/char_llama.npz), printing one line each and failing
(exit 1) on the first that does not hold:
1. batched greedy generation on the device gives the tokens the CPU gives (left padding, 4 prompts);
2. greedy speculative decoding on the device equals the device's own greedy generation (draft: int8 copy);
3. int8 and int4 weight-only quantization on the device give the CPU's validation loss within 1e-4;
4. the server's engine on the device answers 8 greedy requests with the CPU's tokens.
`--device cpu` runs the same script on the CPU (a check of the script itself).
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from llmparts import batching, quantize, serve, speculative
from llmparts.data import fixed_batches, load_dataset
from llmparts.export import from_npz

PROMPTS = ["ROMEO:\n", "First Citizen:\nWe are", "O", "KING RICHARD III:\nNow is"]


def check(name: str, ok: bool, detail: str, results: dict):
    results[name] = {"ok": bool(ok), "detail": detail}
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    if not ok:
        raise SystemExit(1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("check_cuda_serving: no CUDA device here (pass --device cpu to check the script)")
    results: dict = {"device": args.device, "torch": torch.__version__}
    cpu_model, chars = from_npz("results/weights/char_llama.npz")
    model = from_npz("results/weights/char_llama.npz")[0].to(args.device)
    prompts = [[chars.index(c) for c in text] for text in PROMPTS]

    on_cpu = batching.generate_batch(cpu_model, prompts, 30, temperature=0)
    on_device = batching.generate_batch(model, prompts, 30, temperature=0)
    same = sum(a == b for a, b in zip(on_cpu, on_device))
    check("batched greedy generation", same == len(prompts), f"{same}/{len(prompts)} sequences equal to the CPU's",
          results)

    idx = torch.tensor([prompts[0]], device=args.device)
    draft = quantize.quantize_model(model, bits=8)
    out, stats = speculative.speculative_generate(model, draft, idx, 50, k=4)
    expected = model.generate(idx, 50, temperature=0)
    check("speculative decoding", torch.equal(out, expected),
          f"equal to greedy; acceptance {stats.acceptance_rate:.2f}, {stats.target_passes} target passes", results)

    batches = fixed_batches(load_dataset().val, 4, 16, 64)
    device_batches = [(x.to(args.device), y.to(args.device)) for x, y in batches]
    for bits in (8, 4):
        cpu_loss = quantize.val_loss(quantize.quantize_model(cpu_model, bits), batches)
        device_loss = quantize.val_loss(quantize.quantize_model(model, bits), device_batches)
        check(f"int{bits} quantized loss", abs(cpu_loss - device_loss) < 1e-4,
              f"cpu {cpu_loss:.5f}, {args.device} {device_loss:.5f}", results)

    engine = serve.Engine(model, n_slots=4)
    requests = [serve.Request(prompts[i % 4], 20, temperature=0) for i in range(8)]
    for r in requests:
        engine.submit(r)
    engine.start()
    deadline = time.time() + 120
    while any(r.finish_reason is None for r in requests) and time.time() < deadline:
        time.sleep(0.01)
    engine.stop()
    same = sum(r.prompt_ids + r.generated == batching.generate_batch(cpu_model, [r.prompt_ids], 20, temperature=0)[0]
               for r in requests)
    check("engine on the device", same == len(requests), f"{same}/{len(requests)} requests equal to the CPU's", results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
