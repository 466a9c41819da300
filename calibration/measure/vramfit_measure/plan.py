"""What to run for one scenario: the model's config.json (a published one from the engine's
fixtures, cut to its first N layers where the row measures per-layer terms), the attention
implementation, and the full vramfit scenario, which `vramfit estimate --config` reads from the
same cut config so the estimate and the measurement describe the same model.

A plan also says why the kit cannot run a scenario: a setting plain PyTorch, transformers and peft
have no reference implementation of (`unsupported`), or a package this machine lacks (`missing`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

KIT_DIR = Path(__file__).resolve().parent.parent
REPO = KIT_DIR.parent.parent
CONFIGS = REPO / "crates" / "engine" / "tests" / "fixtures" / "hf-configs"

# The kit's attention names: transformers' `attn_implementation` and vramfit's `attention` value
# (vramfit's `flash` is "FlashAttention or SDPA: no scores kept").
ATTENTION = {
    "eager": ("eager", "eager"),
    "sdpa": ("sdpa", "flash"),
    "flash": ("flash_attention_2", "flash"),
}

# The scenario keys that describe the model's shape. A scenario export given with a config.json
# must have the values vramfit reads from that config, or the two would not be the same model.
SHAPE_KEYS = (
    "layers", "hidden", "heads", "kv-heads", "head-dim", "ffn", "vocab", "tied", "gated",
    "experts", "experts-per-token", "expert-ffn", "shared-ffn", "dense-layers", "q-lora-rank",
    "kv-lora-rank", "rope-head-dim", "v-head-dim", "sliding-window", "sliding-layers",
    "vision-layers", "recurrent-layers", "no-attention-layers", "no-mlp-layers", "mtp-layers",
)

FLOAT_WEIGHTS = ("fp32", "fp16", "bf16")

# The package each weight format or optimizer needs beyond torch, transformers and peft. NF4 is
# bitsandbytes' unless `nf4-kernel` says torchao (torchtune's QLoRA).
NEEDS_PACKAGE = {
    ("weights", "nf4"): "bitsandbytes",
    ("weights", "int8"): "bitsandbytes",
    ("weights", "fp8"): "torchao",
    ("nf4-kernel", "torchao"): "torchao",
    ("optimizer", "adamw-8bit"): "bitsandbytes",
    ("attention-kernel", "flash"): "flash_attn",
}


def torchao_nf4(s: dict) -> bool:
    """Whether the scenario's NF4 weights are torchao's `NF4Tensor` rather than bitsandbytes'."""
    return s["weights"] == "nf4" and s.get("nf4-kernel") == "torchao"


class PlanError(Exception):
    """A matrix line or export that cannot be planned: the message says what to change."""


@dataclass
class Plan:
    id: str
    # The full scenario as `vramfit estimate --json` writes it (every key).
    scenario: dict
    # The config.json the model is built from (its text part, cut to `layers`).
    hf_config: dict
    # The published config.json it was cut from, relative to the repository.
    config_file: str
    layers: int
    published_layers: int
    # The kit's attention name: eager, sdpa or flash.
    attention: str
    notes: list[str] = field(default_factory=list)

    @property
    def few_layers(self) -> bool:
        return self.layers < self.published_layers

    @property
    def attn_implementation(self) -> str:
        return ATTENTION[self.attention][0]

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(value: dict) -> "Plan":
        return Plan(**value)


def vramfit_bin() -> str:
    """The `vramfit` CLI: $VRAMFIT_BIN, else on PATH, else this checkout's release or debug build."""
    explicit = os.environ.get("VRAMFIT_BIN")
    if explicit:
        return explicit
    found = shutil.which("vramfit")
    if found:
        return found
    for profile in ("release", "debug"):
        built = REPO / "target" / profile / "vramfit"
        if built.exists():
            return str(built)
    raise PlanError(
        "no vramfit CLI: set VRAMFIT_BIN, put vramfit on PATH, or `cargo build --release -p vramfit-cli`"
    )


