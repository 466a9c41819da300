//! Tensor lists of real checkpoints, generated from their `config.json` in the naming the
//! publishers use, because the lists themselves cannot be downloaded here. Each quantizer's layout
//! is taken from its source (cited per [`Quant`] variant); `tests/fixtures.rs` checks the sums
//! against published checkpoint sizes.

use serde_json::Value;
use vramfit_safetensors::Dtype;

/// One tensor as a safetensors header lists it: name, dtype, shape (outermost first).
pub type Tensor = (String, Dtype, Vec<u64>);

/// How a checkpoint stores its linear layers' weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quant {
    /// Unquantized, in this dtype.
    Dense(Dtype),
    /// AutoAWQ GEMM, 4 bits, fp16 rest: `qweight` I32 `[in, out/8]`, `qzeros` I32
    /// `[in/group, out/8]`, `scales` F16 `[in/group, out]` (`WQLinear_GEMM.__init__`,
    /// casper-hansen/AutoAWQ@88e4c76b20755db275574e6a03c83c84ba3bece5:awq/modules/linear/gemm.py).
    Awq { group: u64 },
    /// Fine-grained FP8 (Qwen's and DeepSeek's `quant_method: fp8`): `weight` F8_E4M3 `[out, in]`
    /// and `weight_scale_inv` F32 `[ceil(out/b), ceil(in/b)]` (transformers
    /// `integrations/finegrained_fp8.py` `FP8Linear.__init__`, public code index id 142273899).
    Fp8Block { block: u64 },
    /// compressed-tensors `pack-quantized`, 4-bit symmetric groups: `weight_packed` I32
    /// `[out, in/8]`, `weight_scale` BF16 `[out, in/group]`, `weight_shape` I64 `[2]` (it is
    /// `torch.tensor(weight.shape)`; `compression_param_info` says int32 but `compress_weight`
    /// saves int64) (neuralmagic/compressed-tensors@52792be02ec09e59f3517104e755a02d0e003fbb:
    /// src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py).
    PackW4 { group: u64 },
    /// bitsandbytes NF4 with double quantization, blocksize 64: `weight` U8 `[n/2, 1]`,
    /// `weight.absmax` U8 `[n/64]`, `weight.quant_map` F32 `[16]`, `weight.nested_absmax` F32
    /// `[ceil(n/64/256)]`, `weight.nested_quant_map` F32 `[256]`, and
    /// `weight.quant_state.bitsandbytes__nf4`, the JSON of the non-tensor state as U8
    /// (`QuantState.as_dict(packed=True)` and `pack_dict_to_tensor`,
    /// bitsandbytes-foundation/bitsandbytes@95f9af309d4d5793847169c39288dcd3fcbdf564:
    /// bitsandbytes/functional.py, bitsandbytes/utils.py; `Linear4bit._save_to_state_dict` prefixes
    /// `weight.`). The names without the nested pair match a published NF4 index
    /// (reubzdubz/Molmo7B_D_NF4Quant@edf464b955f389104b80bd57a9ecf52ce5530552:
    /// model.safetensors.index.json).
    BnbNf4,
}

/// The shape keys of a decoder-only transformer's `config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub intermediate: u64,
    pub vocab: u64,
    pub tied: bool,
    /// Qwen3's per-head `q_norm` and `k_norm`.
    pub qk_norm: bool,
    /// Routed experts and their width (Qwen3-MoE: no shared expert).
    pub experts: Option<(u64, u64)>,
}

impl Shape {
    /// The shape keys of a parsed `config.json`; `head_dim` defaults to hidden / heads, as
    /// transformers' `LlamaConfig` does.
    pub fn from_config(config: &Value) -> Shape {
        let key = |k: &str| config.get(k).and_then(Value::as_u64);
        let hidden = key("hidden_size").unwrap_or(0);
        let heads = key("num_attention_heads").unwrap_or(1);
        let model_type = config.get("model_type").and_then(Value::as_str);
        let intermediate = key("intermediate_size").unwrap_or(0);
        let experts = key("num_experts")
            .or_else(|| key("num_local_experts"))
            .map(|n| (n, key("moe_intermediate_size").unwrap_or(intermediate)));
        Shape {
            layers: key("num_hidden_layers").unwrap_or(0),
            hidden,
            heads,
            kv_heads: key("num_key_value_heads").unwrap_or(heads),
            head_dim: key("head_dim").unwrap_or(hidden / heads.max(1)),
            intermediate,
            vocab: key("vocab_size").unwrap_or(0),
            tied: config.get("tie_word_embeddings").and_then(Value::as_bool) == Some(true),
            qk_norm: matches!(model_type, Some("qwen3" | "qwen3_moe")),
            experts,
        }
    }
}

