"""Runs one plan in this process and writes the kit's part of its measurement (`workload`):
inference is `generate` (the prompt's prefill, then decoding to `seq` tokens with the scenario's
cache class); training is `TRAINING_STEPS` optimizer steps of forward, loss, backward, step and
`zero_grad(set_to_none=True)`, so the second step's backward runs with the optimizer state the
first step created. The build's transient blocks are returned (`empty_cache`) before anything is
measured, so the peaks cover the step with the model resident. They are read phase by phase
([`Phases`]), and the step's peak is the largest phase's.

On a machine without CUDA the step still runs (on the CPU), and the peaks are `null`: the CPU
has no figure that means what `max_memory_allocated` means.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from .build import DTYPES, build, checkpointed_layers
from .plan import Plan, act_dtype, trainable_dtype
from .provenance import provenance

TRAINING_STEPS = 2
# The step sleeps this long before exiting so that `vramfit run`'s sampler (every 50 ms) reads
# the process at its high-water mark: the caching allocator keeps what it reserved until then.
SETTLE_SECONDS = 0.3


class Phases:
    """torch's peaks phase by phase: each phase resets them as it starts, so the step's peak is the
    largest phase's, and the phase that holds it says which of the engine's summed terms were alive
    at once: the forward pass and loss (every layer's saved activations, the logits and the
    cross-entropy chain), the backward pass (the layer being differentiated, the gradients as they
    accumulate) or the optimizer step (every gradient and the update's temporaries)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.measured: list[dict] = []

    @contextmanager
    def phase(self, name: str, step: int | None = None):
        started_with = None
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            started_with = torch.cuda.memory_allocated()
        yield
        if self.cuda:
            torch.cuda.synchronize()
        self.measured.append({
            "phase": name,
            "step": step,
            "allocated_at_start_bytes": started_with,
            "max_memory_allocated_bytes": torch.cuda.max_memory_allocated() if self.cuda else None,
            "max_memory_reserved_bytes": torch.cuda.max_memory_reserved() if self.cuda else None,
        })

    def peak(self, figure: str) -> int | None:
        """The step's peak of one figure: the largest phase's, `None` without CUDA."""
        values = [p[figure] for p in self.measured if p[figure] is not None]
        return max(values) if values else None


def batch_tokens(s: dict, vocab: int, device: torch.device, tokens: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (s["batch"], tokens), generator=generator)
    return ids.to(device)


def run_inference(model, s: dict, device: torch.device, phases: Phases) -> dict:
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
    with phases.phase("generate"), torch.no_grad():
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


def run_training(model, s: dict, device: torch.device, phases: Phases) -> dict:
    """As transformers' Trainer runs a step: only the loss outlives the forward pass, so the logits
    are freed before the backward pass starts."""
    params = [p for p in model.parameters() if p.requires_grad]
    with phases.phase("setup"):
        optimizer = optimizer_for(s, params)
        ids = batch_tokens(s, model.config.vocab_size, device, s["seq"])
    autocast = s["weights"] == "fp32" and act_dtype(s) != "fp32"
    for step in range(1, TRAINING_STEPS + 1):
        with phases.phase("forward", step), torch.autocast(device.type, dtype=DTYPES[act_dtype(s)], enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        with phases.phase("backward", step):
            loss.backward()
        with phases.phase("optimizer", step):
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
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    weights_allocated = torch.cuda.memory_allocated() if cuda else None
    s = plan.scenario
    phases = Phases(device)
    run = run_inference if s["mode"] == "inference" else run_training
    ran = run(model, s, device, phases)
    peaks = {
        "max_memory_allocated_bytes": phases.peak("max_memory_allocated_bytes"),
        "max_memory_reserved_bytes": phases.peak("max_memory_reserved_bytes"),
        "allocated_after_build_bytes": weights_allocated,
        # Allocations that failed, freed the cache and were tried again: a reserved peak with
        # retries is capped by the GPU, not set by the step.
        "num_alloc_retries": torch.cuda.memory_stats().get("num_alloc_retries", 0) if cuda else None,
        "phases": phases.measured,
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