def text_config(config: dict) -> dict:
    """The language model's part of a config.json: `text_config` with its own model_type where the
    file describes a multimodal model, the file itself otherwise. The kit measures text models."""
    text = config.get("text_config")
    if isinstance(text, dict) and "model_type" in text:
        return dict(text)
    return dict(config)


def cut_config(config: dict, layers: int) -> dict:
    """The config with only its first `layers` decoder layers. Every per-layer list (one entry per
    layer: `layer_types`, `no_rope_layers`, …) is cut to match, and layer-index lists
    (`mlp_only_layers`) keep the indices that remain."""
    published = config["num_hidden_layers"]
    if not 1 <= layers <= published:
        raise PlanError(f"layers={layers}: the config has {published} layers")
    cut = dict(config)
    cut["num_hidden_layers"] = layers
    for key, value in config.items():
        if isinstance(value, list) and len(value) == published and key != "mlp_only_layers":
            cut[key] = value[:layers]
    if isinstance(config.get("mlp_only_layers"), list):
        cut["mlp_only_layers"] = [i for i in config["mlp_only_layers"] if i < layers]
    return cut


def flag_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def vramfit_scenario(vramfit: str, hf_config: dict, keys: dict) -> dict:
    """The full scenario `vramfit estimate` builds from this config.json and these keys."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(hf_config))
        args = [vramfit, "estimate", "--config", str(path), "--json"]
        for key, value in keys.items():
            if value is not None:
                args += [f"--{key}", flag_value(value)]
        done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise PlanError(f"vramfit refused the scenario: {done.stderr.strip()}")
    return json.loads(done.stdout)["scenario"]


def resolve_config(name: str) -> Path:
    """A fixture's file name, or a path to any config.json."""
    path = Path(name)
    if not path.is_absolute() and not path.exists():
        path = CONFIGS / name
    if not path.exists():
        raise PlanError(f"no config.json at {name} (nor in {CONFIGS.relative_to(REPO)})")
    return path.resolve()


def shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def plan_line(line: dict, vramfit: str) -> Plan:
    """A matrix line: {"id", "config", "layers"?, "attention"?, "scenario": {vramfit keys}, "note"?}."""
    for key in ("id", "config", "scenario"):
        if key not in line:
            raise PlanError(f"a matrix line needs `{key}`: {json.dumps(line)}")
    attention = line.get("attention", "sdpa")
    if attention not in ATTENTION:
        raise PlanError(f"{line['id']}: attention is one of {', '.join(ATTENTION)}")
    path = resolve_config(line["config"])
    text = text_config(json.loads(path.read_text()))
    published = text["num_hidden_layers"]
    layers = line.get("layers", published)
    hf = cut_config(text, layers)
    keys = dict(line["scenario"])
    keys["attention"] = ATTENTION[attention][1]
    scenario = vramfit_scenario(vramfit, hf, keys)
    notes = [line["note"]] if line.get("note") else []
    return Plan(line["id"], scenario, hf, shown_path(path), layers, published, attention, notes)


def plan_export(export: dict, config: str, vramfit: str, run_id: str, attention: str | None = None) -> Plan:
    """A scenario exported by `vramfit estimate --config FILE --json` (the whole document or its
    `scenario`), with the config.json it was made from. Its shape must be the one vramfit reads
    from that config cut to the scenario's layers."""
    scenario = export.get("scenario", export)
    path = resolve_config(config)
    text = text_config(json.loads(path.read_text()))
    layers = scenario.get("layers")
    if not isinstance(layers, int):
        raise PlanError(
            "the export has no explicit shape: export it with `vramfit estimate --config "
            f"{shown_path(path)} ... --json` so the kit and vramfit read the same config"
        )
    hf = cut_config(text, layers)
    read = vramfit_scenario(vramfit, hf, {})
    differs = [k for k in SHAPE_KEYS if read.get(k) != scenario.get(k)]
    if differs:
        shown = ", ".join(f"{k}: export {scenario.get(k)} vs config {read.get(k)}" for k in differs)
        raise PlanError(f"the export's shape is not {shown_path(path)}'s: {shown}")
    if attention is None:
        attention = "eager" if scenario.get("attention") == "eager" else "sdpa"
    if ATTENTION[attention][1] != scenario.get("attention"):
        raise PlanError(f"attention {attention} is vramfit's `{ATTENTION[attention][1]}`, the export says `{scenario.get('attention')}`")
    return Plan(run_id, scenario, hf, shown_path(path), layers, text["num_hidden_layers"], attention)


