"""The kit's logic without a GPU: plans read from the engine's real configs, the matrix, and each
kind of step built and run on the CPU with small configs (real model types and layer patterns,
narrow widths). Nothing here is a measurement: on the CPU torch's peaks are null, and the one
end-to-end run takes its NVML part from `vramfit run --replay`, which the document says.

Run: `python -m unittest discover -s calibration/measure/tests` with the kit's venv
(`cargo xtask test` does), and the CLI at $VRAMFIT_BIN or in target/.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(KIT))

from vramfit_measure import matrix as matrix_module  # noqa: E402
from vramfit_measure.plan import (  # noqa: E402
    CONFIGS,
    REPO,
    PlanError,
    cut_config,
    missing,
    plan_export,
    plan_line,
    text_config,
    unsupported,
    vramfit_bin,
    vramfit_scenario,
)
from vramfit_measure.runner import read_matrix  # noqa: E402

VRAMFIT = vramfit_bin()
REPLAY = REPO / "crates" / "cli" / "tests" / "fixtures" / "gpu" / "replay-h100-probe.json"

# Narrow widths for CPU runs; every other key (model type, layer pattern, window, norms, tying)
# stays the published config's.
SMALL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 256,
    "num_hidden_layers": 4,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}
# Qwen3-MoE names its expert count `num_experts`, Mixtral `num_local_experts`.
SMALL_EXPERTS = {"num_experts_per_tok": 2, "moe_intermediate_size": 32}


def small_config(fixture: str, directory: Path, **more) -> Path:
    config = text_config(json.loads((CONFIGS / fixture).read_text()))
    config = cut_config(config, min(4, config["num_hidden_layers"]))
    config.update(SMALL)
    for experts in ("num_experts", "num_local_experts"):
        if experts in config:
            config.update({experts: 4, **{k: v for k, v in SMALL_EXPERTS.items() if k in config}})
    if config.get("sliding_window"):
        config["sliding_window"] = 16
    config.update(more)
    path = directory / f"small-{fixture}"
    path.write_text(json.dumps(config))
    return path


def scenario_line(config: Path, scenario: dict, attention: str = "sdpa", run_id: str = "t") -> dict:
    return {"id": run_id, "config": str(config), "attention": attention, "scenario": scenario}


class Plans(unittest.TestCase):
    def test_a_cut_config_keeps_the_layer_pattern_of_its_first_layers(self):
        gpt_oss = json.loads((CONFIGS / "gpt-oss-20b.json").read_text())
        cut = cut_config(gpt_oss, 4)
        self.assertEqual(cut["num_hidden_layers"], 4)
        self.assertEqual(cut["layer_types"], gpt_oss["layer_types"][:4])
        self.assertEqual(cut["hidden_size"], gpt_oss["hidden_size"])
        with self.assertRaises(PlanError):
            cut_config(gpt_oss, 25)

    def test_few_layers_of_a_real_config_are_what_vramfit_estimates(self):
        plan = plan_line(
            {"id": "x", "config": "qwen3-8b.json", "layers": 4, "scenario": {"mode": "lora", "batch": 2, "seq": 1024}},
            VRAMFIT,
        )
        published = json.loads((CONFIGS / "qwen3-8b.json").read_text())
        self.assertTrue(plan.few_layers)
        self.assertEqual((plan.layers, plan.published_layers), (4, published["num_hidden_layers"]))
        s = plan.scenario
        self.assertEqual(s["layers"], 4)
        self.assertEqual(s["hidden"], published["hidden_size"])
        self.assertEqual(s["kv-heads"], published["num_key_value_heads"])
        self.assertEqual((s["mode"], s["batch"], s["seq"], s["attention"]), ("lora", 2, 1024, "flash"))

    def test_a_sliding_window_config_cut_to_few_layers_counts_only_their_windows(self):
        plan = plan_line({"id": "g", "config": "gemma-2-2b-it.json", "layers": 4, "scenario": {"mode": "inference"}}, VRAMFIT)
        self.assertEqual(plan.scenario["sliding-layers"], 2)
        self.assertEqual(plan.scenario["sliding-window"], 4096)

    def test_an_export_is_run_as_written_when_its_shape_is_its_configs(self):
        cut = cut_config(text_config(json.loads((CONFIGS / "mistral-7b-v0.1.json").read_text())), 4)
        export = {"scenario": vramfit_scenario(VRAMFIT, cut, {"mode": "full", "weights": "fp32", "attention": "eager"})}
        plan = plan_export(export, "mistral-7b-v0.1.json", VRAMFIT, "exported")
        self.assertEqual(plan.scenario, export["scenario"])
        self.assertEqual(plan.attention, "eager")
        export["scenario"]["hidden"] = 2048
        with self.assertRaisesRegex(PlanError, "hidden: export 2048 vs config 4096"):
            plan_export(export, "mistral-7b-v0.1.json", VRAMFIT, "exported")
        preset_only = {"scenario": {**export["scenario"], "layers": None, "model": "mistral-7b"}}
        with self.assertRaisesRegex(PlanError, "--config"):
            plan_export(preset_only, "mistral-7b-v0.1.json", VRAMFIT, "exported")

    def test_what_torch_has_no_reference_for_is_refused_with_the_reason(self):
        def reason(scenario):
            return unsupported(plan_line({"id": "r", "config": "qwen3-0.6b.json", "scenario": scenario}, VRAMFIT))

        self.assertRegex(reason({"mode": "full", "weights": "bf16"}), "master weights")
        self.assertIsNone(reason({"mode": "full", "weights": "bf16", "master-weights": False, "optimizer": "adamw-bf16"}))
        self.assertRegex(reason({"mode": "full", "weights": "bf16", "master-weights": False, "optimizer": "adamw"}), "keeps fp32 state")
        self.assertIsNone(reason({"mode": "full", "weights": "fp32", "act-dtype": "bf16"}))
        self.assertIsNone(reason({"mode": "lora", "weights": "bf16"}))
        self.assertRegex(reason({"mode": "full", "weights": "fp32", "checkpointing": "selective"}), "whole layers")
        self.assertRegex(reason({"mode": "inference", "runtime": "vllm"}), "runtime=vllm")
        self.assertRegex(reason({"mode": "inference", "cache": "quantized"}), "optimum-quanto")
        # fp8 runs through torchao, so the scenario must name which torchao matmul it estimates.
        self.assertRegex(reason({"mode": "inference", "weights": "fp8"}), "quant-kernel=torchao-wo")
        self.assertIsNone(reason({"mode": "inference", "weights": "fp8", "quant-kernel": "torchao-dq"}))
        self.assertRegex(reason({"mode": "inference", "weights": "int8", "quant-kernel": "torchao-wo"}), "bitsandbytes")
        self.assertRegex(reason({"mode": "inference", "weights": "nf4", "quant-head": True}), "LM head")
        self.assertRegex(reason({"mode": "qlora", "weights": "nf4", "nf4-kernel": "bnb-legacy"}), "0.43.2")
        self.assertRegex(reason({"mode": "qlora", "weights": "nf4", "nf4-kernel": "torchao"}), "double-quant")
        self.assertIsNone(reason({"mode": "qlora", "weights": "nf4", "nf4-kernel": "torchao", "double-quant": True}))
        moe = plan_line({"id": "m", "config": "qwen3-30b-a3b.json", "layers": 2, "scenario": {"mode": "lora", "lora-targets": "all"}}, VRAMFIT)
        self.assertRegex(unsupported(moe), "fuses")

    def test_a_missing_package_is_a_skip_that_says_how_to_bring_it(self):
        plan = plan_line({"id": "q", "config": "qwen3-0.6b.json", "scenario": {"mode": "qlora", "weights": "nf4"}}, VRAMFIT)
        try:
            import bitsandbytes  # noqa: F401
        except ImportError:
            self.assertRegex(missing(plan), "needs bitsandbytes.*carry the wheels")
        else:
            self.assertIsNone(missing(plan))


class Matrix(unittest.TestCase):
    def test_the_committed_matrix_is_the_generators(self):
        self.assertEqual((KIT / "matrix.jsonl").read_text(), matrix_module.render())

    def test_the_matrix_covers_the_campaign(self):
        rows = read_matrix(KIT / "matrix.jsonl")
        self.assertTrue(150 <= len(rows) <= 300, len(rows))
        scenarios = [r["scenario"] for r in rows]
        self.assertEqual({s["mode"] for s in scenarios}, {"inference", "full", "lora", "qlora"})
        self.assertTrue({"fp32", "bf16", "fp16", "fp8", "int8", "nf4"} <= {s["weights"] for s in scenarios})
        self.assertEqual({r["attention"] for r in rows}, {"eager", "sdpa", "flash"})
        self.assertEqual({s.get("checkpointing") for s in scenarios if s["mode"] != "inference"}, {"none", "full"})
        self.assertIn("adamw-8bit", {s.get("optimizer") for s in scenarios})
        self.assertTrue({2, 4} <= {s.get("checkpoint-every") for s in scenarios})
        self.assertEqual({s.get("quant-kernel") for s in scenarios if s["weights"] == "fp8"}, {"torchao-wo", "torchao-dq"})
        self.assertIn("torchao", {s.get("nf4-kernel") for s in scenarios if s["mode"] == "qlora"})
        configs = {r["config"] for r in rows}
        self.assertTrue({"qwen3-30b-a3b.json", "mixtral-8x7b-v0.1.json"} <= configs)
        self.assertTrue({"gemma-2-2b-it.json", "mistral-7b-v0.1.json"} <= configs)
        self.assertTrue(all("note" in r for r in rows if "layers" in r), "a cut config's row says so")
        self.assertGreater(len({(s["batch"], s["seq"]) for s in scenarios}), 10)

    def test_vramfit_reads_every_matrix_line(self):
        for row in read_matrix(KIT / "matrix.jsonl"):
            with self.subTest(row["id"]):
                plan = plan_line(row, VRAMFIT)
                reason = unsupported(plan)
                self.assertIsNone(reason, f"{row['id']}: {reason}")


class Steps(unittest.TestCase):
    """Each kind of step, built from a small config and run on the CPU."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_step(self, fixture: str, scenario: dict, attention: str = "sdpa", config_sizes: dict | None = None) -> dict:
        from vramfit_measure.step import run_step

        config = small_config(fixture, self.dir, **(config_sizes or {}))
        plan = plan_line(scenario_line(config, scenario, attention), VRAMFIT)
        self.assertIsNone(unsupported(plan) or missing(plan))
        workload = run_step(plan, self.dir / "checkpoints")
        self.assertEqual(workload["device"], "cpu")
        peaks = workload["torch_peaks"]
        self.assertEqual(
            {k: v for k, v in peaks.items() if k != "phases"},
            {"max_memory_allocated_bytes": None, "max_memory_reserved_bytes": None, "allocated_after_build_bytes": None, "num_alloc_retries": None},
        )
        for phase in peaks["phases"]:
            self.assertIsNone(phase["max_memory_allocated_bytes"])
        self.assertEqual(workload["scenario"], plan.scenario)
        packages = workload["provenance"]["packages"]
        self.assertTrue(packages["torch"] and packages["transformers"] and packages["peft"])
        self.assertEqual(workload["model"]["attn_implementation"], plan.attn_implementation)
        return workload

    def test_inference_prefills_and_decodes_with_each_cache(self):
        for cache in ("dynamic", "static"):
            with self.subTest(cache):
                w = self.run_step("qwen3-0.6b.json", {"mode": "inference", "batch": 2, "prompt": 24, "seq": 32, "cache": cache})
                self.assertEqual(w["step"], {"kind": "generate", "prompt_tokens": 24, "new_tokens": 8, "cache": cache})
        w = self.run_step("gemma-2-2b-it.json", {"mode": "inference", "batch": 1, "prompt": 40, "seq": 48, "cache": "static", "max-cache-len": 64}, "eager")
        self.assertEqual(w["model"]["class"], "Gemma2ForCausalLM")

    def test_the_steps_peak_is_its_largest_phases(self):
        import torch

        from vramfit_measure.step import Phases

        phases = Phases(torch.device("cpu"))
        phases.measured = [
            {"phase": "forward", "max_memory_allocated_bytes": 7, "max_memory_reserved_bytes": 9},
            {"phase": "backward", "max_memory_allocated_bytes": 8, "max_memory_reserved_bytes": 9},
            {"phase": "optimizer", "max_memory_allocated_bytes": 5, "max_memory_reserved_bytes": 10},
        ]
        self.assertEqual(phases.peak("max_memory_allocated_bytes"), 8)
        self.assertEqual(phases.peak("max_memory_reserved_bytes"), 10)
        phases.measured = [{"phase": "generate", "max_memory_allocated_bytes": None}]
        self.assertIsNone(phases.peak("max_memory_allocated_bytes"))

    def test_inference_of_a_mixture_of_experts(self):
        w = self.run_step("qwen3-30b-a3b.json", {"mode": "inference", "batch": 2, "prompt": 16, "seq": 20})
        self.assertEqual(w["model"]["class"], "Qwen3MoeForCausalLM")

    def test_full_fine_tuning_with_each_recipe(self):
        recipes = {
            "fp32": ({"weights": "fp32", "optimizer": "adamw", "checkpointing": "full"}, None),
            "autocast": ({"weights": "fp32", "act-dtype": "bf16", "optimizer": "adamw"}, "bf16"),
            "bf16": ({"weights": "bf16", "master-weights": False, "optimizer": "adamw-bf16"}, None),
            "sgd": ({"weights": "bf16", "master-weights": False, "optimizer": "sgd"}, None),
        }
        for name, (recipe, autocast) in recipes.items():
            with self.subTest(name):
                w = self.run_step("llama-3.2-1b-instruct.json", {"mode": "full", "batch": 2, "seq": 32, **recipe})
                self.assertEqual(w["step"]["kind"], "train")
                self.assertEqual(w["step"]["autocast"], autocast)
                self.assertEqual(w["step"]["trainable_params"], w["model"]["params"])
                self.assertEqual(
                    [(p["phase"], p["step"]) for p in w["torch_peaks"]["phases"]],
                    [("setup", None), ("forward", 1), ("backward", 1), ("optimizer", 1), ("forward", 2), ("backward", 2), ("optimizer", 2)],
                )
        w = self.run_step("mistral-7b-v0.1.json", {"mode": "full", "weights": "fp32", "batch": 1, "seq": 32}, "eager")
        self.assertEqual(w["step"]["optimizer"], "torch.optim.adamw.AdamW")

    def test_checkpointing_every_kth_layer_wraps_layers_k_2k_and_so_on(self):
        # Four layers: every layer, then layers 2 and 4, then layer 3 alone (⌊4/3⌋), then none.
        for every, wrapped in ((1, 4), (2, 2), (3, 1), (5, 0)):
            with self.subTest(every):
                w = self.run_step("llama-3.2-1b-instruct.json", {"mode": "full", "weights": "bf16", "master-weights": False, "optimizer": "adamw-bf16", "batch": 1, "seq": 16, "checkpointing": "full", "checkpoint-every": every})
                self.assertEqual(w["model"]["checkpointed_layers"], wrapped)

    def test_lora_trains_only_the_adapters(self):
        w = self.run_step("gemma-3-1b-it.mlc-reserialized.json", {"mode": "lora", "weights": "bf16", "batch": 2, "seq": 40, "lora-targets": "all", "lora-rank": 4, "checkpointing": "full"})
        hidden, heads, kv, head_dim, ffn, layers = 64, 4, 2, 16, 128, 4
        per_layer = sum(4 * (i + o) for i, o in [(hidden, heads * head_dim), (hidden, kv * head_dim), (hidden, kv * head_dim), (heads * head_dim, hidden), (hidden, ffn), (hidden, ffn), (ffn, hidden)])
        self.assertEqual(w["step"]["trainable_params"], layers * per_layer)
        self.assertEqual(w["step"]["trained_dtype"], "fp32")
        w = self.run_step("mixtral-8x7b-v0.1.json", {"mode": "lora", "weights": "bf16", "batch": 1, "seq": 16, "lora-targets": "q,v"})
        self.assertEqual(w["model"]["class"], "PeftModelForCausalLM")


    def test_torchao_nf4_qlora_keeps_the_base_in_nf4_and_trains_the_adapters(self):
        try:
            from torchao.quantization import NF4Tensor
        except ImportError:
            from torchao.dtypes import NF4Tensor
        import torch
        from vramfit_measure.build import build

        # NF4 quantizes 64-value blocks and their scales in groups of 256: every weight a
        # multiple of 16384 values.
        sizes = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64}
        config = small_config("llama-3.2-1b-instruct.json", self.dir, **sizes)
        scenario = {"mode": "qlora", "weights": "nf4", "nf4-kernel": "torchao", "double-quant": True, "batch": 2, "seq": 32, "lora-targets": "all", "lora-rank": 4}
        plan = plan_line(scenario_line(config, scenario), VRAMFIT)
        model = build(plan, torch.device("cpu"), self.dir / "checkpoints")
        base = model.get_base_model()
        self.assertIsInstance(base.model.layers[0].mlp.down_proj.base_layer.weight, NF4Tensor)
        self.assertNotIsInstance(base.lm_head.weight, NF4Tensor)
        w = self.run_step("llama-3.2-1b-instruct.json", scenario, config_sizes=sizes)
        self.assertEqual(w["step"]["trained_dtype"], "fp32")
        self.assertGreater(w["step"]["trainable_params"], 0)


