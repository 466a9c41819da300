//! What the GPU is asked to run: the mode, the formula that estimates it, activation
//! checkpointing, the attention kernel, the head on top of the model and float8 linears.

use crate::dtype::Dtype;
use crate::wire::wire_enum;

wire_enum! {
    /// What the GPU is asked to do.
    Mode {
        Inference = "inference" => "load the model and run it",
        Full = "full" => "train every weight",
        Lora = "lora" => "train low-rank adapters on frozen 16-bit weights",
        Qlora = "qlora" => "train low-rank adapters on a quantized base model",
    }
}

impl Mode {
    pub fn is_training(self) -> bool {
        self != Mode::Inference
    }

    pub fn is_adapter(self) -> bool {
        matches!(self, Mode::Lora | Mode::Qlora)
    }

    /// The weight format each mode starts from when the scenario leaves `weights` unset.
    pub fn default_weights(self) -> Dtype {
        match self {
            Mode::Qlora => Dtype::Nf4,
            _ => Dtype::Bf16,
        }
    }
}

wire_enum! {
    /// Which formula family produces the estimate.
    Method {
        /// Chapter 62's formula, reproduced exactly.
        Lesson = "lesson" => "chapter 62's formula",
        /// Per-tensor accounting calibrated against published measurements.
        Detailed = "detailed" => "every tensor PyTorch keeps; matches real GPUs",
    }
}

wire_enum! {
    /// Activation checkpointing (Chen et al. 2016; selective as in Korthikanti et al. 2022).
    Checkpointing {
        None = "none" => "keep every activation",
        Selective = "selective" => "recompute the attention scores",
        /// torchtitan's op-level selective checkpointing (`selective_ac_option = "op"`).
        Op = "op" => "keep attention and every other matmul's output (torchtitan)",
        Full = "full" => "keep each layer's input, recompute the rest",
    }
}

wire_enum! {
    /// How the training loss turns the LM head's logits into cross-entropy.
    Loss {
        /// `F.cross_entropy` over the whole logits: their fp32 upcast and log-softmax, and in
        /// the backward pass its fp32 gradient.
        Whole = "whole" => "whole logits, their fp32 log-probs and gradient (F.cross_entropy)",
        /// torchtune's chunked loss: the fp32 upcast exists one sequence chunk at a time.
        Chunked = "chunked" => "over sequence chunks (no whole fp32 logits)",
        /// Megatron-LM's vocab-parallel cross-entropy computes the fp32 softmax in place and
        /// turns it into its own gradient.
        InPlace = "in-place" => "fp32 softmax that becomes its own gradient (Megatron-LM)",
        /// Apple's Cut Cross-Entropy (axolotl's `cut_cross_entropy`): the loss is computed from
        /// the hidden states block by block, so no logits tensor exists.
        Cce = "cce" => "never builds the logits (Cut Cross-Entropy)",
    }
}

wire_enum! {
    /// The format the training loss reads the LM head's logits in.
    LogitsDtype {
        /// transformers' `ForCausalLMLoss` upcasts first (`logits = logits.float()` in
        /// src/transformers/loss/loss_utils.py, read at 4.46.0, 4.57.1 and 5.24.0), as torchtune's
        /// `compute_cross_entropy` does; under `torch.autocast`, `cross_entropy` and
        /// `log_softmax` run in fp32 whatever their input (PyTorch's autocast op reference).
        Fp32 = "fp32" => "upcast to fp32 before the loss (transformers, torchtune, any loss under autocast)",
        /// A 16-bit model's `F.cross_entropy` outside autocast, with no upcast: the
        /// log-softmax and its gradient come out in the logits' own format.
        Activations = "activations" => "the loss runs in the logits' own 16-bit format (no upcast, no autocast)",
    }
}

wire_enum! {
    /// What a trainer does to a k-bit model's other parameters before adding adapters.
    KbitPrep {
        None = "none" => "the parameters left unquantized stay in the compute format",
        /// peft's `prepare_model_for_kbit_training` (src/peft/utils/other.py, read at 0.4.0,
        /// 0.10.0, 0.17.1 and 0.21.2): every fp16/bf16 parameter that is not a 4-bit weight
        /// (`Params4bit`, excluded since 0.10 for bf16 quant storage) becomes fp32, the norms,
        /// embeddings and unquantized LM head included. GPTQ, AQLM, EETQ, HQQ and torchao
        /// models are left as loaded.
        Peft = "peft" => "peft's prepare_model_for_kbit_training: bitsandbytes models' 16-bit parameters (norms, embeddings, head) to fp32",
    }
}