def master_weights(s: dict) -> bool:
    """vramfit's rule for `master-weights` left at auto: on for 16-bit full fine-tuning."""
    if s.get("master-weights") is not None:
        return s["master-weights"]
    return s["mode"] == "full" and s["weights"] != "fp32"


def trainable_dtype(s: dict) -> str:
    """The dtype the trained tensors have: the weights' for full fine-tuning; peft's adapters are
    fp32 (its `autocast_adapter_dtype` default casts 16-bit adapters up)."""
    return s["weights"] if s["mode"] == "full" else "fp32"


def act_dtype(s: dict) -> str:
    """vramfit's activation dtype: the scenario's, else the weights' float type, else bf16."""
    if s.get("act-dtype"):
        return s["act-dtype"]
    return s["weights"] if s["weights"] in FLOAT_WEIGHTS else "bf16"


# The torchao config each of vramfit's torchao kernels is, for fp8 weights.
TORCHAO_FP8 = {
    "torchao-wo": "Float8WeightOnlyConfig",
    "torchao-dq": "Float8DynamicActivationFloat8WeightConfig",
}


def quant_kernel_mismatch(weights: str, kernel: str) -> str | None:
    """Why the kit's quantizer for `weights` is not the matmul `quant-kernel` names, or None: fp8
    runs through torchao (weight-only or dynamic, as the scenario says), int8 through bitsandbytes'
    LLM.int8 (`auto`)."""
    if weights == "fp8" and kernel not in TORCHAO_FP8:
        return (
            f"weights=fp8 with quant-kernel={kernel}: the kit quantizes fp8 with torchao; write "
            "quant-kernel=torchao-wo (Float8WeightOnlyConfig) or torchao-dq "
            "(Float8DynamicActivationFloat8WeightConfig)"
        )
    if weights in ("int8", "nf4") and kernel != "auto":
        return f"weights={weights} with quant-kernel={kernel}: the kit quantizes {weights} with bitsandbytes (quant-kernel=auto)"
    return None


