"""estimate() and fit() return the CLI's --json objects, and bad input raises ValueError."""

import pytest

import vramfit
from conftest import cli, cli_json, flags

LLAMA_8B = {"params": "8B", "layers": 32, "hidden": 4096, "method": "lesson"}

#: The lesson's worked examples (chapter 62), with the totals it prints, in bytes.
LESSON_GOLDENS = [
    (
        {**LLAMA_8B, "mode": "full", "weights": "fp16", "batch": 1, "seq": 2048,
         "checkpointing": "none"},
        97_573_741_824,
    ),
    (
        {**LLAMA_8B, "mode": "qlora", "weights": "nf4", "checkpointing": "full", "batch": 1,
         "seq": 2048},
        5_013_382_810,
    ),
]

SCENARIOS = {
    "dense lora": {"model": "llama-3.1-8b", "mode": "lora", "lora_rank": 16, "gpu": "rtx-4090",
                   "custom": ["eval buffer:500MiB", "ema:1GiB"]},
    "dense full, two GPUs": {"model": "qwen2.5-7b", "mode": "full", "gpus": 2, "sharding": "fsdp",
                             "margin": 0.5},
    "moe inference": {"model": "qwen3-30b-a3b", "mode": "inference", "gpu": "h100-80"},
    "vllm": {"model": "llama-3.1-8b", "mode": "inference", "runtime": "vllm", "gpu": "h100-80",
             "max_model_len": 16384, "gpu_memory_utilization": 0.95},
    "llama.cpp": {"model": "qwen3-8b", "mode": "inference", "runtime": "llama.cpp",
                  "quant": "Q4_K_M"},
}


@pytest.mark.parametrize("scenario,total", LESSON_GOLDENS)
def test_the_lessons_goldens_equal_the_cli(scenario, total):
    result = vramfit.estimate(**scenario)
    assert result == cli_json("estimate", "--json", *flags(scenario))
    assert result["total_bytes"] == total


@pytest.mark.parametrize("name", SCENARIOS)
def test_estimates_equal_the_cli(name):
    scenario = SCENARIOS[name]
    assert vramfit.estimate(**scenario) == cli_json("estimate", "--json", *flags(scenario))


@pytest.mark.parametrize("name", SCENARIOS)
def test_fits_equal_the_cli(name):
    scenario = SCENARIOS[name]
    serving = scenario.get("runtime") in ("vllm", "llama.cpp")
    goals = {"users": 8, "tokens_per_s": 20.0} if serving else {"target_batch": 32}
    expected = cli_json("fit", "--json", *flags(scenario), *flags(goals))
    assert vramfit.fit(**goals, **scenario) == expected


def test_accuracy_equals_the_cli():
    scenario = SCENARIOS["dense lora"]
    result = vramfit.estimate(accuracy=True, **scenario)
    assert "accuracy" in result
    assert result == cli_json("estimate", "--json", "--accuracy", *flags(scenario))


def test_keys_as_the_cli_spells_them_work_too():
    assert vramfit.estimate(**{"model": "llama-3.1-8b", "mode": "lora", "lora-rank": 64}) == (
        vramfit.estimate(model="llama-3.1-8b", mode="lora", lora_rank=64)
    )


def test_a_config_file_is_read_as_the_cli_reads_it(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(
        '{"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,'
        ' "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,'
        ' "vocab_size": 128256, "some_new_memory_knob": 4}'
    )
    expected = cli("estimate", "--json", "--config", str(config), "--mode", "lora")
    assert expected.returncode == 0, expected.stderr
    with pytest.warns(UserWarning) as warned:
        result = vramfit.estimate(config=config, mode="lora")
    assert result == cli_json("estimate", "--json", "--config", str(config), "--mode", "lora")
    # What the CLI notes on stderr arrives as warnings, word for word.
    notes = [line.removeprefix("vramfit: ") for line in expected.stderr.splitlines()]
    assert [str(w.message) for w in warned] == notes


def test_help_lists_every_flag_with_the_clis_help():
    doc = vramfit.estimate.__doc__
    help_text = cli("estimate", "--help").stdout
    for name, text in [("lora_rank", "LoRA rank r"), ("gpu_memory_utilization", "vLLM"),
                       ("model_dir", "checkpoint directory")]:
        line = next(l for l in doc.splitlines() if l.strip().startswith(f"{name}:"))
        assert text in line
        assert f"--{name.replace('_', '-')} " in help_text
    assert "target_batch" in vramfit.fit.__doc__


@pytest.mark.parametrize(
    "call,named",
    [
        (lambda: vramfit.estimate(batch="many"), "invalid batch:"),
        (lambda: vramfit.estimate(not_a_field=1), "invalid not_a_field: unknown parameter"),
        (lambda: vramfit.estimate(batch=[1, 2]), "invalid batch: takes one value, not a list"),
        (lambda: vramfit.estimate(seq={"a": 1}), "invalid seq: takes a number"),
        (lambda: vramfit.estimate(config=3), "invalid config: takes a path"),
        (lambda: vramfit.estimate(config="/nonexistent/c.json"), "invalid config: cannot read"),
        (lambda: vramfit.estimate(replay="x.json"), "invalid replay:"),
        (lambda: vramfit.fit(target_batch="lots"), "invalid target_batch:"),
        (lambda: vramfit.fit(target_batch=-1), "invalid target_batch:"),
        (lambda: vramfit.fit(gpu="auto", from_probe="p.json"), "invalid gpu:"),
    ],
)
def test_bad_input_raises_a_value_error_naming_the_field(call, named):
    with pytest.raises(ValueError) as raised:
        call()
    assert named in str(raised.value)


def test_every_bad_field_is_named_at_once():
    with pytest.raises(ValueError) as raised:
        vramfit.estimate(batch="many", seq="long", mode="dreaming")
    text = str(raised.value)
    for field in ("batch", "seq", "mode"):
        assert f"invalid {field}:" in text
    # The CLI names the same fields.
    out = cli("estimate", "--batch", "many", "--seq", "long", "--mode", "dreaming")
    assert out.returncode == 2
    assert sorted(l.split(":")[0] for l in text.splitlines()) == sorted(
        l.removeprefix("vramfit: ").split(":")[0] for l in out.stderr.splitlines()
    )
