//! Optimizers, and how many bytes of state each trainable parameter carries in them.

use crate::dtype::{BYTE, FP32_BYTES, HALF_BYTES, NIBBLE_BYTES};
use crate::wire::wire_enum;

wire_enum! {
    /// The optimizer, which sets how many bytes of state each trainable parameter carries.
    Optimizer {
        Adamw = "adamw" => "two fp32 moments per parameter",
        AdamwBf16 = "adamw-bf16" => "two bf16 moments (pure bf16 training)",
        Adamw8bit = "adamw-8bit" => "bitsandbytes AdamW8bit, two 8-bit moments",
        Adamw4bit = "adamw-4bit" => "torchao AdamW4bit",
        AdamwFp8 = "adamw-fp8" => "torchao AdamWFp8",
        Adafactor = "adafactor" => "factored second moment, no first moment",
        Sgd = "sgd" => "no state",
        SgdMomentum = "sgd-momentum" => "one fp32 momentum buffer",
        Lion = "lion" => "one fp32 moment",
        Lamb = "lamb" => "two fp32 moments, as AdamW",
        None = "none" => "no optimizer (a forward and backward pass only)",
    }
}

/// Block-wise quantized moments keep one fp32 scale per block of this many values: bitsandbytes'
/// 8-bit optimizers (`Optimizer8bit.init_state`: `blocksize = 256`, `absmax1`/`absmax2` in fp32;
/// Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization" §2.1) and torchao's
/// `AdamW8bit` and `AdamWFp8` (`block_size=256`, `scale` in fp32, torchao/optim/adam.py).
pub const OPTIMIZER_8BIT_BLOCK: f64 = 256.0;
/// torchao's `AdamW4bit` packs two 4-bit codes a byte with one fp32 scale per 128 values
/// (`block_size=128`, torchao/optim/subclass_4bit.py; Li et al. 2023, "Memory Efficient
/// Optimizers with 4-bit States").
pub const OPTIMIZER_4BIT_BLOCK: f64 = 128.0;

/// One moment quantized to `code_bytes` per value with an fp32 scale per `block` values.
fn blockwise_moment(code_bytes: f64, block: f64) -> f64 {
    code_bytes + FP32_BYTES / block
}

impl Optimizer {
    /// State bytes per trainable parameter for unfactored optimizers.
    /// AdamW/LAMB keep two moments (Loshchilov & Hutter 2019; You et al. 2020), Lion and SGD with
    /// momentum one (Chen et al. 2023). The 8-, 4-bit and fp8 AdamWs keep their two moments as
    /// codes plus a block scale ([`OPTIMIZER_8BIT_BLOCK`], [`OPTIMIZER_4BIT_BLOCK`]); both
    /// libraries keep tensors under 4096 values (norm weights, under 0.01% of an LLM's
    /// parameters) unquantized, which this count leaves at the quantized size.
    /// Adafactor is factored and is counted from matrix shapes instead; `None` here means "not
    /// per-parameter".
    pub fn state_bytes_per_param(self) -> Option<f64> {
        match self {
            Optimizer::Adamw | Optimizer::Lamb => Some(2.0 * FP32_BYTES),
            Optimizer::AdamwBf16 => Some(2.0 * HALF_BYTES),
            Optimizer::Adamw8bit | Optimizer::AdamwFp8 => {
                Some(2.0 * blockwise_moment(BYTE, OPTIMIZER_8BIT_BLOCK))
            }
            Optimizer::Adamw4bit => {
                Some(2.0 * blockwise_moment(NIBBLE_BYTES, OPTIMIZER_4BIT_BLOCK))
            }
            Optimizer::Lion | Optimizer::SgdMomentum => Some(FP32_BYTES),
            Optimizer::Sgd | Optimizer::None => Some(0.0),
            Optimizer::Adafactor => None,
        }
    }