def unsupported(plan: Plan) -> str | None:
    """Why plain PyTorch, transformers and peft have no reference run of this scenario, or None."""
    s = plan.scenario
    fixed = {
        "runtime": ("transformers", "serving runtimes are measured from their logs (calibration/runtime-logs.csv)"),
        "method": ("detailed", "the kit validates the detailed method"),
        "gpus": (1, "the kit measures one GPU"),
        "sharding": ("none", "the kit measures one GPU"),
        "offload": ("none", "offloading is not run by the kit"),
        "grad-accum": (1, "accumulation adds no memory; write grad-accum=1"),
        "images": (0, "the kit builds text models"),
        "head": ("lm", "the kit builds causal language models"),
        "loss": ("whole", "transformers computes the loss over the whole sequence"),
        "quant-head": (False, "transformers' quantizers leave the LM head in the compute dtype"),
        "compile": (False, "the kit runs eager PyTorch"),
        "optimizer-step": ("foreach", "the kit steps torch's default multi-tensor optimizer after the backward pass"),
        "offload-activations": (False, "the kit keeps activations on the GPU"),
        "dropout": (False, "the kit keeps the configs' own dropout"),
        "attention-dropout": (False, "the kit keeps the configs' own dropout"),
        "custom": ([], "custom components are not run"),
    }
    for key, (wanted, why) in fixed.items():
        if s.get(key) != wanted:
            return f"{key}={s.get(key)}: {why}"
    if s.get("vision-layers"):
        return "a vision tower: the kit builds text models"
    if s["checkpointing"] == "selective":
        return "checkpointing=selective: transformers checkpoints whole layers only"
    mode, weights = s["mode"], s["weights"]
    act = act_dtype(s)
    if s.get("kv-dtype") not in (None, act):
        return "kv-dtype differs from the activations: transformers caches in the compute dtype"
    if weights == "nf4" and s.get("nf4-kernel") == "bnb-legacy":
        return "nf4-kernel=bnb-legacy: the kit runs a current bitsandbytes (0.43.2 on), whose MatMul4Bit keeps no input (nf4-kernel=bnb)"
    if torchao_nf4(s) and not s.get("double-quant"):
        return "nf4-kernel=torchao without double-quant: torchao's NF4Tensor always quantizes its block scales"
    if mode == "inference":
        if s["cache"] == "quantized":
            return "cache=quantized: QuantizedCache needs optimum-quanto, not in the kit's stack"
        if weights not in FLOAT_WEIGHTS + ("int8", "nf4", "fp8"):
            return f"weights={weights}: no quantizer in the kit for it (int8/nf4: bitsandbytes, fp8: torchao)"
        return quant_kernel_mismatch(weights, s.get("quant-kernel", "auto"))
    if mode == "full" and weights not in FLOAT_WEIGHTS:
        return f"full fine-tuning of {weights} weights"
    if mode == "lora" and weights not in FLOAT_WEIGHTS:
        return f"mode=lora on {weights} weights: that is qlora"
    if mode == "qlora" and weights not in ("nf4", "int8"):
        return f"qlora on {weights} weights: the kit quantizes with bitsandbytes (nf4, int8) or torchao (nf4)"
    if weights != "fp32" and act != weights and weights in FLOAT_WEIGHTS:
        return f"act-dtype={act} on {weights} weights: autocast is run on fp32 weights only"
    if mode == "full" and master_weights(s) and weights != "fp32":
        return (
            "fp32 master weights beside 16-bit weights is a mixed-precision optimizer (DeepSpeed, "
            "Megatron) torch does not have: write weights=fp32 act-dtype=bf16 (autocast) or "
            "master-weights=false optimizer=adamw-bf16"
        )
    grads = s.get("grads") or (weights if mode == "full" else None)
    if mode == "full" and grads != weights:
        return f"grads={grads}: torch keeps gradients in the parameters' dtype ({weights})"
    trained = trainable_dtype(s)
    optimizer = s["optimizer"]
    wanted_dtype = {"adamw": "fp32", "sgd-momentum": "fp32", "adamw-bf16": "bf16"}
    if optimizer in wanted_dtype and trained != wanted_dtype[optimizer]:
        return (
            f"optimizer={optimizer} keeps {wanted_dtype[optimizer]} state; torch's keeps the "
            f"trained tensors' dtype ({trained})"
        )
    if optimizer not in ("adamw", "adamw-bf16", "adamw-8bit", "sgd", "sgd-momentum", "none"):
        return f"optimizer={optimizer}: not in the kit (adamw, adamw-bf16, adamw-8bit, sgd, sgd-momentum, none)"
    if s.get("experts") and mode in ("lora", "qlora"):
        mlp = {"gate", "up", "down"} & set(s["lora-targets"].split(","))
        if mlp or s["lora-targets"] == "all":
            return (
                "LoRA on expert projections: transformers 5 fuses each layer's experts into one "
                "parameter, which peft's target_modules does not wrap"
            )
    return None


def needed_packages(plan: Plan) -> list[str]:
    s = plan.scenario
    weights = ("nf4-kernel", "torchao") if torchao_nf4(s) else ("weights", s["weights"])
    wanted = [
        NEEDS_PACKAGE.get(weights),
        NEEDS_PACKAGE.get(("optimizer", s["optimizer"])) if s["mode"] != "inference" else None,
        NEEDS_PACKAGE.get(("attention-kernel", plan.attention)),
    ]
    return [p for p in wanted if p]


def missing(plan: Plan) -> str | None:
    """The packages this scenario needs that this Python lacks, as a skip reason, or None."""
    absent = [p for p in needed_packages(plan) if importlib.util.find_spec(p) is None]
    if absent:
        return (
            f"needs {', '.join(absent)}, not installed here: carry the wheels "
            "(calibration/measure/README.md)"
        )
    return None