wire_enum! {
    /// What tensor parallelism does with the activations it does not split by heads or the MLP's
    /// width: the norms, dropouts and residual stream (Korthikanti et al. 2022, §4.2).
    SequenceParallel {
        /// DTensor's plan (torchtitan `apply_tp`, torchtune, Lightning): norms run
        /// `SequenceParallel`, and q/k/v and gate/up save the all-gathered input they read.
        Dtensor = "dtensor" => "norms split; the gathered inputs of q/k/v and gate/up kept whole (torchtitan, torchtune, Lightning)",
        /// Megatron-LM's `--sequence-parallel`: the linears save their sequence-sharded input
        /// and gather it again in the backward pass.
        Megatron = "megatron" => "everything split; inputs gathered again in backward (Megatron-LM --sequence-parallel)",
        /// Tensor parallelism alone (Megatron-LM without `--sequence-parallel`).
        Off = "off" => "norms and dropouts whole on every tensor-parallel GPU (Megatron-LM without --sequence-parallel)",
    }
}

wire_enum! {
    /// torchao's float8 training of the blocks' linear layers (`Float8Linear`, torchtitan's
    /// float8 converter; every block linear, the LM head left in bf16), with dynamic tensorwise
    /// scaling, torchtitan's default recipe. Today's `matmul_with_hp_or_float8_args` (torchao
    /// since #2594) saves the bf16 input and the weight, as `nn.Linear` does, and casts in the
    /// backward (earlier releases saved fp8 copies); under checkpointing none of it outlives the
    /// layer, and torchtitan's op-level policy recomputes every `_scaled_mm`.
    Float8 {
        Off = "off" => "bf16",
        Tensorwise = "tensorwise" => "fp8 matmuls, bf16 all-gather",
        /// `enable_fsdp_float8_all_gather`: each shard is cast to fp8 before the all-gather.
        Gather = "fp8-gather" => "fp8 matmuls and all-gather",
    }
}

impl Float8 {
    pub fn is_on(self) -> bool {
        self != Float8::Off
    }
}

wire_enum! {
    /// The attention kernel: eager materialises the s×s score matrix, flash/SDPA does not (Dao et al. 2022).
    Attention {
        Eager = "eager" => "materialises the s×s scores",
        Flash = "flash" => "FlashAttention or SDPA: no scores kept",
    }
}

wire_enum! {
    /// What sits on top of the last hidden state.
    Head {
        /// A language-model head over the vocabulary: logits and cross-entropy scale with b·s·vocab.
        Lm = "lm" => "language-model head over the vocabulary",
        /// A small classification head (BERT-style fine-tunes): its logits are negligible.
        Classifier = "classifier" => "a small classification head",
    }
}

wire_enum! {
    /// What an MLA model (DeepSeek-V3, Kimi K2) keeps in its KV cache per token and layer.
    MlaCache {
        /// vLLM's and SGLang's MLA backends cache the compressed latent and the shared RoPE key.
        Latent = "latent" => "the latent and RoPE key (vLLM, SGLang)",
        /// transformers' DeepseekV3Attention caches the keys and values it decompressed, per head.
        Expanded = "expanded" => "every head's keys and values (transformers)",
    }
}

wire_enum! {
    /// transformers' KV cache class in `generate()` (`cache_implementation`;
    /// src/transformers/cache_utils.py, v4.56+).
    KvCache {
        /// `DynamicCache`: grows with the sequence; sliding-window layers keep their window
        /// (`DynamicSlidingWindowLayer`).
        Dynamic = "dynamic" => "DynamicCache: grows to seq; sliding-window layers keep their window",
        /// `StaticCache` (which took over `HybridCache`): allocated once at `max_cache_len`,
        /// sliding-window layers at their window.
        Static = "static" => "StaticCache / HybridCache: allocated at max-cache-len; sliding-window layers at their window",
        /// `QuantizedCache` with quanto's defaults: every layer at full length, quantized to
        /// 4 bits in groups of 64 except the newest `residual_length` tokens.
        Quantized = "quantized" => "QuantizedCache (quanto int4, groups of 64, last 128 tokens unquantized)",
    }
}

wire_enum! {
    /// What a `generate` loop keeps of each new token's distribution over the vocabulary until it
    /// returns. transformers' `_sample` (generation/utils.py) copies the last position's logits to
    /// fp32 (`outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32)`) and, with
    /// `return_dict_in_generate`, appends the processed scores (`output_scores`) and the raw
    /// logits (`output_logits`) to tuples it returns; gpt-fast's `decode_n_tokens` (torchao's
    /// `_models/llama/generate.py` @e08b467e6) appends every decode step's probabilities,
    /// `next_prob.clone()`, in the model's dtype.
    KeptScores {
        None = "none" => "nothing (generate's default)",
        Scores = "scores" => "transformers output_scores: one fp32 b × vocab tensor per new token",
        ScoresAndLogits = "scores-and-logits" => "transformers output_scores and output_logits: two fp32 tensors per new token",
        Probs = "probs" => "gpt-fast / torchao generate.py: each decode step's probabilities in the activation dtype",
    }
}
