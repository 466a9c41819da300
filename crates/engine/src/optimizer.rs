//! Optimizers, and how many bytes of state each trainable parameter carries in them.

use crate::dtype::{BYTE, FP32_BYTES, HALF_BYTES};
use crate::wire::wire_enum;

wire_enum! {
    /// The optimizer, which sets how many bytes of state each trainable parameter carries.
    Optimizer {
        Adamw = "adamw" => "two fp32 moments per parameter",
        AdamwBf16 = "adamw-bf16" => "two bf16 moments (pure bf16 training)",
        Adamw8bit = "adamw-8bit" => "bitsandbytes AdamW8bit, two 8-bit moments",
        Adafactor = "adafactor" => "factored second moment, no first moment",
        Sgd = "sgd" => "no state",
        SgdMomentum = "sgd-momentum" => "one fp32 momentum buffer",
        Lion = "lion" => "one fp32 moment",
        Lamb = "lamb" => "two fp32 moments, as AdamW",
        None = "none" => "no optimizer (a forward and backward pass only)",
    }
}

impl Optimizer {
    /// State bytes per trainable parameter for unfactored optimizers.
    /// AdamW/LAMB keep two moments (Loshchilov & Hutter 2019; You et al. 2020), Lion and SGD with
    /// momentum one (Chen et al. 2023), bitsandbytes' 8-bit AdamW two 1-byte moments (Dettmers et al.
    /// 2022, "8-bit Optimizers via Block-wise Quantization"). Adafactor is factored and is counted from
    /// matrix shapes instead; `None` here means "not per-parameter".
    pub fn state_bytes_per_param(self) -> Option<f64> {
        match self {
            Optimizer::Adamw | Optimizer::Lamb => Some(2.0 * FP32_BYTES),
            Optimizer::AdamwBf16 => Some(2.0 * HALF_BYTES),
            Optimizer::Adamw8bit => Some(2.0 * BYTE),
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
    /// update in place, and Lion and LAMB are not torch's, so they count none.
    pub fn step_temporary_bytes_per_element(self) -> f64 {
        match self {
            Optimizer::Adamw => FP32_BYTES,
            Optimizer::AdamwBf16 => HALF_BYTES,
            _ => 0.0,
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
}
