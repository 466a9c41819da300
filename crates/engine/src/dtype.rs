//! Number formats: what a weight, gradient, activation or cached key takes in memory.

use crate::wire::wire_enum;

/// Bytes of one fp32 value: optimizer moments, master weights, norm upcasts, log-probs.
pub const FP32_BYTES: f64 = 4.0;
/// Bytes of one fp16 or bf16 value.
pub const HALF_BYTES: f64 = 2.0;
/// Bytes of one 8-bit value (fp8, int8, a boolean mask).
pub const BYTE: f64 = 1.0;
/// Bytes of one 4-bit value: two share a byte.
pub const NIBBLE_BYTES: f64 = 0.5;

wire_enum! {
    /// A number format for weights, gradients, optimizer math, activations or the KV cache.
    Dtype {
        Fp32 = "fp32" => "32-bit float",
        Fp16 = "fp16" => "16-bit float",
        Bf16 = "bf16" => "bfloat16",
        Fp8 = "fp8" => "8-bit float, E4M3",
        Int8 = "int8" => "LLM.int8, one scale per output row",
        Int4 = "int4" => "GPTQ/AWQ-style, a scale and zero point per group",
        Nf4 = "nf4" => "bitsandbytes 4-bit NormalFloat, one absmax per block",
        Mxfp4 = "mxfp4" => "OCP microscaling 4-bit float, an 8-bit scale per 32",
    }
}

wire_enum! {
    /// Which linear layers a quantized weight format covers. Embeddings, norms and the router
    /// stay in the compute dtype either way.
    QuantScope {
        AllLinear = "all-linear" => "every linear layer in the blocks",
        /// gpt-oss ships MXFP4 experts and bf16 attention (`modules_to_not_convert`).
        Experts = "experts" => "only the routed experts",
    }
}

wire_enum! {
    /// The library that runs QLoRA's frozen NF4 projections, which decides what each keeps for the
    /// backward pass. bitsandbytes' `MatMul4Bit.forward` kept its input (`ctx.tensors = (A, B)`)
    /// until 0.43.2 dropped it (commit 9e753741, "delete useless buffered activation": `(None,
    /// B)`); torchao's `LinearNF4` (torchtune's QLoRA) saves only the NF4 weight and dequantizes it
    /// again in backward (`ctx.save_for_backward(weight)`), and always double-quantizes its scalers.
    Nf4Kernel {
        Bnb = "bnb" => "bnb 0.43.2+: keeps no input",
        BnbLegacy = "bnb-legacy" => "bnb to 0.43.1: keeps its input",
        Torchao = "torchao" => "torchao NF4: keeps no input",
    }
}

wire_enum! {
    /// What runs int8 and fp8 linears in inference, which decides what each matmul allocates
    /// beside its output. torchao's eager weight-only kernels (pytorch/ao@92dd5f557
    /// dtypes/affine_quantized_tensor.py) multiply a dequantized copy of the weight:
    /// `_linear_fp_act_int8_weight_impl` casts the int8 weight to the input's dtype, and
    /// `_linear_fp_act_fp8_weight_impl` runs `F.linear(x, weight.dequantize())`, whose
    /// `_dequantize_affine_no_dtype_check` casts to bf16 and then multiplies by the scale, two
    /// copies at once. Its dynamic kernels quantize each input per row instead: int8 through
    /// `_int_mm`'s int32 product, float8 through `_scaled_mm`, which writes the 16-bit output.
    QuantKernel {
        Auto = "auto" => "LLM.int8 for int8, fp8 matmuls for fp8",
        WeightOnly = "torchao-wo" => "torchao weight-only: each weight dequantized per matmul",
        Dynamic = "torchao-dq" => "torchao dynamic: each input quantized per row",
    }
}

wire_enum! {
    /// How int4 weights keep their scales and zero points, per `int4-group` weights. GPTQ and AWQ
    /// checkpoints (AutoGPTQ's `QuantLinear`, AutoAWQ's `WQLinear`) store an fp16 `scales` value
    /// and a 4-bit `qzeros` value packed in int32; torchao's `int4_weight_only` (tinygemm,
    /// `TensorCoreTiledLayout`) keeps one bf16 scale and one bf16 zero in `scale_and_zero`.
    Int4Layout {
        Gptq = "gptq" => "GPTQ/AWQ: fp16 scale, 4-bit zero",
        Tinygemm = "tinygemm" => "torchao: bf16 scale and zero",
    }
}

impl Int4Layout {
    /// Bytes of one group's scale and zero point.
    pub fn group_bytes(self) -> f64 {
        match self {
            Int4Layout::Gptq => HALF_BYTES + NIBBLE_BYTES,
            Int4Layout::Tinygemm => HALF_BYTES + HALF_BYTES,
        }
    }
}

impl Nf4Kernel {
    /// Whether a frozen NF4 projection keeps its input for the backward pass.
    pub fn keeps_input(self) -> bool {
        self == Nf4Kernel::BnbLegacy
    }
}

impl Dtype {
    /// Storage per element.
    pub fn bytes(self) -> f64 {
        match self {
            Dtype::Fp32 => FP32_BYTES,
            Dtype::Fp16 | Dtype::Bf16 => HALF_BYTES,
            Dtype::Fp8 | Dtype::Int8 => BYTE,
            Dtype::Int4 | Dtype::Nf4 | Dtype::Mxfp4 => NIBBLE_BYTES,
        }
    }

    /// Quantized formats apply to the transformer's linear layers only; embeddings, the LM head and
    /// norms stay in the compute dtype (bitsandbytes, GPTQ and torchao all skip them by default).
    pub fn is_quantized(self) -> bool {
        matches!(
            self,
            Dtype::Fp8 | Dtype::Int8 | Dtype::Int4 | Dtype::Nf4 | Dtype::Mxfp4
        )
    }

    /// Formats autograd can store activations and gradients in.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::Fp32 | Dtype::Fp16 | Dtype::Bf16)
    }
}