/// The dtype of what a quantizer leaves alone (embeddings, norms, the LM head, routers).
fn rest_dtype(quant: Quant) -> Dtype {
    match quant {
        Quant::Dense(dtype) => dtype,
        Quant::Awq { .. } => Dtype::F16,
        _ => Dtype::BF16,
    }
}

/// Every tensor of a Llama/Qwen-style decoder in transformers' state-dict order: embeddings,
/// then per layer attention, MLP (or experts and router), norms; then the final norm and the LM
/// head unless tied (`modeling_llama.py`, `modeling_qwen3.py`, `modeling_qwen3_moe.py`).
pub fn decoder(shape: &Shape, quant: Quant) -> Vec<Tensor> {
    let rest = rest_dtype(quant);
    let mut out = vec![t(
        "model.embed_tokens.weight",
        rest,
        &[shape.vocab, shape.hidden],
    )];
    for layer in 0..shape.layers {
        let p = format!("model.layers.{layer}");
        attention(&mut out, &p, shape, quant);
        match shape.experts {
            Some((n, width)) => {
                for e in 0..n {
                    mlp(
                        &mut out,
                        &format!("{p}.mlp.experts.{e}"),
                        shape.hidden,
                        width,
                        quant,
                    );
                }
                out.push(t(&format!("{p}.mlp.gate.weight"), rest, &[n, shape.hidden]));
            }
            None => mlp(
                &mut out,
                &format!("{p}.mlp"),
                shape.hidden,
                shape.intermediate,
                quant,
            ),
        }
        for norm in ["input_layernorm", "post_attention_layernorm"] {
            out.push(t(&format!("{p}.{norm}.weight"), rest, &[shape.hidden]));
        }
    }
    out.push(t("model.norm.weight", rest, &[shape.hidden]));
    if !shape.tied {
        out.push(t("lm_head.weight", rest, &[shape.vocab, shape.hidden]));
    }
    out
}

fn attention(out: &mut Vec<Tensor>, p: &str, shape: &Shape, quant: Quant) {
    let (h, q, kv) = (
        shape.hidden,
        shape.heads * shape.head_dim,
        shape.kv_heads * shape.head_dim,
    );
    linear(out, &format!("{p}.self_attn.q_proj"), q, h, quant);
    linear(out, &format!("{p}.self_attn.k_proj"), kv, h, quant);
    linear(out, &format!("{p}.self_attn.v_proj"), kv, h, quant);
    linear(out, &format!("{p}.self_attn.o_proj"), h, q, quant);
    if shape.qk_norm {
        let rest = rest_dtype(quant);
        out.push(t(
            &format!("{p}.self_attn.q_norm.weight"),
            rest,
            &[shape.head_dim],
        ));
        out.push(t(
            &format!("{p}.self_attn.k_norm.weight"),
            rest,
            &[shape.head_dim],
        ));
    }
}

fn mlp(out: &mut Vec<Tensor>, p: &str, hidden: u64, width: u64, quant: Quant) {
    linear(out, &format!("{p}.gate_proj"), width, hidden, quant);
    linear(out, &format!("{p}.up_proj"), width, hidden, quant);
    linear(out, &format!("{p}.down_proj"), hidden, width, quant);
}

/// The tensors one `nn.Linear(in, out)` (no bias) is saved as under `quant`.
pub fn linear(out: &mut Vec<Tensor>, p: &str, o: u64, i: u64, quant: Quant) {
    let name = |suffix: &str| format!("{p}.{suffix}");
    match quant {
        Quant::Dense(dtype) => out.push((name("weight"), dtype, vec![o, i])),
        Quant::Awq { group } => {
            out.push((name("qweight"), Dtype::I32, vec![i, o / 8]));
            out.push((name("qzeros"), Dtype::I32, vec![i / group, o / 8]));
            out.push((name("scales"), Dtype::F16, vec![i / group, o]));
        }
        Quant::Fp8Block { block } => {
            out.push((name("weight"), Dtype::F8_E4M3, vec![o, i]));
            let scales = vec![o.div_ceil(block), i.div_ceil(block)];
            out.push((name("weight_scale_inv"), Dtype::F32, scales));
        }
        Quant::PackW4 { group } => {
            out.push((name("weight_packed"), Dtype::I32, vec![o, i.div_ceil(8)]));
            out.push((name("weight_scale"), Dtype::BF16, vec![o, i / group]));
            out.push((name("weight_shape"), Dtype::I64, vec![2]));
        }
        Quant::BnbNf4 => bnb_nf4(out, p, o, i),
    }
}

