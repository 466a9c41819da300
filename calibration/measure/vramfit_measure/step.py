"""Runs one plan in this process and writes the kit's part of its measurement (`workload`):
inference is `generate` (the prompt's prefill, then decoding to `seq` tokens with the scenario's
cache class); training is `TRAINING_STEPS` optimizer steps of forward, loss, backward, step and
`zero_grad(set_to_none=True)`, so the second step's backward runs with the optimizer state the
first step created. torch's peaks are reset after the model is built and the build's transient
blocks are returned (`empty_cache`), so they cover the step with the model resident.

On a machine without CUDA the step still runs (on the CPU), and the peaks are `null`: the CPU
has no figure that means what `max_memory_allocated` means.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from .build import DTYPES, build, checkpointed_layers
from .plan import Plan, act_dtype, trainable_dtype
from .provenance import provenance

TRAINING_STEPS = 2
# The step sleeps this long before exiting so that `vramfit run`'s sampler (every 50 ms) reads
# the process at its high-water mark: the caching allocator keeps what it reserved until then.
SETTLE_SECONDS = 0.3


def batch_tokens(s: dict, vocab: int, device: torch.device, tokens: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (s["batch"], tokens), generator=generator)
    return ids.to(device)


def run_inference(model, s: dict, device: torch.device) -> dict:
    """`generate` from a `prompt`-token prompt (all of `seq` when unset) to `seq` tokens."""
    prompt = s["prompt"] or s["seq"]
    new_tokens = max(1, s["seq"] - prompt)
    ids = batch_tokens(s, model.config.vocab_size, device, prompt)
    kwargs = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    described = {"kind": "generate", "prompt_tokens": prompt, "new_tokens": new_tokens}
    if s["cache"] == "static":
        if s["max-cache-len"]:
            from transformers import StaticCache

            kwargs["past_key_values"] = StaticCache(config=model.config, max_cache_len=s["max-cache-len"])
        else:
            kwargs["cache_implementation"] = "static"
    described["cache"] = s["cache"]
    with torch.no_grad():
        model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
    return described


def optimizer_for(s: dict, params):
    name = s["optimizer"]
    if name in ("adamw", "adamw-bf16"):
        return torch.optim.AdamW(params, lr=1e-5)
    if name == "adamw-8bit":
        import bitsandbytes as bnb

        return bnb.optim.AdamW8bit(params, lr=1e-5)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-5)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-5, momentum=0.9)
    if name == "none":
        return None
    raise ValueError(f"optimizer {name} is not in the kit")


def run_training(model, s: dict, device: torch.device) -> dict:
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = optimizer_for(s, params)
    ids = batch_tokens(s, model.config.vocab_size, device, s["seq"])
    autocast = s["weights"] == "fp32" and act_dtype(s) != "fp32"
    for _ in range(TRAINING_STEPS):
        with torch.autocast(device.type, dtype=DTYPES[act_dtype(s)], enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        else:
            model.zero_grad(set_to_none=True)
    return {
        "kind": "train",
        "steps": TRAINING_STEPS,
        "optimizer": type(optimizer).__module__ + "." + type(optimizer).__name__ if optimizer else None,
        "trained_dtype": trainable_dtype(s),
        "trainable_params": sum(p.numel() for p in params),
        "autocast": act_dtype(s) if autocast else None,
        "loss": float(loss.detach().float()),
    }


def run_step(plan: Plan, cache: Path) -> dict:
    """Builds and runs the plan; returns the `workload` object of its measurement."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    started = time.monotonic()
    model = build(plan, device, cache)
    built_s = time.monotonic() - started
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        weights_allocated = torch.cuda.memory_allocated()
    else:
        weights_allocated = None
    s = plan.scenario
    ran = run_inference(model, s, device) if s["mode"] == "inference" else run_training(model, s, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
        peaks = {
            "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(),
            "max_memory_reserved_bytes": torch.cuda.max_memory_reserved(),
            "allocated_after_build_bytes": weights_allocated,
        }
    else:
        peaks = {
            "max_memory_allocated_bytes": None,
            "max_memory_reserved_bytes": None,
            "allocated_after_build_bytes": None,
        }
    return {
        "kit": "calibration/measure",
        "id": plan.id,
        "scenario": plan.scenario,
        "model": {
            "config_file": plan.config_file,
            "layers": plan.layers,
            "published_layers": plan.published_layers,
            "few_layers": plan.few_layers,
            "hf_config": plan.hf_config,
            "attn_implementation": plan.attn_implementation,
            "class": type(model).__name__,
            "params": sum(p.numel() for p in model.parameters()),
            "checkpointed_layers": checkpointed_layers(model),
        },
        "step": ran,
        "device": device.type,
        "torch_peaks": peaks,
        "timings_s": {"build": round(built_s, 3), "step": round(time.monotonic() - started - built_s, 3)},
        "provenance": provenance(),
        "notes": plan.notes,
    }


def main(plan_file: Path, result_file: Path, cache: Path) -> None:
    plan = Plan.from_json(json.loads(plan_file.read_text()))
    workload = run_step(plan, cache)
    result_file.write_text(json.dumps(workload, indent=1) + "\n")
    time.sleep(SETTLE_SECONDS)
