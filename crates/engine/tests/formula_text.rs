//! Every component's "show your work" numbers give its bytes: for every preset in every mode and
//! runtime, and settings that reach the formulas' branches, the arithmetic rendering of each
//! component's formula (`estimate::arithmetic`, from the same expression as the text users read)
//! is evaluated and must contain the component's bytes once each printed number's rounding is
//! allowed for.

mod common;

use common::scenario;
use vramfit_engine::estimate::{self, Estimate};
use vramfit_engine::model::PRESETS;
use vramfit_engine::runtime::Runtime;

/// Each preset in every mode, and in inference under every registered runtime ([`modes`]).
const MODES: &[&[(&str, &str)]] = &[
    &[("mode", "full")],
    &[("mode", "lora")],
    &[("mode", "qlora")],
    &[("mode", "full"), ("method", "lesson")],
    &[
        ("mode", "lora"),
        ("method", "lesson"),
        ("checkpointing", "full"),
    ],
    &[
        ("mode", "inference"),
        ("method", "lesson"),
        ("gpus", "2"),
        ("sharding", "tensor"),
    ],
];

/// Settings that take the formulas down their other branches, on a few kinds of model.
const VARIANTS: &[&[(&str, &str)]] = &[
    &[
        ("mode", "full"),
        ("gpus", "8"),
        ("sharding", "zero3"),
        ("checkpointing", "full"),
        ("offload", "optimizer"),
    ],
    &[
        ("mode", "full"),
        ("gpus", "8"),
        ("sharding", "fsdp"),
        ("offload", "all"),
        ("float8", "fp8-gather"),
        ("compile", "true"),
    ],
    &[
        ("mode", "full"),
        ("gpus", "8"),
        ("tp", "2"),
        ("sharding", "fsdp"),
        ("sequence-parallel", "off"),
        ("checkpointing", "selective"),
        ("loss", "chunked"),
    ],
    &[
        ("mode", "full"),
        ("gpus", "8"),
        ("tp", "4"),
        ("sharding", "zero1"),
        ("checkpointing", "op"),
        ("cp", "2"),
        ("loss", "in-place"),
        ("optimizer", "adafactor"),
    ],
    &[
        ("mode", "full"),
        ("gpus", "4"),
        ("sharding", "pipeline"),
        ("loss", "cce"),
        ("optimizer-step", "for-loop"),
    ],
    &[
        ("mode", "full"),
        ("gpus", "8"),
        ("sharding", "zero2"),
        ("replicas", "2"),
        ("optimizer-step", "in-backward"),
        ("attention", "eager"),
        ("dropout", "true"),
    ],
    &[
        ("mode", "full"),
        ("weights", "fp32"),
        ("checkpointing", "full"),
        ("checkpoint-every", "3"),
        ("offload-activations", "true"),
    ],
    &[
        ("mode", "full"),
        ("compile", "true"),
        ("loss", "chunked"),
        ("tp", "2"),
        ("gpus", "2"),
        ("sharding", "zero1"),
    ],
    &[
        ("mode", "lora"),
        ("lora-targets", "all"),
        ("lora-rank", "64"),
        ("lora-dropout", "true"),
        ("weights", "fp32"),
    ],
    &[
        ("mode", "qlora"),
        ("double-quant", "true"),
        ("paged-optimizer", "true"),
        ("optimizer", "adamw-8bit"),
        ("nf4-kernel", "bnb-legacy"),
    ],
    &[
        ("mode", "qlora"),
        ("nf4-kernel", "torchao"),
        ("gpus", "2"),
        ("sharding", "fsdp"),
    ],
    &[
        ("mode", "inference"),
        ("cache", "quantized"),
        ("weights", "int8"),
        ("prompt", "512"),
        ("seq", "1024"),
        ("kept-scores", "scores-and-logits"),
    ],
    &[
        ("mode", "inference"),
        ("cache", "static"),
        ("max-cache-len", "4096"),
        ("weights", "int4"),
        ("int4-layout", "tinygemm"),
        ("kept-scores", "probs"),
        ("prompt", "100"),
    ],
    &[
        ("mode", "inference"),
        ("weights", "fp8"),
        ("quant-kernel", "torchao-wo"),
        ("quant-head", "true"),
        ("attention", "eager"),
    ],
    &[
        ("mode", "inference"),
        ("weights", "int8"),
        ("quant-kernel", "torchao-dq"),
        ("gpus", "2"),
        ("sharding", "pipeline"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("gpus", "8"),
        ("sharding", "tensor"),
        ("gpu", "h200"),
        ("max-model-len", "65536"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("gpus", "2"),
        ("sharding", "pipeline"),
        ("gpu", "h200"),
        ("enforce-eager", "true"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("cudagraph-mode", "piecewise"),
        ("profile-cudagraphs", "false"),
        ("gpu", "a100-80"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "sglang"),
        ("gpus", "4"),
        ("sharding", "tensor"),
        ("gpu", "h100-80"),
        ("mem-fraction-static", "0.8"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("quant", "Q8_0"),
        ("n-gpu-layers", "10"),
        ("flash-attn", "false"),
        ("ctx-size", "8192"),
        ("parallel", "4"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("n-gpu-layers", "0"),
        ("gpu-backend", "vulkan"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("ctx-size", "131072"),
        ("kq-mask", "f32"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("n-gpu-layers", "20"),
        ("offload-output", "last"),
        ("ubatch-size", "1024"),
        ("logit-rows", "ubatch"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("gpu-backend", "vulkan"),
        ("n-cpu-moe", "4"),
        ("cache-type-k", "q8_0"),
        ("cache-type-v", "q4_0"),
        ("gpus", "2"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "mlx"),
        ("mlx-bits", "3"),
        ("mlx-group-size", "32"),
        ("seq", "20100"),
        ("prompt", "20000"),
        ("kv-bits", "4"),
        ("prefill-step-size", "1000"),
    ],
    &[
        ("mode", "inference"),
        ("runtime", "mlx"),
        ("mlx-bits", "8"),
        ("seq", "9000"),
        ("prompt", "8000"),
        ("max-kv-size", "4096"),
    ],
];

/// [`MODES`], then inference under each runtime the registry holds.
fn modes() -> Vec<Vec<(&'static str, &'static str)>> {
    let runtimes = Runtime::ALL
        .iter()
        .map(|r| vec![("mode", "inference"), ("runtime", r.as_str())]);
    MODES.iter().map(|m| m.to_vec()).chain(runtimes).collect()
}

const VARIANT_MODELS: &[&str] = &[
    "llama-3.1-8b",
    "qwen3-30b-a3b",
    "deepseek-v3",
    "gemma-3-27b",
    "qwen3.5-9b",
    "gpt-oss-20b",
    "nemotron-3-nano-30b-a3b",
    "phi-3-mini",
    "qwen3-next-80b-a3b",
];

/// The estimate's formulas as arithmetic, or `None` for a combination the scenario refuses.
fn arithmetic(model: &str, pairs: &[(&str, &str)]) -> Option<Estimate> {
    let s = scenario(&[("model", model)], pairs);
    estimate::arithmetic(&s).ok()
}

#[test]
fn every_formulas_numbers_give_its_bytes() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    let modes = modes();
    let variants: Vec<Vec<_>> = VARIANTS.iter().map(|v| v.to_vec()).collect();
    let presets = PRESETS.iter().map(|p| (p.id, &modes));
    let variants = VARIANT_MODELS.iter().map(|&m| (m, &variants));
    for (model, settings) in presets.chain(variants) {
        for pairs in settings {
            let Some(e) = arithmetic(model, pairs) else {
                continue;
            };
            for c in &e.components {
                checked += 1;
                if let Err(why) = contains(&c.formula, c.bytes.0) {
                    wrong.push(format!(
                        "{model} {pairs:?} {}: {} ({why})",
                        c.label, c.formula
                    ));
                }
            }
        }
    }
    assert!(checked > 3000, "only {checked} components checked");
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn the_memory_estimate_is_the_estimate_less_its_formula_text_speed_and_command() {
    // The page's first module answers with it: the same bytes, labels, verdict and notes.
    let (mut compared, mut timed, mut commanded) = (0, 0, 0);
    for (model, mode) in [("llama-3.1-8b", "qlora"), ("qwen3-30b-a3b", "inference")] {
        for runtime in Runtime::ALL.iter().map(|r| r.as_str()) {
            let s = scenario(&[("model", model)], &[("mode", mode), ("runtime", runtime)]);
            let (Ok(mut shown), Ok(plain)) =
                (estimate::estimate(&s), estimate::estimate_memory(&s))
            else {
                continue;
            };
            assert!(plain.components.iter().all(|c| c.formula.is_empty()));
            assert!(plain.speed.is_none());
            assert!(plain.serving.as_ref().is_none_or(|v| v.command.is_none()));
            timed += usize::from(shown.speed.take().is_some());
            if let Some(serving) = shown.serving.as_mut() {
                commanded += usize::from(serving.command.take().is_some());
            }
            shown.components.iter_mut().for_each(|c| c.formula.clear());
            assert_eq!(shown, plain, "{model} {mode} {runtime}");
            compared += 1;
        }
    }
    assert!(compared >= 5, "only {compared} compared");
    assert!(timed >= 3, "only {timed} had a speed to leave out");
    assert!(
        commanded >= 3,
        "only {commanded} had a command to leave out"
    );
}

#[test]
fn the_text_users_read_has_the_same_components() {
    let s = scenario(&[("model", "llama-3.1-8b")], &[("mode", "qlora")]);
    let shown = estimate::estimate(&s).unwrap();
    let plain = estimate::arithmetic(&s).unwrap();
    let bytes = |e: &Estimate| {
        e.components
            .iter()
            .map(|c| (c.id.clone(), c.bytes))
            .collect::<Vec<_>>()
    };
    assert_eq!(bytes(&shown), bytes(&plain));
    for (text, arithmetic) in shown.components.iter().zip(&plain.components) {
        assert_ne!(text.formula, arithmetic.formula, "{}", text.label);
    }
}

#[test]
fn a_wrong_formula_is_caught() {
    assert!(contains("2 × 3", 6).is_ok());
    assert!(contains("2 × 3", 7).is_err());
    assert!(contains("8.03B × 2", 16_060_000_000).is_ok());
    assert!(contains("8.03B × 2", 16_200_000_000).is_err());
    assert!(contains("max(2048 × (2 + 8) − 1.5M, 0) ÷ ceil(7 ÷ 2)", 0).is_ok());
    assert!(contains("(1 − 0.25 + 0.25 ÷ 8) × 4.00M", 3_125_000).is_ok());
    assert!(contains("min(3, 2) × 2", 6).is_err());
    assert!(contains("2 ×", 2).is_err());
}

/// Whether `bytes` lies within what the arithmetic's printed numbers allow, and if not why.
fn contains(arithmetic: &str, bytes: u64) -> Result<(), String> {
    let range = Parser::new(arithmetic)?.whole()?;
    let bytes = bytes as f64;
    // Bytes are the value rounded (0 below zero); a few ulps for the arithmetic's own rounding.
    let slack = 0.5 + 1e-9 * range.hi.abs().max(range.lo.abs());
    let lo = range.lo.max(0.0);
    if bytes + slack >= lo && bytes - slack <= range.hi.max(0.0) {
        Ok(())
    } else {
        Err(format!("evaluates to {}..{}", range.lo, range.hi))
    }
}

/// The values an expression can have, given the rounding of each printed number.
#[derive(Clone, Copy, Debug)]
struct Range {
    lo: f64,
    hi: f64,
}

impl Range {
    fn of(products: [f64; 4]) -> Range {
        Range {
            lo: products.into_iter().fold(f64::INFINITY, f64::min),
            hi: products.into_iter().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    fn apply(self, op: char, b: Range) -> Range {
        let a = self;
        match op {
            '+' => Range {
                lo: a.lo + b.lo,
                hi: a.hi + b.hi,
            },
            '−' => Range {
                lo: a.lo - b.hi,
                hi: a.hi - b.lo,
            },
            '×' => Range::of([a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]),
            _ if b.lo <= 0.0 && b.hi >= 0.0 => Range {
                lo: f64::NEG_INFINITY,
                hi: f64::INFINITY,
            },
            _ => Range::of([a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi]),
        }
    }
}

/// A recursive-descent parser of `num()`'s numbers (with the suffixes T, B and M), `+ − × ÷`,
/// parentheses, and `max`, `min` and `ceil`.
struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn new(text: &str) -> Result<Parser, String> {
        if text.is_empty() {
            return Err("no arithmetic".to_string());
        }
        Ok(Parser {
            chars: text.chars().collect(),
            at: 0,
        })
    }

    fn peek(&mut self) -> Option<char> {
        while self.chars.get(self.at) == Some(&' ') {
            self.at += 1;
        }
        self.chars.get(self.at).copied()
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected {c:?} at {}", self.at))
        }
    }

    fn whole(mut self) -> Result<Range, String> {
        let range = self.sum()?;
        match self.peek() {
            None => Ok(range),
            Some(c) => Err(format!("unexpected {c:?} at {}", self.at)),
        }
    }

    fn sum(&mut self) -> Result<Range, String> {
        let mut range = self.product()?;
        while let Some(op @ ('+' | '−')) = self.peek() {
            self.at += 1;
            range = range.apply(op, self.product()?);
        }
        Ok(range)
    }

    fn product(&mut self) -> Result<Range, String> {
        let mut range = self.atom()?;
        while let Some(op @ ('×' | '÷')) = self.peek() {
            self.at += 1;
            range = range.apply(op, self.atom()?);
        }
        Ok(range)
    }

    fn atom(&mut self) -> Result<Range, String> {
        match self.peek() {
            Some('(') => {
                self.at += 1;
                let range = self.sum()?;
                self.expect(')')?;
                Ok(range)
            }
            Some('-') => {
                self.at += 1;
                let r = self.atom()?;
                Ok(Range {
                    lo: -r.hi,
                    hi: -r.lo,
                })
            }
            Some(c) if c.is_ascii_digit() => Ok(self.number()),
            Some(c) if c.is_ascii_alphabetic() => self.call(),
            other => Err(format!("unexpected {other:?} at {}", self.at)),
        }
    }

    fn call(&mut self) -> Result<Range, String> {
        let start = self.at;
        while self
            .chars
            .get(self.at)
            .is_some_and(char::is_ascii_alphabetic)
        {
            self.at += 1;
        }
        let name: String = self.chars[start..self.at].iter().collect();
        self.expect('(')?;
        let a = self.sum()?;
        let range = match name.as_str() {
            "ceil" => Range {
                lo: a.lo.ceil(),
                hi: a.hi.ceil(),
            },
            "max" | "min" => {
                self.expect(',')?;
                let b = self.sum()?;
                let pick = if name == "max" { f64::max } else { f64::min };
                Range {
                    lo: pick(a.lo, b.lo),
                    hi: pick(a.hi, b.hi),
                }
            }
            _ => return Err(format!("unknown function {name}")),
        };
        self.expect(')')?;
        Ok(range)
    }

    /// A number as `num()` prints it: whole, or to a few decimals, or to two decimals of a
    /// million, billion or trillion; the range is what rounds to it.
    fn number(&mut self) -> Range {
        let start = self.at;
        while self
            .chars
            .get(self.at)
            .is_some_and(|c| c.is_ascii_digit() || *c == '.')
        {
            self.at += 1;
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        let scale = match self.chars.get(self.at) {
            Some('T') => 1e12,
            Some('B') => 1e9,
            Some('M') => 1e6,
            _ => 1.0,
        };
        if scale > 1.0 {
            self.at += 1;
        }
        let value: f64 = digits.parse().expect("digits");
        // `num` prints two decimals of a million, billion or trillion, else at most three
        // (trailing zeros trimmed, so a whole number may stand for one within half a thousandth).
        let half = if scale > 1.0 { 0.005 * scale } else { 0.0005 };
        let value = value * scale;
        Range {
            lo: value - half,
            hi: value + half,
        }
    }
}
