//! The type `llama-quantize` gives each tensor for a file type: which tensors it quantizes at
//! all, the per-tensor mix (`llama_tensor_get_type_impl`), and the fallbacks for rows that are not
//! a whole number of blocks. With it the engine can size a `Q4_K_M` file for a model known only by
//! its shape, tensor by tensor, as llama.cpp would write it.
//!
//! Source: ggml-org/llama.cpp `src/llama-quant.cpp` @ `007dbbf3fd17eefe9b47fee45f48f7ba5e62b714`
//! (`tensor_allows_quantization`, `tensor_get_category`, `llama_tensor_get_type_impl`,
//! `tensor_type_fallback`, `llama_tensor_get_type`, `tensor_requires_imatrix`,
//! `init_quantize_state_counters`), with `llama-quantize`'s defaults: no `--pure`,
//! `--leave-output-tensor`, `--output-tensor-type`, `--token-embedding-type` or `--tensor-type`.
//! Differences from older builds worth knowing: at this commit `attn_qkv` and `attn_kv_b` take the
//! `attn_v` rules (their own `attn_qkv` branch comes after the `attn_v` one and is unreachable), a
//! Q2_K/Q3_K row that is not whole blocks falls back to Q4_0 (IQ4_NL before), and an imatrix is
//! required for IQ3_XXS targets too.
//!
//! llama.cpp keeps running counters while it walks the tensors in its loader's order (layer
//! number, then name): `i_attention_wv` counts the `attn_v`-like tensors seen so far,
//! `i_ffn_down`/`i_ffn_gate`/`i_ffn_up` the FFN tensors; MoE models (`n_expert > 1`) read the layer
//! from the `blk.N.` name instead. [`tensor_types`] replays that walk over a whole model, so it is
//! exact for any tensor list. [`tensor_type`] decides one tensor and models each counter as the
//! tensor's layer index, which is the same thing for a model with one `attn_v` and one `ffn_down`
//! per layer.
//!
//! Not modelled: the BailingMoE3 exception to MXFP4_MOE (its 3-D attention projections stay
//! Q8_0), and Q2_0.

use std::cmp::Ordering;
use std::fmt;

use crate::file_type::FileType;
use crate::types::GgmlType;

/// Architecture families whose rules differ. Only Falcon has its own rules in the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchFamily {
    /// `general.architecture = "falcon"` (`LLM_ARCH_FALCON`).
    Falcon,
    /// Every other architecture.
    Other,
}

impl ArchFamily {
    /// The family of a GGUF `general.architecture` value.
    pub fn from_architecture(architecture: &str) -> ArchFamily {
        if architecture == "falcon" {
            ArchFamily::Falcon
        } else {
            ArchFamily::Other
        }
    }
}

/// The model-wide facts the quantizer consults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantModel {
    pub family: ArchFamily,
    /// `n_layer` (llama.cpp's `n_layer_all`): the `ffn_down` rules count layers against it.
    pub n_layer: u32,
    /// Query heads of layer 0 (`n_gqa()` reads layer 0).
    pub n_head: u32,
    /// Key/value heads of layer 0.
    pub n_head_kv: u32,
    /// Routed experts; 0 or 1 for a dense model. Several rules test for exactly 8 (Mixtral).
    pub n_expert: u32,
    /// llama.cpp's `model.type == LLM_TYPE_70B`: bumps `attn_v` from Q3_K/Q4_K to Q5_K. See
    /// [`is_70b_class`].
    pub size_class_70b: bool,
    /// Whether an importance matrix is given (`--imatrix`). Changes a few IQ and Q4_0/Q5_0 rules,
    /// and the lowest-bit targets refuse to quantize without one.
    pub has_imatrix: bool,
}

impl QuantModel {
    /// A model without an importance matrix, its family and 70B class read from its GGUF
    /// architecture name.
    pub fn new(
        architecture: &str,
        n_layer: u32,
        n_head: u32,
        n_head_kv: u32,
        n_expert: u32,
    ) -> Self {
        QuantModel {
            family: ArchFamily::from_architecture(architecture),
            n_layer,
            n_head,
            n_head_kv,
            n_expert,
            size_class_70b: is_70b_class(architecture, n_layer, n_head, n_head_kv, n_expert),
            has_imatrix: false,
        }
    }

    /// Query heads per key/value head (`llama_hparams::n_gqa`), 0 without KV heads.
    pub fn n_gqa(&self) -> u32 {
        self.n_head.checked_div(self.n_head_kv).unwrap_or(0)
    }
}

/// Whether llama.cpp's loader labels the model `LLM_TYPE_70B`, the only size label the quantizer
/// reads. From the per-architecture size tables (`load_arch_hparams`): `llama` with 80 layers
/// and grouped KV heads (80 layers without GQA is LLaMA-1 65B; 8 experts is Mixtral), and `qwen2`
/// with 80 layers (Qwen2-72B). Other architectures' tables were not all read; they are `false`.
pub fn is_70b_class(
    architecture: &str,
    n_layer: u32,
    n_head: u32,
    n_head_kv: u32,
    n_expert: u32,
) -> bool {
    match architecture {
        "llama" => n_expert != 8 && n_layer == 80 && n_head != n_head_kv,
        "qwen2" => n_layer == 80,
        _ => false,
    }
}

/// One tensor as the quantizer sees it in the source (usually F16/BF16) file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantTensor<'a> {
    /// The GGUF name: `blk.7.attn_v.weight`, `token_embd.weight`, `blk.3.ffn_down_exps.weight`.
    pub name: &'a str,
    /// Dimensions, ne0 (the row length) first.
    pub dims: &'a [u64],
    /// The type in the source file, which tensors that are never quantized keep.
    pub source_type: GgmlType,
}

