"""The campaign's scenarios, written to matrix.jsonl by `measure.py matrix` (a test keeps the file
and this code in step). Every model is a published config.json from the engine's fixtures; a
large one is cut to its first few layers (`layers`), which the row's id and note say, where what
is measured is per layer (the KV cache, activations, optimizer state per parameter) and the
embedding and head stay whole.

Sizes are chosen so every scenario fits one 80 GB H100 with room to spare: the campaign
measures the estimate's error, not where a card runs out.
"""

from __future__ import annotations

import json
from pathlib import Path

# (short name, fixture, layers to keep or None for all): dense, mixture of experts, and
# sliding-window models (Gemma 2 alternates 4096-token windows, Gemma 3 has five 512-token
# window layers per global one, Mistral 7B v0.1 windows every layer at 4096).
QWEN3_06B = ("qwen3-0.6b", "qwen3-0.6b.json", None)
LLAMA32_1B = ("llama-3.2-1b", "llama-3.2-1b-instruct.json", None)
LLAMA31_8B = ("llama-3.1-8b", "llama-3.1-8b.json", 4)
QWEN3_8B = ("qwen3-8b", "qwen3-8b.json", 4)
QWEN3_30B_A3B = ("qwen3-30b-a3b", "qwen3-30b-a3b.json", 4)
QWEN3_30B_A3B_L2 = ("qwen3-30b-a3b", "qwen3-30b-a3b.json", 2)
MIXTRAL = ("mixtral-8x7b", "mixtral-8x7b-v0.1.json", 2)
MIXTRAL_L1 = ("mixtral-8x7b", "mixtral-8x7b-v0.1.json", 1)
GEMMA2_2B = ("gemma-2-2b", "gemma-2-2b-it.json", None)
GEMMA3_1B = ("gemma-3-1b", "gemma-3-1b-it.mlc-reserialized.json", None)
MISTRAL_7B = ("mistral-7b", "mistral-7b-v0.1.json", 4)

DENSE = [QWEN3_06B, LLAMA32_1B, LLAMA31_8B, QWEN3_8B]
MOE = [QWEN3_30B_A3B, MIXTRAL]
SLIDING = [GEMMA2_2B, GEMMA3_1B, MISTRAL_7B]

# Tokens `generate` adds after the prompt: enough decode steps for the cache to grow and the
# decode-time working set to show, few enough to keep a scenario near a second of GPU time.
NEW_TOKENS = 32


# How each key is spelled in a row's id.
ID_KEYS = {
    "weights": "", "act-dtype": "act-", "master-weights": "master-", "optimizer": "", "batch": "b",
    "prompt": "p", "seq": "s", "cache": "", "max-cache-len": "max", "checkpointing": "ckpt-", "checkpoint-every": "every",
    "lora-targets": "", "lora-rank": "r", "lora-dropout": "dropout-", "double-quant": "dq-",
    "quant-kernel": "", "nf4-kernel": "",
}


def id_value(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value).replace(",", "")


def line(model, scenario: dict, attention: str = "sdpa", note: str | None = None) -> dict:
    name, config, layers = model
    shape = f"{name}-L{layers}" if layers else name
    keys = "-".join(ID_KEYS[k] + id_value(v) for k, v in scenario.items() if k != "mode")
    row = {"id": f"{scenario['mode']}-{shape}-{attention}-{keys}", "config": config}
    if layers:
        row["layers"] = layers
        row["note"] = f"the first {layers} layers of {config}: per-layer terms measured, embedding and head whole"
    if note:
        row["note"] = f"{row['note']}; {note}" if "note" in row else note
    row["attention"] = attention
    row["scenario"] = scenario
    return row


def inference(batch: int, prompt: int, **more) -> dict:
    return {"mode": "inference", "weights": "bf16", "batch": batch, "prompt": prompt, "seq": prompt + NEW_TOKENS, **more}


def inference_rows() -> list[dict]:
    rows = []
    for model in DENSE + MOE + SLIDING:
        for batch in (1, 16):
            for prompt in (512, 2048):
                rows.append(line(model, inference(batch, prompt)))
    for model in SLIDING:
        for batch in (1, 4):
            rows.append(line(model, inference(batch, 8192), note="a prompt longer than every window"))
    for model in (QWEN3_06B, LLAMA31_8B, QWEN3_30B_A3B, GEMMA2_2B, GEMMA3_1B):
        for batch in (1, 8):
            rows.append(line(model, inference(batch, 2048, cache="static")))
    for model in (QWEN3_8B, GEMMA3_1B):
        rows.append(line(model, inference(4, 1024, cache="static", **{"max-cache-len": 4096})))
    for model in (QWEN3_06B, LLAMA31_8B, GEMMA2_2B, MIXTRAL):
        for batch in (1, 4):
            rows.append(line(model, inference(batch, 2048), attention="eager"))
    for weights in ("fp32", "fp16"):
        for model in (QWEN3_06B, LLAMA31_8B):
            for batch in (1, 8):
                rows.append(line(model, inference(batch, 1024, weights=weights)))
    # fp8 through torchao, weight-only (each weight dequantized per matmul) and dynamic (each
    # input quantized): the two kernels no published run measures without blocks left over from
    # quantizing on the GPU.
    quantized = [{"weights": "int8"}, {"weights": "nf4"}]
    quantized += [{"weights": "fp8", "quant-kernel": kernel} for kernel in ("torchao-wo", "torchao-dq")]
    for weights in quantized:
        for model in (QWEN3_06B, LLAMA31_8B, QWEN3_8B):
            for batch in (1, 8):
                rows.append(line(model, inference(batch, 1024, **weights)))
    for model in (LLAMA31_8B, GEMMA2_2B, QWEN3_30B_A3B):
        for batch in (1, 8):
            rows.append(line(model, inference(batch, 2048), attention="flash"))
    return rows