fn bnb_nf4(out: &mut Vec<Tensor>, p: &str, o: u64, i: u64) {
    let n = o * i;
    let blocks = n.div_ceil(64);
    out.push((format!("{p}.weight"), Dtype::U8, vec![n.div_ceil(2), 1]));
    out.push((format!("{p}.weight.absmax"), Dtype::U8, vec![blocks]));
    out.push((format!("{p}.weight.quant_map"), Dtype::F32, vec![16]));
    out.push((
        format!("{p}.weight.nested_absmax"),
        Dtype::F32,
        vec![blocks.div_ceil(256)],
    ));
    out.push((
        format!("{p}.weight.nested_quant_map"),
        Dtype::F32,
        vec![256],
    ));
    let state = nf4_state_json(o, i);
    out.push((
        format!("{p}.weight.quant_state.bitsandbytes__nf4"),
        Dtype::U8,
        vec![state.len() as u64],
    ));
}

/// What `json.dumps` writes for a nested NF4 state's non-tensor entries, in `as_dict`'s order.
/// `nested_offset` is the mean of the layer's absmax in a real file, so its digits (and this
/// blob's length, by a few bytes) differ per layer there; a fixed value stands in.
pub fn nf4_state_json(o: u64, i: u64) -> String {
    format!(
        "{{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"bfloat16\", \"shape\": [{o}, {i}], \
         \"nested_blocksize\": 256, \"nested_dtype\": \"float32\", \"nested_offset\": 0.0218505859375}}"
    )
}

/// gpt-oss in OpenAI's published layout: bf16 attention (with biases and `sinks`), router and
/// embeddings; each layer's experts fused as MXFP4 `*_blocks` (U8, 16 bytes per 32 values) and
/// `*_scales` (U8, one E8M0 per 32 values) with bf16 biases (transformers
/// `integrations/mxfp4.py` and `convert_gpt_oss_weights_to_hf.py` name them so).
pub fn gpt_oss(shape: &Shape) -> Vec<Tensor> {
    let (h, bf) = (shape.hidden, Dtype::BF16);
    let (n, width) = shape.experts.unwrap_or((0, 0));
    let (q, kv) = (
        shape.heads * shape.head_dim,
        shape.kv_heads * shape.head_dim,
    );
    let mut out = vec![t("model.embed_tokens.weight", bf, &[shape.vocab, h])];
    for layer in 0..shape.layers {
        let p = format!("model.layers.{layer}");
        out.push(t(&format!("{p}.input_layernorm.weight"), bf, &[h]));
        for (proj, o, i) in [
            ("q_proj", q, h),
            ("k_proj", kv, h),
            ("v_proj", kv, h),
            ("o_proj", h, q),
        ] {
            out.push(t(&format!("{p}.self_attn.{proj}.weight"), bf, &[o, i]));
            out.push(t(&format!("{p}.self_attn.{proj}.bias"), bf, &[o]));
        }
        out.push(t(&format!("{p}.self_attn.sinks"), bf, &[shape.heads]));
        out.push(t(&format!("{p}.post_attention_layernorm.weight"), bf, &[h]));
        out.push(t(&format!("{p}.mlp.router.weight"), bf, &[n, h]));
        out.push(t(&format!("{p}.mlp.router.bias"), bf, &[n]));
        for (proj, o, i) in [("gate_up_proj", 2 * width, h), ("down_proj", h, width)] {
            let e = format!("{p}.mlp.experts.{proj}");
            out.push(t(&format!("{e}_blocks"), Dtype::U8, &[n, o, i / 32, 16]));
            out.push(t(&format!("{e}_scales"), Dtype::U8, &[n, o, i / 32]));
            out.push(t(&format!("{e}_bias"), bf, &[n, o]));
        }
    }
    out.push(t("model.norm.weight", bf, &[h]));
    out.push(t("lm_head.weight", bf, &[shape.vocab, h]));
    out
}

fn t(name: &str, dtype: Dtype, shape: &[u64]) -> Tensor {
    (name.to_string(), dtype, shape.to_vec())
}

/// The bytes of a tensor list (what every fixture test sums).
pub fn tensor_bytes(tensors: &[Tensor]) -> u64 {
    tensors
        .iter()
        .map(|(_, dtype, shape)| dtype.bytes_for(shape.iter().product()).unwrap_or(0))
        .sum()
}