impl QuantTensor<'_> {
    fn row_length(&self) -> u64 {
        self.dims.first().copied().unwrap_or(1)
    }

    fn experts(&self) -> u64 {
        self.dims.get(2).copied().unwrap_or(1)
    }

    /// `ggml_n_dims`: trailing dimensions of 1 do not count, and a scalar has one dimension.
    fn significant_dims(&self) -> usize {
        self.dims.iter().rposition(|&d| d > 1).map_or(1, |i| i + 1)
    }
}

/// Why `llama-quantize` would stop instead of writing a file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuantizeError {
    /// An FFN tensor of an MoE model whose name has no `blk.N.` layer.
    NoLayerInName { tensor: String },
    /// An FFN tensor of an MoE model whose `blk.N.` is not below the layer count.
    LayerOutOfRange {
        tensor: String,
        layer: i64,
        n_layer: u32,
    },
    /// The row length is not a whole number of blocks and ggml has no smaller-block stand-in for
    /// the chosen type.
    NoFallback {
        tensor: String,
        ggml_type: GgmlType,
        row_length: u64,
    },
    /// The chosen type needs an importance matrix and none was given.
    NeedsImatrix { tensor: String, ggml_type: GgmlType },
}

impl fmt::Display for QuantizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuantizeError::NoLayerInName { tensor } => write!(
                f,
                "llama-quantize cannot place tensor `{tensor}` in a layer: MoE FFN tensors must \
                 be named `blk.N.…`"
            ),
            QuantizeError::LayerOutOfRange {
                tensor,
                layer,
                n_layer,
            } => write!(
                f,
                "tensor `{tensor}` is in layer {layer}, but the model has {n_layer} layers; check \
                 the layer count"
            ),
            QuantizeError::NoFallback {
                tensor,
                ggml_type,
                row_length,
            } => write!(
                f,
                "tensor `{tensor}` has rows of {row_length} values, not whole {} blocks of \
                 {ggml_type}, and llama-quantize has no fallback type for {ggml_type}; pick \
                 another file type",
                ggml_type.block_elements()
            ),
            QuantizeError::NeedsImatrix { tensor, ggml_type } => write!(
                f,
                "llama-quantize needs an importance matrix (--imatrix) to write tensor `{tensor}` \
                 as {ggml_type}; pick a file type of 3 bits or more, or say an imatrix is used"
            ),
        }
    }
}

impl std::error::Error for QuantizeError {}

/// The type llama-quantize writes for every tensor of a model, in the order given. Replays
/// llama.cpp's walk (layer number, then name) and its counters, so it is exact for any list.
pub fn tensor_types(
    file_type: FileType,
    model: &QuantModel,
    tensors: &[QuantTensor<'_>],
) -> Result<Vec<GgmlType>, QuantizeError> {
    let mut counters = Counters {
        attn_v_seen: 0,
        attn_v_total: tensors
            .iter()
            .filter(|t| Category::of(t.name).is_attn_v_like())
            .count()
            .try_into()
            .unwrap_or(i64::MAX),
        ffn_down_seen: 0,
        ffn_gate_seen: 0,
        ffn_up_seen: 0,
        tied_embeddings: !tensors
            .iter()
            .any(|t| Category::of(t.name) == Category::Output),
    };
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by(|&a, &b| loader_order(tensors[a].name, tensors[b].name));
    let mut types = vec![GgmlType::F32; tensors.len()];
    for index in order {
        if let (Some(tensor), Some(slot)) = (tensors.get(index), types.get_mut(index)) {
            *slot = choose(file_type, model, &NamedTensor::new(*tensor), &mut counters)?;
        }
    }
    Ok(types)
}

/// The type llama-quantize writes for one tensor. llama.cpp's running counters are modelled as
/// `layer` (its layer index), which is exact for models with one `attn_v`-like and one `ffn_down`
/// tensor per layer; use [`tensor_types`] for anything else. Without a separate `output.weight`,
/// `token_embd.weight` takes the output rules, as llama.cpp does for tied embeddings.
pub fn tensor_type(
    file_type: FileType,
    model: &QuantModel,
    tensor: &QuantTensor<'_>,
    layer: u32,
    has_output_tensor: bool,
) -> Result<GgmlType, QuantizeError> {
    NamedTensor::new(*tensor).type_at(file_type, model, layer, has_output_tensor)
}

/// What llama-quantize's rules read from a tensor's name: its role, whether the name allows
/// quantization, whether it is the embedding or output table. A `const fn`, so that a caller
/// with fixed names (the engine's tensor inventory, asked in every estimate) reads them at
/// compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameRules {
    category: Category,
    quantizable: bool,
    embedding_or_output: bool,
}

impl NameRules {
    pub const fn of(name: &str) -> NameRules {
        let bytes = name.as_bytes();
        NameRules {
            category: Category::of(name),
            quantizable: name_allows_quantization(name),
            embedding_or_output: bytes_eq(bytes, b"token_embd.weight")
                || bytes_eq(bytes, b"per_layer_token_embd.weight")
                || bytes_eq(bytes, b"output.weight"),
        }
    }
}

/// A tensor with its name read for llama-quantize's rules ([`NameRules`]) and its `blk.N.`.
#[derive(Debug, Clone, Copy)]
pub struct NamedTensor<'a> {
    tensor: QuantTensor<'a>,
    rules: NameRules,
    block: Option<i64>,
}

