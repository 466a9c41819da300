"""The model a plan describes, with random weights and no download: `from_config` on the device in
the scenario's float dtype; for a quantized format (bitsandbytes nf4/int8, torchao fp8 weight-only
or dynamic, as `quant-kernel` says) the random model is saved once and loaded back through
`from_pretrained` with the quantization config, the path a user's checkpoint takes; torchao's NF4
(`nf4-kernel=torchao`) replaces the built model's linear weights in place, as torchtune does.
LoRA and QLoRA wrap it with peft.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from .plan import FLOAT_WEIGHTS, TORCHAO_FP8, Plan, act_dtype, torchao_nf4

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

# vramfit's projection names and the module names transformers gives them.
PROJECTIONS = {
    "q": "q_proj",
    "k": "k_proj",
    "v": "v_proj",
    "o": "o_proj",
    "gate": "gate_proj",
    "up": "up_proj",
    "down": "down_proj",
}

# LitGPT's adapter dropout, used when the scenario says its adapters apply dropout (peft's default
# is none).
LORA_DROPOUT = 0.05


def hf_config(plan: Plan):
    values = dict(plan.hf_config)
    return AutoConfig.for_model(values.pop("model_type"), **values)


def quantization_config(plan: Plan):
    s = plan.scenario
    compute = DTYPES[act_dtype(s)]
    if s["weights"] == "nf4":
        from transformers import BitsAndBytesConfig

        return BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=bool(s["double-quant"]),
            bnb_4bit_compute_dtype=compute,
        )
    if s["weights"] == "int8":
        from transformers import BitsAndBytesConfig

        return BitsAndBytesConfig(load_in_8bit=True)
    if s["weights"] == "fp8":
        import torchao.quantization
        from transformers import TorchAoConfig

        config = getattr(torchao.quantization, TORCHAO_FP8[s["quant-kernel"]])
        return TorchAoConfig(quant_type=config())
    raise ValueError(f"weights={s['weights']} has no quantizer in the kit")


def nf4_with_torchao(model) -> None:
    """torchtune's QLoRA base: every linear layer but the LM head keeps its weight as torchao's
    `NF4Tensor` (`to_nf4`'s 64-value blocks, their scales quantized per 256), whose matmul
    (`linear_nf4`) saves only the weight for the backward pass. The 16-bit weights it replaces are
    freed before the step's peak is reset."""
    try:
        from torchao.quantization import to_nf4
    except ImportError:  # older torchao keeps it under torchao.dtypes
        from torchao.dtypes import to_nf4

    head = model.get_output_embeddings()
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and module is not head:
            module.weight = torch.nn.Parameter(to_nf4(module.weight.detach()), requires_grad=False)


def random_checkpoint(plan: Plan, dtype: torch.dtype, cache: Path) -> Path:
    """A checkpoint of the random model, saved once per config and dtype under `cache`."""
    key = hashlib.sha256(json.dumps([plan.hf_config, str(dtype)], sort_keys=True).encode()).hexdigest()[:16]
    path = cache / key
    if not (path / "config.json").exists():
        model = AutoModelForCausalLM.from_config(hf_config(plan), dtype=dtype)
        model.save_pretrained(path)
        del model
    return path


def build(plan: Plan, device: torch.device, cache: Path):
    """The model on `device`, in training or evaluation mode as the scenario runs it."""
    s = plan.scenario
    attn = plan.attn_implementation
    if s["weights"] in FLOAT_WEIGHTS:
        with device:
            model = AutoModelForCausalLM.from_config(
                hf_config(plan), dtype=DTYPES[s["weights"]], attn_implementation=attn
            )
    elif torchao_nf4(s):
        with device:
            model = AutoModelForCausalLM.from_config(
                hf_config(plan), dtype=DTYPES[act_dtype(s)], attn_implementation=attn
            )
        nf4_with_torchao(model)
    else:
        checkpoint = random_checkpoint(plan, DTYPES[act_dtype(s)], cache)
        model = AutoModelForCausalLM.from_pretrained(
            checkpoint,
            quantization_config=quantization_config(plan),
            dtype=DTYPES[act_dtype(s)],
            attn_implementation=attn,
            device_map=str(device),
        )
    if s["mode"] in ("lora", "qlora"):
        model = with_adapters(model, s)
    if s["mode"] == "inference":
        model.eval()
    else:
        model.train()
        if s["checkpointing"] == "full":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            checkpoint_every_kth_layer(model, s.get("checkpoint-every", 1))
    return model


def checkpointed_layers(model) -> int | None:
    """The decoder layers that run under checkpointing in training; None where transformers predates
    per-layer flags (`GradientCheckpointingLayer`)."""
    try:
        from transformers.modeling_layers import GradientCheckpointingLayer
    except ImportError:
        return None
    return sum(
        1 for m in model.modules() if isinstance(m, GradientCheckpointingLayer) and m.gradient_checkpointing
    )


def checkpoint_every_kth_layer(model, every: int) -> None:
    """Leave checkpointing on for layers k, 2k, … only, counted from 1 as vramfit's `checkpoint-every`
    and torchtitan count them (⌊L/k⌋ layers). transformers' own `every_n_layers` starts from the
    first layer (⌈L/k⌉), so the kit sets each `GradientCheckpointingLayer`'s flag itself."""
    if every <= 1:
        return
    from transformers.modeling_layers import GradientCheckpointingLayer

    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    for count, layer in enumerate(layers, start=1):
        layer.gradient_checkpointing = count % every == 0


def lora_modules(targets: str) -> list[str]:
    names = PROJECTIONS.keys() if targets == "all" else targets.split(",")
    return [PROJECTIONS[n] for n in names]


def with_adapters(model, s: dict):
    """peft's LoRA on the scenario's projections, with peft's defaults otherwise (its adapters are
    fp32 on a 16-bit model: `autocast_adapter_dtype`)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=s["lora-rank"],
        lora_alpha=2 * s["lora-rank"],
        target_modules=lora_modules(s["lora-targets"]),
        lora_dropout=LORA_DROPOUT if s["lora-dropout"] else 0.0,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)