# Full fine-tuning as plain PyTorch runs it: pure fp32; fp32 weights under bf16 autocast (the
# HF Trainer's bf16=True); pure bf16 with torch's AdamW (bf16 moments, LitGPT's bf16-true); bf16
# with bitsandbytes' 8-bit AdamW.
FULL_RECIPES = {
    "fp32": {"weights": "fp32", "optimizer": "adamw"},
    "autocast": {"weights": "fp32", "act-dtype": "bf16", "optimizer": "adamw"},
    "bf16": {"weights": "bf16", "master-weights": False, "optimizer": "adamw-bf16"},
    "8bit": {"weights": "bf16", "master-weights": False, "optimizer": "adamw-8bit"},
}


def train(mode: str, batch: int, seq: int, checkpointing: str, **more) -> dict:
    return {"mode": mode, "batch": batch, "seq": seq, "checkpointing": checkpointing, **more}


def full_rows() -> list[dict]:
    rows = []
    for model in (QWEN3_06B, QWEN3_8B, MISTRAL_7B):
        for recipe in FULL_RECIPES.values():
            for checkpointing in ("none", "full"):
                rows.append(line(model, train("full", 2, 1024, checkpointing, **recipe)))
    for model in (QWEN3_06B, QWEN3_8B):
        for batch, seq in ((1, 512), (1, 2048), (1, 4096), (4, 2048), (8, 1024)):
            for checkpointing in ("none", "full"):
                rows.append(line(model, train("full", batch, seq, checkpointing, **FULL_RECIPES["bf16"])))
        for checkpointing in ("none", "full"):
            rows.append(line(model, train("full", 2, 1024, checkpointing, **FULL_RECIPES["bf16"]), attention="eager"))
        rows.append(line(model, train("full", 2, 1024, "none", weights="bf16", **{"master-weights": False}, optimizer="sgd")))
        # Checkpointing only every k-th layer (vramfit's `checkpoint-every`), which no published run measures.
        for every in (2, 4):
            rows.append(line(model, train("full", 1, 4096, "full", **{"checkpoint-every": every}, **FULL_RECIPES["bf16"])))
    for model in (LLAMA32_1B, GEMMA3_1B, QWEN3_30B_A3B_L2, MIXTRAL_L1):
        for checkpointing in ("none", "full"):
            rows.append(line(model, train("full", 2, 1024, checkpointing, **FULL_RECIPES["bf16"])))
    return rows


def lora(targets: str, rank: int, **more) -> dict:
    return {"lora-targets": targets, "lora-rank": rank, "optimizer": "adamw", **more}


def lora_rows() -> list[dict]:
    rows = []
    for model in (QWEN3_06B, LLAMA31_8B, QWEN3_8B, GEMMA2_2B, MISTRAL_7B):
        for targets, rank in (("q,v", 16), ("all", 16), ("q,v", 64)):
            for checkpointing in ("none", "full"):
                rows.append(line(model, train("lora", 2, 1024, checkpointing, weights="bf16", **lora(targets, rank))))
    for model in MOE:
        for checkpointing in ("none", "full"):
            rows.append(line(model, train("lora", 2, 1024, checkpointing, weights="bf16", **lora("q,v", 16))))
    for batch, seq in ((1, 512), (1, 4096), (4, 2048), (8, 1024)):
        for checkpointing in ("none", "full"):
            rows.append(line(QWEN3_8B, train("lora", batch, seq, checkpointing, weights="bf16", **lora("q,v", 16))))
    for model in (QWEN3_8B, GEMMA2_2B):
        rows.append(line(model, train("lora", 2, 1024, "none", weights="bf16", **lora("q,v", 16)), attention="eager"))
    rows.append(line(QWEN3_8B, train("lora", 2, 1024, "none", weights="bf16", **lora("all", 16, **{"lora-dropout": True}))))
    return rows


def qlora_rows() -> list[dict]:
    rows = []
    for model in (LLAMA31_8B, QWEN3_8B, MISTRAL_7B, GEMMA2_2B):
        for targets in ("q,v", "all"):
            for checkpointing in ("none", "full"):
                rows.append(line(model, train("qlora", 2, 1024, checkpointing, weights="nf4", **lora(targets, 16))))
    for model in (LLAMA31_8B, QWEN3_8B):
        rows.append(line(model, train("qlora", 2, 1024, "full", weights="nf4", **lora("all", 16, **{"double-quant": True}))))
    for batch, seq in ((1, 4096), (8, 1024)):
        for checkpointing in ("none", "full"):
            rows.append(line(LLAMA31_8B, train("qlora", batch, seq, checkpointing, weights="nf4", **lora("q,v", 16))))
    # torchao's NF4 (torchtune's QLoRA), which one published run measures.
    torchao = {"double-quant": True, "nf4-kernel": "torchao"}
    for model in (LLAMA31_8B, QWEN3_8B):
        for checkpointing in ("none", "full"):
            rows.append(line(model, train("qlora", 2, 1024, checkpointing, weights="nf4", **lora("all", 16, **torchao))))
    return rows


def matrix() -> list[dict]:
    return inference_rows() + full_rows() + lora_rows() + qlora_rows()


def render() -> str:
    header = "# vramfit measurement matrix: written by `measure.py matrix` from vramfit_measure/matrix.py.\n"
    return header + "".join(json.dumps(row) + "\n" for row in matrix())


def write_matrix(path: Path) -> int:
    path.write_text(render())
    return len(matrix())