impl<'a> NamedTensor<'a> {
    pub fn new(tensor: QuantTensor<'a>) -> NamedTensor<'a> {
        NamedTensor::with_rules(tensor, NameRules::of(tensor.name))
    }

    /// A tensor whose name's rules were read already (`NameRules::of(tensor.name)`).
    pub fn with_rules(tensor: QuantTensor<'a>, rules: NameRules) -> NamedTensor<'a> {
        NamedTensor {
            tensor,
            rules,
            block: block_number(tensor.name),
        }
    }

    /// Whether llama-quantize's rules read this tensor's layer in this file type: the value
    /// tensors in the K-quant mixes that give some layers more bits, `ffn_down` in most mixes,
    /// `ffn_gate` and `ffn_up` only in IQ3_XS. Any other tensor has one type at every layer.
    pub fn reads_layer_in(&self, file_type: FileType) -> bool {
        use FileType as F;
        let lowest_bits = matches!(
            file_type,
            F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M
        );
        match self.rules.category {
            _ if file_type == F::MXFP4_MOE => false,
            c if c.is_attn_v_like() => {
                !lowest_bits && matches!(file_type, F::Q3_K_M | F::Q4_K_M | F::Q5_K_M | F::Q4_K_S)
            }
            Category::FfnDown => {
                lowest_bits
                    || matches!(
                        file_type,
                        F::Q2_K_S
                            | F::IQ3_XXS
                            | F::Q3_K_M
                            | F::IQ3_M
                            | F::Q4_K_M
                            | F::IQ4_NL
                            | F::IQ4_XS
                            | F::Q5_K_M
                            | F::Q4_K_S
                            | F::Q4_0
                            | F::Q5_0
                    )
            }
            Category::FfnGate | Category::FfnUp => file_type == F::IQ3_XS,
            _ => false,
        }
    }

    /// The same tensor in block `block` (`blk.N.` in its name), without writing the name again.
    pub fn in_block(self, block: u32) -> NamedTensor<'a> {
        NamedTensor {
            block: Some(i64::from(block)),
            ..self
        }
    }

    /// [`tensor_type`] for this tensor.
    pub fn type_at(
        &self,
        file_type: FileType,
        model: &QuantModel,
        layer: u32,
        has_output_tensor: bool,
    ) -> Result<GgmlType, QuantizeError> {
        let layer = i64::from(layer);
        let mut counters = Counters {
            attn_v_seen: layer,
            attn_v_total: i64::from(model.n_layer),
            ffn_down_seen: layer,
            ffn_gate_seen: layer,
            ffn_up_seen: layer,
            tied_embeddings: !has_output_tensor,
        };
        choose(file_type, model, self, &mut counters)
    }
}

/// llama.cpp's `quantize_state_impl` counters. Signed like the C `int`s, whose arithmetic
/// (`(i - n/8) % 3`) the rules copy.
struct Counters {
    attn_v_seen: i64,
    attn_v_total: i64,
    ffn_down_seen: i64,
    ffn_gate_seen: i64,
    ffn_up_seen: i64,
    tied_embeddings: bool,
}

/// `tensor_category`: broad roles found by name, in llama.cpp's order of tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    TokenEmbd,
    AttnQ,
    AttnV,
    AttnK,
    AttnQkv,
    AttnKvB,
    AttnOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other,
}

impl Category {
    const fn of(name: &str) -> Category {
        let name = name.as_bytes();
        if bytes_eq(name, b"output.weight") {
            return Category::Output;
        }
        if bytes_eq(name, b"token_embd.weight") || bytes_eq(name, b"per_layer_token_embd.weight") {
            return Category::TokenEmbd;
        }
        let by_substring: [(&[u8], Category); 10] = [
            (b"attn_qkv.weight", Category::AttnQkv),
            (b"attn_kv_b.weight", Category::AttnKvB),
            (b"attn_v.weight", Category::AttnV),
            (b"attn_k.weight", Category::AttnK),
            (b"attn_q.weight", Category::AttnQ),
            (b"attn_output.weight", Category::AttnOutput),
            (b"ffn_up", Category::FfnUp),
            (b"ffn_gate", Category::FfnGate),
            (b"ffn_down", Category::FfnDown),
            (b"", Category::Other),
        ];
        // The empty part matches every name, so the walk always ends with a category.
        let mut index = 0;
        while !bytes_contain(name, by_substring[index].0) {
            index += 1;
        }
        by_substring[index].1
    }

    /// `category_is_attn_v`: the tensors that carry values, more sensitive to quantization.
    fn is_attn_v_like(self) -> bool {
        matches!(
            self,
            Category::AttnV | Category::AttnQkv | Category::AttnKvB
        )
    }
}

/// `a == b`, usable in `const`.
const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `name` contains `part`, usable in `const`: [`NameRules`] of fixed names are found at
/// compile time.
const fn bytes_contain(name: &[u8], part: &[u8]) -> bool {
    let mut start = 0;
    while start + part.len() <= name.len() {
        let mut i = 0;
        while i < part.len() && name[start + i] == part[i] {
            i += 1;
        }
        if i == part.len() {
            return true;
        }
        start += 1;
    }
    false
}