class EndToEnd(unittest.TestCase):
    def test_a_matrix_run_writes_one_measurement_per_scenario_and_resumes(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            config = small_config("qwen3-0.6b.json", tmp)
            matrix = tmp / "matrix.jsonl"
            matrix.write_text(
                "# a comment line\n"
                + json.dumps(scenario_line(config, {"mode": "inference", "batch": 1, "prompt": 8, "seq": 12}, run_id="inf")) + "\n"
                + json.dumps(scenario_line(config, {"mode": "full", "weights": "bf16"}, run_id="needs-master")) + "\n"
            )
            out = tmp / "out"
            args = [sys.executable, str(KIT / "measure.py"), "run", "--matrix", str(matrix), "--out", str(out), "--nvml-replay", str(REPLAY)]
            first = subprocess.run(args, capture_output=True, text=True)
            self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
            self.assertIn("1 measured now, 0 before, 1 skipped", first.stdout)
            document = json.loads((out / "inf.json").read_text())
            self.assertEqual(document["schema"], "vramfit.measurement/1")
            self.assertEqual(document["exit"]["exit_code"], 0)
            self.assertIn("not read from a GPU", " ".join(document["warnings"]))
            workload = document["workload"]
            self.assertEqual(workload["id"], "inf")
            self.assertEqual(workload["nvml_replay"], str(REPLAY))
            self.assertIsNone(workload["torch_peaks"]["max_memory_allocated_bytes"])
            self.assertEqual(workload["scenario"]["prompt"], 8)
            skipped = json.loads((out / "skipped.json").read_text())
            self.assertEqual([s["id"] for s in skipped], ["needs-master"])
            self.assertFalse((out / ".work").exists())
            again = subprocess.run(args, capture_output=True, text=True)
            self.assertIn("0 measured now, 1 before", again.stdout)


if __name__ == "__main__":
    unittest.main()