    /// Bytes per element of the temporary the update of torch's AdamW computes before it applies
    /// itself: `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)` in the multi-tensor
    /// step (`_multi_tensor_adam`), `denom = exp_avg_sq.sqrt().add_(eps)` in the per-parameter one
    /// (torch/optim/adam.py, torch 2.11; transformers' old `AdamW`), both in the second moment's
    /// dtype; every other operation updates in place. bitsandbytes' 8-bit kernels and Adafactor
    /// update in place, torchao's low-bit AdamWs compile each parameter's step into one kernel
    /// (`single_param_adam`), and Lion and LAMB are not torch's, so they count none.
    pub fn step_temporary_bytes_per_element(self) -> f64 {
        match self {
            Optimizer::Adamw => FP32_BYTES,
            Optimizer::AdamwBf16 => HALF_BYTES,
            _ => 0.0,
        }
    }

    /// The part of [`Self::state_bytes_per_param`] in the moments' own buffers (without block
    /// scales): what bitsandbytes' paged optimizers place in CUDA managed memory.
    pub fn moment_bytes_per_param(self) -> Option<f64> {
        match self {
            Optimizer::Adamw8bit | Optimizer::AdamwFp8 => Some(2.0 * BYTE),
            Optimizer::Adamw4bit => Some(2.0 * NIBBLE_BYTES),
            other => other.state_bytes_per_param(),
        }
    }
}

wire_enum! {
    /// How PyTorch applies the optimizer's update: the `foreach` and `fused` arguments of
    /// torch.optim.AdamW (torch/optim/optimizer.py `_default_to_fused_or_foreach`).
    OptimizerStep {
        Foreach = "foreach" => "multi-tensor, torch's default: a temporary sqrt(v) of every parameter",
        Fused = "fused" => "one fused kernel (fused=True; transformers' default from torch 2.8): no temporary",
        ForLoop = "for-loop" => "one parameter at a time (foreach=False; transformers' adamw_hf): the largest tensor's",
        /// torchtune's `optimizer_in_bwd`: one optimizer per parameter, stepped in its
        /// post-accumulate-grad hook, which then frees the gradient.
        InBackward = "in-backward" => "in backward, one gradient at a time (torchtune optimizer_in_bwd)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_adamw_steps_through_one_copy_of_its_second_moment() {
        for optimizer in [Optimizer::Adamw, Optimizer::AdamwBf16] {
            let moments = optimizer.state_bytes_per_param().unwrap();
            assert_eq!(optimizer.step_temporary_bytes_per_element(), moments / 2.0);
        }
        for in_place in [Optimizer::Adamw8bit, Optimizer::Sgd, Optimizer::Adafactor] {
            assert_eq!(in_place.step_temporary_bytes_per_element(), 0.0);
        }
    }

    /// torchao's low-bit optimizer README (Llama2-7B, full bf16): 16-bit → 8-bit moments save
    /// about 2 B − 1.016 B per moment, 8-bit → 4-bit about 1.016 B − 0.531 B.
    #[test]
    fn quantized_moments_carry_their_block_scales() {
        let eight = Optimizer::Adamw8bit.state_bytes_per_param().unwrap();
        let four = Optimizer::Adamw4bit.state_bytes_per_param().unwrap();
        let fp8 = Optimizer::AdamwFp8.state_bytes_per_param().unwrap();
        assert!((eight - 2.0 * (1.0 + 4.0 / 256.0)).abs() < 1e-12);
        assert!((four - 2.0 * (0.5 + 4.0 / 128.0)).abs() < 1e-12);
        assert_eq!(eight, fp8);
        assert!(four < eight && eight < Optimizer::AdamwBf16.state_bytes_per_param().unwrap());
        assert_eq!(Optimizer::Adamw8bit.moment_bytes_per_param(), Some(2.0));
        assert_eq!(Optimizer::Adamw4bit.moment_bytes_per_param(), Some(1.0));
        assert_eq!(Optimizer::Adamw.moment_bytes_per_param(), Some(8.0));
    }
}