/// `sscanf(name, "blk.%d.", &layer)`: the number after `blk.`, or `None` when there is none.
fn block_number(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("blk.")?;
    let (negative, digits) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let end = digits
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    // A number too long for an int is undefined behaviour in sscanf; saturating keeps it large.
    let magnitude = digits[..end].bytes().fold(0i64, |n, d| {
        n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// `weight_name_comparer`: by layer number (-1 outside blocks), then by name.
fn loader_order(a: &str, b: &str) -> Ordering {
    let layer = |name| block_number(name).unwrap_or(-1);
    layer(a).cmp(&layer(b)).then_with(|| a.cmp(b))
}

/// `tensor_allows_quantization` with llama-quantize's defaults, the part read from the name (the
/// other part: at least two dimensions).
const fn name_allows_quantization(name: &str) -> bool {
    let name = name.as_bytes();
    // llama.cpp tests `name.rfind("weight") == name.size() - 6`; for a 5-character name both sides
    // are SIZE_MAX, so such a name counts as ending in "weight".
    let ends_in_weight = name.len() == 5
        || (name.len() >= 6 && {
            let (_, tail) = name.split_at(name.len() - 6);
            bytes_eq(tail, b"weight")
        });
    if !ends_in_weight {
        return false;
    }
    const NEVER_QUANTIZED_PARTS: &[&[u8]] = &[
        b"_norm.weight",
        // the MoE router, and DeepSeek-V4's token-id -> expert-id table
        b"ffn_gate_inp.weight",
        b"ffn_gate_tid2eid.weight",
        // Gemma 3n's tiny altup/laurel matrices and per-layer projection
        b"altup",
        b"laurel",
        b"per_layer_model_proj",
        // Mamba/Kimi/LFM2 convolutions and MiniMax's indexer projections
        b"ssm_conv1d",
        b"shortconv.conv.weight",
        b"indexer.k_proj.weight",
        b"indexer.q_proj.weight",
        // RWKV's small 2-D weights
        b"time_mix_first.weight",
        b"time_mix_w0.weight",
        b"time_mix_w1.weight",
        b"time_mix_w2.weight",
        b"time_mix_v0.weight",
        b"time_mix_v1.weight",
        b"time_mix_v2.weight",
        b"time_mix_a0.weight",
        b"time_mix_a1.weight",
        b"time_mix_a2.weight",
        b"time_mix_g1.weight",
        b"time_mix_g2.weight",
        b"time_mix_decay_w1.weight",
        b"time_mix_decay_w2.weight",
        b"time_mix_lerp_fused.weight",
        // T5's relative position bias
        b"attn_rel_b.weight",
        // multimodal encoders' position and patch tensors, audio codebooks
        b".position_embd",
        b"sam.pos_embd",
        b"sam.neck.",
        b"sam.net_",
        b".rel_pos",
        b".patch_embd",
        b".patch_merger",
        b"a.rvq.codebook",
        b"mm.a.code_embd",
    ];
    // BERT's position embeddings and token types (`LLM_TN(arch)(LLM_TENSOR_POS_EMBD, "weight")`).
    const NEVER_QUANTIZED_NAMES: &[&[u8]] = &[b"position_embd.weight", b"token_types.weight"];
    let mut i = 0;
    while i < NEVER_QUANTIZED_PARTS.len() {
        if bytes_contain(name, NEVER_QUANTIZED_PARTS[i]) {
            return false;
        }
        i += 1;
    }
    let mut i = 0;
    while i < NEVER_QUANTIZED_NAMES.len() {
        if bytes_eq(name, NEVER_QUANTIZED_NAMES[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// `llama_tensor_get_type` plus the imatrix check of the quantize loop.
fn choose(
    file_type: FileType,
    model: &QuantModel,
    tensor: &NamedTensor<'_>,
    counters: &mut Counters,
) -> Result<GgmlType, QuantizeError> {
    if !tensor.rules.quantizable || tensor.tensor.significant_dims() < 2 {
        return Ok(tensor.tensor.source_type);
    }
    let default_type = file_type.default_type();
    let chosen = if default_type.is_quantized() {
        let mixed = mix(file_type, model, tensor, default_type, counters)?;
        fallback(&tensor.tensor, mixed)?
    } else {
        default_type
    };
    if !model.has_imatrix
        && !tensor.rules.embedding_or_output
        && requires_imatrix(chosen, file_type)
    {
        return Err(QuantizeError::NeedsImatrix {
            tensor: tensor.tensor.name.to_string(),
            ggml_type: chosen,
        });
    }
    Ok(chosen)
}

/// `use_more_bits`: the first and last eighth of the layers and every third one between, about
/// half of them.
fn use_more_bits(layer: i64, n_layers: i64) -> bool {
    layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2
}

/// The `layer_info` lambda: a dense model's layer is the running counter; an MoE model's comes
/// from the `blk.N.` name, because llama.cpp found its experts not stored in layer order.
fn layer_info(
    model: &QuantModel,
    tensor: &NamedTensor<'_>,
    counter: i64,
) -> Result<(i64, i64), QuantizeError> {
    let n_layer = i64::from(model.n_layer);
    if model.n_expert <= 1 {
        return Ok((counter, n_layer));
    }
    let layer = tensor.block.ok_or_else(|| QuantizeError::NoLayerInName {
        tensor: tensor.tensor.name.to_string(),
    })?;
    if layer < 0 || layer >= n_layer {
        return Err(QuantizeError::LayerOutOfRange {
            tensor: tensor.tensor.name.to_string(),
            layer,
            n_layer: model.n_layer,
        });
    }
    Ok((layer, n_layer))
}

/// `llama_tensor_get_type_impl`: the file type's per-tensor mix, `new_type` starting as the
/// file type's default type.
#[expect(
    clippy::too_many_lines,
    reason = "a port of llama.cpp's function, kept in its order to compare line by line"
)]
fn mix(
    file_type: FileType,
    model: &QuantModel,
    tensor: &NamedTensor<'_>,
    new_type: GgmlType,
    counters: &mut Counters,
) -> Result<GgmlType, QuantizeError> {
    use FileType as F;
    use GgmlType as T;
    let category = tensor.rules.category;
    let falcon = model.family == ArchFamily::Falcon;
    let n_expert = model.n_expert;
    let n_layer = i64::from(model.n_layer);
    let lowest_bits = matches!(
        file_type,
        F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M
    );
    let iq2_s_or_m = matches!(file_type, F::IQ2_S | F::IQ2_M);

    // Tied embeddings: the token embedding is also the output matrix, so it gets the output type.
    if category == Category::Output || (counters.tied_embeddings && category == Category::TokenEmbd)
    {
        let output = if file_type == F::MXFP4_MOE
            || falcon
            || !tensor
                .tensor
                .row_length()
                .is_multiple_of(new_type.block_elements())
        {
            T::Q8_0
        } else if matches!(
            file_type,
            F::IQ2_XXS | F::IQ2_XS | F::IQ3_XXS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M
        ) {
            T::Q5_K
        } else if new_type != T::Q8_0 {
            T::Q6_K
        } else {
            new_type
        };
        return Ok(output);
    }
    if file_type == F::MXFP4_MOE {
        // Routed experts are the 3-D tensors; everything else is Q8_0.
        return Ok(if tensor.tensor.experts() > 1 {
            T::MXFP4
        } else {
            T::Q8_0
        });
    }
    if category == Category::TokenEmbd {
        return Ok(match file_type {
            F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ1_M => T::Q2_K,
            F::IQ2_S | F::IQ2_M | F::IQ3_XXS => T::IQ3_S,
            F::TQ1_0 | F::TQ2_0 => T::Q4_K,
            _ => new_type,
        });
    }
    if lowest_bits {
        let mut chosen = new_type;
        if category.is_attn_v_like() {
            chosen = if model.n_gqa() >= 4 || n_expert >= 4 {
                T::Q4_K
            } else if iq2_s_or_m {
                T::IQ3_S
            } else {
                T::Q2_K
            };
            counters.attn_v_seen += 1;
        } else if n_expert == 8 && category == Category::AttnK {
            chosen = T::Q4_K;
        } else if category == Category::FfnDown {
            if counters.ffn_down_seen < n_layer / 8 {
                chosen = if iq2_s_or_m { T::IQ3_S } else { T::Q2_K };
            }
            counters.ffn_down_seen += 1;
        } else if category == Category::AttnOutput {
            if n_expert == 8 {
                chosen = T::Q5_K;
            } else if matches!(file_type, F::IQ1_S | F::IQ1_M) {
                chosen = T::IQ2_XXS;
            } else if iq2_s_or_m {
                chosen = T::IQ3_S;
            }
        }
        return Ok(chosen);
    }
    match category {
        c if c.is_attn_v_like() => {
            // A division, so found only for the tensors whose rules read it.
            let n_gqa = model.n_gqa();
            let i = counters.attn_v_seen;
            let mut chosen = match file_type {
                F::Q2_K if n_gqa >= 4 => T::Q4_K,
                F::Q2_K => T::Q3_K,
                F::Q2_K_S if n_gqa >= 4 => T::Q4_K,
                F::IQ3_XXS if n_gqa >= 4 => T::Q4_K,
                F::IQ3_XXS if !model.has_imatrix => T::IQ3_S,
                F::IQ3_XXS => T::IQ3_XXS,
                F::IQ3_XS | F::IQ3_S if n_gqa >= 4 => T::Q4_K,
                F::IQ3_M => T::Q4_K,
                F::Q3_K_M if i < 2 => T::Q5_K,
                F::Q3_K_M => T::Q4_K,
                F::Q3_K_L => T::Q5_K,
                F::IQ4_NL | F::IQ4_XS if n_gqa >= 4 => T::Q5_K,
                F::Q4_K_M | F::Q5_K_M if use_more_bits(i, counters.attn_v_total) => T::Q6_K,
                F::Q4_K_S if i < 4 => T::Q5_K,
                _ => new_type,
            };
            // The 70B's attn_v is 8x smaller than attn_q (8 query heads share each KV head), so
            // more bits cost little.
            if model.size_class_70b && matches!(chosen, T::Q3_K | T::Q4_K) {
                chosen = T::Q5_K;
            }
            if n_expert == 8 {
                chosen = T::Q8_0;
            }
            counters.attn_v_seen += 1;
            Ok(chosen)
        }
        Category::AttnK => Ok(match file_type {
            _ if n_expert == 8 => T::Q8_0,
            F::IQ3_XS => T::IQ3_XXS,
            F::IQ3_XXS => T::IQ2_S,
            _ => new_type,
        }),
        Category::AttnQ => Ok(match file_type {
            F::IQ3_XS => T::IQ3_XXS,
            F::IQ3_XXS => T::IQ2_S,
            _ => new_type,
        }),
        Category::FfnDown => {
            let (i, n) = layer_info(model, tensor, counters.ffn_down_seen)?;
            let chosen = match file_type {
                F::Q2_K => T::Q3_K,
                F::Q2_K_S if i < n / 8 => T::Q4_K,
                F::IQ3_XXS if !model.has_imatrix && i < n / 8 => T::Q4_K,
                F::IQ3_XXS if !model.has_imatrix => T::Q3_K,
                F::Q3_K_M if i < n / 16 => T::Q5_K,
                F::Q3_K_M if !falcon || use_more_bits(i, n) => T::Q4_K,
                F::Q3_K_M => T::Q3_K,
                F::IQ3_M if i < n / 8 || (n_expert == 8 && use_more_bits(i, n)) => T::Q4_K,
                F::Q3_K_L if falcon => T::Q4_K,
                F::Q3_K_L => T::Q5_K,
                F::Q4_K_M if falcon && i < n / 16 => T::Q6_K,
                F::Q4_K_M if falcon && use_more_bits(i, n) => T::Q5_K,
                F::Q4_K_M if falcon => T::Q4_K,
                F::Q4_K_M if use_more_bits(i, n) => T::Q6_K,
                F::IQ4_NL | F::IQ4_XS if i < n / 8 && !model.has_imatrix => T::Q5_K,
                F::Q5_K_M if use_more_bits(i, n) => T::Q6_K,
                F::Q4_K_S if !falcon && i < n / 8 => T::Q5_K,
                // Guards the first ffn_down layers of Q4_0/Q5_0, only with an imatrix so that a
                // plain quantization stays as it always was.
                F::Q4_0 if model.has_imatrix && i < n / 8 => T::Q4_1,
                F::Q5_0 if model.has_imatrix && i < n / 8 => T::Q5_1,
                _ => new_type,
            };
            counters.ffn_down_seen += 1;
            Ok(chosen)
        }
        Category::AttnOutput => Ok(match file_type {
            _ if falcon => {
                if file_type == F::Q3_K_L {
                    T::Q4_K
                } else {
                    new_type
                }
            }
            F::Q2_K
            | F::IQ3_XS
            | F::IQ3_XXS
            | F::Q3_K_S
            | F::Q3_K_M
            | F::IQ4_NL
            | F::Q4_K_S
            | F::Q4_K_M
            | F::IQ3_S
            | F::IQ3_M
            | F::IQ4_XS
                if n_expert == 8 =>
            {
                T::Q5_K
            }
            _ if n_expert == 8 => new_type,
            F::Q2_K => T::Q3_K,
            F::IQ3_XXS => T::IQ3_S,
            F::Q3_K_M | F::IQ3_M => T::Q4_K,
            F::Q3_K_L => T::Q5_K,
            _ => new_type,
        }),
        Category::FfnGate | Category::FfnUp => {
            let counter = if category == Category::FfnGate {
                &mut counters.ffn_gate_seen
            } else {
                &mut counters.ffn_up_seen
            };
            let (i, n) = layer_info(model, tensor, *counter)?;
            *counter += 1;
            Ok(if file_type == F::IQ3_XS && i >= n / 8 && i < 7 * n / 8 {
                T::IQ3_XXS
            } else {
                new_type
            })
        }
        _ => Ok(new_type),
    }
}

/// `tensor_type_fallback`: a row that is not whole blocks of the chosen type gets a type with
/// 32-element blocks, or F16 when even that does not divide it.
fn fallback(tensor: &QuantTensor<'_>, chosen: GgmlType) -> Result<GgmlType, QuantizeError> {
    use GgmlType as T;
    let row_length = tensor.row_length();
    if row_length.is_multiple_of(chosen.block_elements()) {
        return Ok(chosen);
    }
    let stand_in = match chosen {
        T::IQ1_S
        | T::IQ1_M
        | T::IQ2_XXS
        | T::IQ2_XS
        | T::IQ2_S
        | T::IQ3_XXS
        | T::IQ3_S
        | T::IQ4_XS => T::IQ4_NL,
        T::Q2_K | T::Q3_K | T::TQ1_0 | T::TQ2_0 => T::Q4_0,
        T::Q4_K => T::Q5_0,
        T::Q5_K => T::Q5_1,
        T::Q6_K => T::Q8_0,
        _ => {
            return Err(QuantizeError::NoFallback {
                tensor: tensor.name.to_string(),
                ggml_type: chosen,
                row_length,
            })
        }
    };
    Ok(if row_length.is_multiple_of(stand_in.block_elements()) {
        stand_in
    } else {
        T::F16
    })
}

/// `tensor_requires_imatrix`: the types whose quantization is garbage without importance data.
/// The embedding and output tensors are exempt ([`NamedTensor`] knows which they are).
fn requires_imatrix(chosen: GgmlType, file_type: FileType) -> bool {
    use GgmlType as T;
    match chosen {
        T::IQ3_XXS | T::IQ2_XXS | T::IQ2_XS | T::IQ2_S | T::IQ1_M | T::IQ1_S => true,
        // K-quants need no imatrix, except the Q2_K of a Q2_K_S file.
        T::Q2_K => file_type == FileType::Q2_K_S,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(n_layer: u32) -> QuantModel {
        QuantModel::new("llama", n_layer, 32, 8, 0)
    }

    fn one(
        file_type: FileType,
        model: &QuantModel,
        name: &str,
        dims: &[u64],
        layer: u32,
    ) -> GgmlType {
        let tensor = QuantTensor {
            name,
            dims,
            source_type: GgmlType::F16,
        };
        tensor_type(file_type, model, &tensor, layer, true).unwrap()
    }

    #[test]
    fn use_more_bits_picks_the_published_layers() {
        let picked: Vec<i64> = (0..32).filter(|&i| use_more_bits(i, 32)).collect();
        assert_eq!(
            picked,
            [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
    }

    #[test]
    fn norms_routers_and_vectors_keep_their_source_type() {
        let model = QuantModel::new("mixtral", 32, 32, 8, 8);
        for (name, dims) in [
            ("blk.0.attn_norm.weight", &[4096u64][..]),
            ("blk.0.ffn_gate_inp.weight", &[4096, 8][..]),
            ("blk.0.ssm_conv1d.weight", &[4, 8192][..]),
            ("blk.0.attn_q.bias", &[4096, 2][..]),
            ("rope_freqs.weight", &[64][..]),
            ("blk.0.wide.weight", &[4096, 1, 1][..]),
        ] {
            let tensor = QuantTensor {
                name,
                dims,
                source_type: GgmlType::F32,
            };
            assert_eq!(
                tensor_type(FileType::Q4_K_M, &model, &tensor, 0, true),
                Ok(GgmlType::F32),
                "{name}"
            );
        }
    }

    #[test]
    fn rows_that_are_not_whole_blocks_fall_back() {
        let model = dense(32);
        for (file_type, name, dims, layer, expected) in [
            // gpt-oss's 2880 = 11.25 blocks of 256 but 90 of 32.
            (
                FileType::Q4_K_M,
                "blk.1.attn_q.weight",
                [2880, 4096],
                1,
                GgmlType::Q5_0,
            ),
            (
                FileType::Q5_K_M,
                "blk.1.attn_q.weight",
                [2880, 4096],
                1,
                GgmlType::Q5_1,
            ),
            (
                FileType::Q4_K_M,
                "blk.0.attn_v.weight",
                [2880, 512],
                0,
                GgmlType::Q8_0,
            ),
            (
                FileType::IQ4_XS,
                "blk.1.attn_q.weight",
                [2880, 4096],
                1,
                GgmlType::IQ4_NL,
            ),
            (
                FileType::Q3_K_S,
                "blk.1.attn_q.weight",
                [2880, 4096],
                1,
                GgmlType::Q4_0,
            ),
            (
                FileType::Q4_K_M,
                "blk.1.attn_q.weight",
                [100, 4096],
                1,
                GgmlType::F16,
            ),
            // The output rule sends such a row straight to Q8_0.
            (
                FileType::Q4_K_M,
                "output.weight",
                [2880, 201088],
                0,
                GgmlType::Q8_0,
            ),
        ] {
            assert_eq!(
                one(file_type, &model, name, &dims, layer),
                expected,
                "{file_type} {name} {dims:?}"
            );
        }
        let tensor = QuantTensor {
            name: "blk.1.attn_q.weight",
            dims: &[100, 64],
            source_type: GgmlType::F16,
        };
        assert!(matches!(
            tensor_type(FileType::Q8_0, &model, &tensor, 1, true),
            Err(QuantizeError::NoFallback {
                ggml_type: GgmlType::Q8_0,
                row_length: 100,
                ..
            })
        ));
    }

    #[test]
    fn lowest_bit_types_need_an_imatrix() {
        let mut model = dense(32);
        let tensor = QuantTensor {
            name: "blk.3.attn_q.weight",
            dims: &[4096, 4096],
            source_type: GgmlType::F16,
        };
        let err = tensor_type(FileType::IQ2_XXS, &model, &tensor, 3, true).unwrap_err();
        assert!(err.to_string().contains("--imatrix"), "{err}");
        model.has_imatrix = true;
        assert_eq!(
            tensor_type(FileType::IQ2_XXS, &model, &tensor, 3, true),
            Ok(GgmlType::IQ2_XXS)
        );
        // The output and the token embedding never need one.
        model.has_imatrix = false;
        assert_eq!(
            one(
                FileType::IQ2_XXS,
                &model,
                "output.weight",
                &[4096, 32000],
                0
            ),
            GgmlType::Q5_K
        );
    }

    #[test]
    fn k_quant_mixes_follow_the_layer_rules() {
        let model = dense(32);
        let v = |ft, layer| {
            one(
                ft,
                &model,
                &format!("blk.{layer}.attn_v.weight"),
                &[4096, 1024],
                layer,
            )
        };
        let down = |ft, layer| {
            one(
                ft,
                &model,
                &format!("blk.{layer}.ffn_down.weight"),
                &[14336, 4096],
                layer,
            )
        };
        assert_eq!(
            [
                v(FileType::Q3_K_M, 0),
                v(FileType::Q3_K_M, 1),
                v(FileType::Q3_K_M, 2)
            ],
            [GgmlType::Q5_K, GgmlType::Q5_K, GgmlType::Q4_K]
        );
        assert_eq!(
            [down(FileType::Q3_K_M, 1), down(FileType::Q3_K_M, 2)],
            [GgmlType::Q5_K, GgmlType::Q4_K]
        );
        assert_eq!(
            [v(FileType::Q4_K_S, 3), v(FileType::Q4_K_S, 4)],
            [GgmlType::Q5_K, GgmlType::Q4_K]
        );
        assert_eq!(
            [down(FileType::Q4_K_S, 3), down(FileType::Q4_K_S, 4)],
            [GgmlType::Q5_K, GgmlType::Q4_K]
        );
        assert_eq!(v(FileType::Q2_K, 10), GgmlType::Q4_K, "n_gqa = 4");
        assert_eq!(
            one(
                FileType::Q2_K,
                &QuantModel::new("llama", 32, 32, 32, 0),
                "blk.1.attn_v.weight",
                &[4096, 4096],
                1
            ),
            GgmlType::Q3_K
        );
        assert_eq!(
            one(FileType::Q8_0, &model, "output.weight", &[4096, 32000], 0),
            GgmlType::Q8_0
        );
    }

    #[test]
    fn seventy_b_and_eight_expert_bumps() {
        let llama_70b = QuantModel::new("llama", 80, 64, 8, 0);
        assert!(llama_70b.size_class_70b);
        assert!(
            !QuantModel::new("llama", 80, 64, 64, 0).size_class_70b,
            "LLaMA-1 65B"
        );
        let mixtral = QuantModel::new("llama", 32, 32, 8, 8);
        for (model, name, dims, layer, expected) in [
            (
                &llama_70b,
                "blk.40.attn_v.weight",
                [8192, 1024],
                40,
                GgmlType::Q5_K,
            ),
            (
                &llama_70b,
                "blk.0.attn_v.weight",
                [8192, 1024],
                0,
                GgmlType::Q6_K,
            ),
            (
                &mixtral,
                "blk.5.attn_v.weight",
                [4096, 1024],
                5,
                GgmlType::Q8_0,
            ),
            (
                &mixtral,
                "blk.5.attn_k.weight",
                [4096, 1024],
                5,
                GgmlType::Q8_0,
            ),
            (
                &mixtral,
                "blk.5.attn_output.weight",
                [4096, 4096],
                5,
                GgmlType::Q5_K,
            ),
        ] {
            assert_eq!(
                one(FileType::Q4_K_M, model, name, &dims, layer),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn moe_layers_come_from_the_name() {
        let model = QuantModel::new("qwen3moe", 48, 32, 4, 128);
        // Counter 0, but the name says layer 47: use_more_bits(47, 48).
        assert_eq!(
            one(
                FileType::Q4_K_M,
                &model,
                "blk.47.ffn_down_exps.weight",
                &[768, 2048, 128],
                0
            ),
            GgmlType::Q6_K
        );
        assert_eq!(
            one(
                FileType::Q4_K_M,
                &model,
                "blk.10.ffn_down_exps.weight",
                &[768, 2048, 128],
                0
            ),
            GgmlType::Q4_K
        );
        let tensor = QuantTensor {
            name: "blk.48.ffn_down_exps.weight",
            dims: &[768, 2048, 128],
            source_type: GgmlType::BF16,
        };
        assert!(matches!(
            tensor_type(FileType::Q4_K_M, &model, &tensor, 0, true),
            Err(QuantizeError::LayerOutOfRange { layer: 48, .. })
        ));
        let tensor = QuantTensor {
            name: "ffn_down_exps.weight",
            dims: &[768, 2048, 128],
            source_type: GgmlType::BF16,
        };
        assert!(matches!(
            tensor_type(FileType::Q4_K_M, &model, &tensor, 0, true),
            Err(QuantizeError::NoLayerInName { .. })
        ));
    }

    #[test]
    fn mxfp4_moe_puts_experts_in_mxfp4_and_the_rest_in_q8_0() {
        let model = QuantModel::new("gpt-oss", 24, 64, 8, 32);
        assert_eq!(
            one(
                FileType::MXFP4_MOE,
                &model,
                "blk.0.ffn_up_exps.weight",
                &[2880, 2880, 32],
                0
            ),
            GgmlType::MXFP4
        );
        assert_eq!(
            one(
                FileType::MXFP4_MOE,
                &model,
                "blk.0.attn_q.weight",
                &[2880, 4096],
                0
            ),
            GgmlType::Q8_0
        );
        assert_eq!(
            one(
                FileType::MXFP4_MOE,
                &model,
                "output.weight",
                &[2880, 201088],
                0
            ),
            GgmlType::Q8_0
        );
    }

    #[test]
    fn unquantized_file_types_convert_every_matrix() {
        let model = dense(32);
        assert_eq!(
            one(FileType::F16, &model, "output.weight", &[4096, 32000], 0),
            GgmlType::F16
        );
        assert_eq!(
            one(FileType::BF16, &model, "blk.0.attn_q.weight", &[100, 7], 0),
            GgmlType::BF16
        );
    }

    #[test]
    fn loader_order_sorts_by_layer_number_then_name() {
        let mut names = [
            "blk.10.attn_v.weight",
            "output.weight",
            "blk.2.attn_v.weight",
            "blk.2.attn_k.weight",
            "token_embd.weight",
        ];
        names.sort_by(|a, b| loader_order(a, b));
        assert_eq!(
            names,
            [
                "output.weight",
                "token_embd.weight",
                "blk.2.attn_k.weight",
                "blk.2.attn_v.weight",
                "blk.10.attn_v.weight"
            ]
        );
        assert_eq!(block_number("blk.-3.x"), Some(-3));
        assert_eq!(block_number("blk.x"), None);
        assert_eq!(
            block_number("blk.99999999999999999999999.x"),
            Some(i64::MAX)
        );
    }

    #[test]
    fn tensors_whose_rules_do_not_read_their_layer_have_one_type_at_every_layer() {
        let models = [
            QuantModel::new("llama", 32, 32, 8, 0),
            QuantModel::new("llama", 80, 64, 8, 0),
            QuantModel::new("qwen3moe", 48, 32, 4, 128),
            QuantModel::new("mixtral", 32, 32, 8, 8),
            QuantModel::new("falcon", 60, 64, 8, 0),
        ];
        let tensors: [(&str, &[u64]); 12] = [
            ("attn_q.weight", &[4096, 4096]),
            ("attn_k.weight", &[4096, 1024]),
            ("attn_output.weight", &[4096, 4096]),
            ("attn_q_b.weight", &[1536, 4096]),
            ("ssm_in.weight", &[4096, 8192]),
            ("ffn_gate_inp.weight", &[4096, 128]),
            ("attn_v.weight", &[4096, 1024]),
            ("ffn_down_exps.weight", &[768, 2048, 128]),
            ("ffn_up_shexp.weight", &[4096, 1408]),
            ("ffn_up.weight", &[4096, 14336]),
            ("ffn_down.weight", &[14336, 4096]),
            ("ffn_gate_exps.weight", &[2048, 768, 128]),
        ];
        for model in &models {
            for file_type in &FileType::ALL {
                for (name, dims) in tensors {
                    let tensor = NamedTensor::new(QuantTensor {
                        name,
                        dims,
                        source_type: GgmlType::BF16,
                    });
                    let types: Vec<_> = (0..model.n_layer)
                        .map(|layer| {
                            tensor
                                .in_block(layer)
                                .type_at(*file_type, model, layer, true)
                        })
                        .collect();
                    let one_type = types.windows(2).all(|pair| pair[0] == pair[1]);
                    assert!(
                        tensor.reads_layer_in(*file_type) || one_type,
                        "{name} in {file_type:?} changes with the layer"
                    );
                }
            }
        }
    }
}
