//! A GGUF file's header, read into what the planner needs: the architecture from the metadata
//! (llama.cpp's `{arch}.*` keys, so the KV shape is the file's) and the exact bytes of every tensor,
//! grouped as llama.cpp places them ([`FileWeights`]). The CLI's `--gguf` and the page's dropped
//! file both come through [`read_gguf`]; what it gives is applied as ordinary scenario fields.
//!
//! Key names and per-architecture rules: ggml-org/llama.cpp `src/llama-arch.cpp` (`LLM_KV_*`
//! names) and `src/llama-model.cpp` `load_hparams` (sliding-window patterns: `set_swa_pattern(n)`
//! makes layer `il` sliding when `il % n < n − 1`; Gemma 2 and gpt-oss use 2, Cohere 2 uses 4,
//! Gemma 3 uses 6, and files that write `attention.sliding_window_pattern` give it per layer).

use super::{Architecture, Mla, Moe, Recurrent, Rope, Window};
use crate::units::group_thousands;
use std::fmt;
use vramfit_gguf::{parse_header, FileType, Header, MetaArray, MetaValue, ParseError, PerLayer};

/// What to read from the start of a file first: most headers fit (a 128k-token vocabulary takes
/// 2–8 MiB); a longer one answers [`GgufError::Truncated`] with how much it needs.
pub const GGUF_FIRST_READ_BYTES: usize = 8 << 20;

/// The most blocks a [`FileWeights`] holds (llama.cpp's `LLAMA_MAX_LAYERS`).
pub(super) const MAX_BLOCKS: usize = 512;

/// One block's tensors (`blk.N.*`) in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockBytes {
    /// Every tensor of the block.
    pub bytes: u64,
    /// The largest one: what ggml-cuda copies to the GPU for a large batch when the block stays
    /// in system RAM.
    pub largest: u64,
    /// The routed experts (`*_exps`), which `--n-cpu-moe` keeps in system RAM.
    pub experts: u64,
}

/// A GGUF file's tensor bytes as llama.cpp places them: `token_embd` (always in system RAM), the
/// output part (the output matrix, its norm and any other tensor outside the blocks; a tied
/// model's output is `token_embd` duplicated), and each block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileWeights {
    pub token_embd: u64,
    pub output: u64,
    pub blocks: Vec<BlockBytes>,
}

impl FileWeights {
    /// The tensor data the GPU and system RAM hold together (a tied output counted again).
    pub fn total(&self) -> u64 {
        self.blocks
            .iter()
            .fold(self.token_embd.saturating_add(self.output), |sum, b| {
                sum.saturating_add(b.bytes)
            })
    }

    /// The wire form: `token_embd,output,block…` in bytes, the blocks as [`format_blocks`]
    /// writes them.
    pub fn format(&self) -> String {
        format!(
            "{},{}{}",
            self.token_embd,
            self.output,
            format_blocks(&self.blocks)
        )
    }

    /// Reads [`FileWeights::format`]'s form.
    pub fn parse(text: &str) -> Result<FileWeights, String> {
        let syntax = "token_embd,output,block… in bytes (set by --gguf or a dropped .gguf file)";
        let mut parts = text.split(',');
        let (Some(embd), Some(output)) = (parts.next(), parts.next()) else {
            return Err(format!("expected {syntax}"));
        };
        Ok(FileWeights {
            token_embd: byte_count(embd)?,
            output: byte_count(output)?,
            blocks: parse_blocks(parts, syntax)?,
        })
    }
}

/// `,bytes:largest[:experts]` for each block, a run of equal blocks written once with `*count`.
pub(super) fn format_blocks(blocks: &[BlockBytes]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while let Some(block) = blocks.get(i) {
        let run = blocks[i..].iter().take_while(|b| *b == block).count();
        out.push_str(&format!(",{}:{}", block.bytes, block.largest));
        if block.experts > 0 {
            out.push_str(&format!(":{}", block.experts));
        }
        if run > 1 {
            out.push_str(&format!("*{run}"));
        }
        i += run;
    }
    out
}

/// Reads [`format_blocks`]'s parts (split at the commas): at least one block, at most
/// [`MAX_BLOCKS`].
pub(super) fn parse_blocks<'a>(
    parts: impl Iterator<Item = &'a str>,
    syntax: &str,
) -> Result<Vec<BlockBytes>, String> {
    let mut blocks = Vec::new();
    for part in parts {
        let (block, run) = match part.split_once('*') {
            Some((block, run)) => (block, byte_count(run)?),
            None => (part, 1),
        };
        let mut fields = block.split(':');
        let mut next = || fields.next().map(byte_count).transpose();
        let bytes = next()?.ok_or_else(|| format!("expected {syntax}"))?;
        let largest = next()?.unwrap_or(0);
        let experts = next()?.unwrap_or(0);
        if largest > bytes || experts > bytes {
            return Err(format!(
                "a block's largest tensor or experts exceed its {bytes} bytes"
            ));
        }
        let room = MAX_BLOCKS - blocks.len();
        if run > room as u64 || run == 0 {
            return Err(format!("from 1 to {MAX_BLOCKS} blocks"));
        }
        let block = BlockBytes {
            bytes,
            largest,
            experts,
        };
        blocks.extend(std::iter::repeat_n(block, run as usize));
    }
    if blocks.is_empty() {
        return Err(format!("expected {syntax}"));
    }
    Ok(blocks)
}

/// A whole number of bytes (or of blocks in a run).
pub(super) fn byte_count(part: &str) -> Result<u64, String> {
    part.trim()
        .parse::<u64>()
        .map_err(|_| format!("`{}` is not a byte count", part.trim()))
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GgufError {
    /// The header runs past the bytes given: read at least this many from the file's start.
    Truncated { needed_at_least: u64 },
    /// Not a GGUF header llama.cpp would read.
    Unreadable(String),
    /// Metadata the shape needs, by its key.
    Missing(Vec<String>),
    /// Tensors outside the blocks the file declares, or too many blocks.
    Layout(String),
}

impl fmt::Display for GgufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GgufError::Truncated { needed_at_least } => write!(
                f,
                "the GGUF header needs the first {needed_at_least} bytes of the file"
            ),
            GgufError::Unreadable(reason) => f.write_str(reason),
            GgufError::Missing(keys) => write!(f, "the GGUF metadata lacks {}", keys.join(", ")),
            GgufError::Layout(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for GgufError {}

impl From<ParseError> for GgufError {
    fn from(e: ParseError) -> Self {
        match e {
            ParseError::Truncated { needed_at_least } => GgufError::Truncated { needed_at_least },
            other => GgufError::Unreadable(other.to_string()),
        }
    }
}

/// What a GGUF header gave.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufModel {
    /// `general.name`, when the file has one.
    pub name: Option<String>,
    /// `general.architecture`.
    pub architecture: String,
    pub arch: Architecture,
    /// `general.file_type`, when it names a llama.cpp file type.
    pub file_type: Option<FileType>,
    /// The context the model was trained for (`{arch}.context_length`).
    pub context_length: Option<u64>,
    pub weights: FileWeights,
    /// All tensor data in the file, exact.
    pub tensor_bytes: u64,
    /// What the file says that the estimate does not model, each named.
    pub warnings: Vec<String>,
}

impl GgufModel {
    /// The scenario fields the file sets: llama.cpp inference, its file type, its tensors and its
    /// whole shape (so nothing is left from a preset or an earlier paste).
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("model", String::new()),
            ("params", String::new()),
            ("mode", "inference".to_string()),
            ("runtime", "llama.cpp".to_string()),
            ("gguf-weights", self.weights.format()),
        ];
        if let Some(file_type) = self.file_type {
            pairs.push(("quant", file_type.name().to_string()));
        }
        pairs.extend(self.arch.pairs());
        pairs
    }

    /// One line for people: the name, architecture, file type, exact tensor bytes and the trained
    /// context.
    pub fn summary(&self) -> String {
        let name = self.name.as_deref().unwrap_or("a model");
        let file_type = self
            .file_type
            .map_or("an unnamed file type", FileType::name);
        let trained = match self.context_length {
            // llama-server without `-c` starts from this length: ctx-size=auto plans for it.
            Some(tokens) => format!(
                " Trained for {tokens} tokens (llama-server's context without -c: ctx-size=auto)."
            ),
            None => String::new(),
        };
        format!(
            "Read {name} ({}, {} layers, {file_type}): {} B of tensors ({:.2} GiB).{trained}",
            self.architecture,
            self.arch.layers,
            group_thousands(self.tensor_bytes),
            self.tensor_bytes as f64 / f64::from(1u32 << 30)
        )
    }
}

/// Reads a GGUF header from the first bytes of a file: any prefix that holds the whole header.
pub fn read_gguf(prefix: &[u8]) -> Result<GgufModel, GgufError> {
    let header = parse_header(prefix)?;
    match header.u64_key("split.count") {
        Some(count) if count > 1 => Err(GgufError::Layout(format!(
            "this is one of {count} shards of a split file; read every shard (the CLI's --gguf \
             reads them from the first)"
        ))),
        _ => model_of(header),
    }
}

/// Reads a file `gguf-split` cut into shards: the first shard's header holds every key and its
/// own tensors, each other shard's only its tensors (llama.cpp's `split.no`, `split.count`).
/// `first` and each of `others` are prefixes holding a shard's whole header.
pub fn read_gguf_split(first: &[u8], others: &[&[u8]]) -> Result<GgufModel, GgufError> {
    let mut header = parse_header(first)?;
    let count = header.u64_key("split.count").unwrap_or(1);
    if count != others.len() as u64 + 1 {
        return Err(GgufError::Layout(format!(
            "the first shard says split.count {count}, but {} shards were read",
            others.len() + 1
        )));
    }
    for prefix in others {
        header.tensors.extend(parse_header(prefix)?.tensors);
    }
    model_of(header)
}

fn model_of(header: Header) -> Result<GgufModel, GgufError> {
    let architecture = header
        .architecture()
        .ok_or_else(|| GgufError::Missing(vec!["general.architecture".into()]))?
        .to_string();
    let mut warnings = Vec::new();
    let weights = file_weights(&header)?;
    let arch = shape(&header, &architecture, &weights, &mut warnings)?;
    if weights.blocks.len() != arch.layers as usize {
        return Err(GgufError::Layout(format!(
            "{architecture}.block_count is {} but the file has tensors for {} blocks",
            arch.layers,
            weights.blocks.len()
        )));
    }
    if header.file_type().is_none() {
        warnings.push(match header.file_type_id() {
            Some(id) => format!("general.file_type {id} is not a llama.cpp file type vramfit knows; the tensors' own types are used"),
            None => "no general.file_type; the tensors' own types are used".to_string(),
        });
    }
    Ok(GgufModel {
        name: header.string("general.name").map(str::to_string),
        file_type: header.file_type(),
        context_length: header.arch_u64("context_length"),
        tensor_bytes: header.tensor_bytes_total().unwrap_or(0),
        architecture,
        arch,
        weights,
        warnings,
    })
}

/// Groups the tensors as llama.cpp's loader places them.
fn file_weights(header: &Header) -> Result<FileWeights, GgufError> {
    let declared = header.arch_u64("block_count").unwrap_or(0);
    let mut weights = FileWeights::default();
    for tensor in &header.tensors {
        let bytes = tensor.bytes().unwrap_or(0);
        let block = tensor
            .name
            .strip_prefix("blk.")
            .and_then(|rest| rest.split_once('.'))
            .and_then(|(index, role)| Some((index.parse::<usize>().ok()?, role)));
        match block {
            Some((index, role)) => {
                if index >= MAX_BLOCKS || index as u64 >= declared.max(1) {
                    return Err(GgufError::Layout(format!(
                        "tensor {} is past the {declared} blocks the file declares",
                        tensor.name
                    )));
                }
                if weights.blocks.len() <= index {
                    weights.blocks.resize(index + 1, BlockBytes::default());
                }
                let b = &mut weights.blocks[index];
                b.bytes = b.bytes.saturating_add(bytes);
                b.largest = b.largest.max(bytes);
                if role.contains("_exps") {
                    b.experts = b.experts.saturating_add(bytes);
                }
            }
            None if tensor.name == "token_embd.weight" => weights.token_embd = bytes,
            None => weights.output = weights.output.saturating_add(bytes),
        }
    }
    // A tied model's output layer is token_embd loaded a second time (`TENSOR_DUPLICATED`).
    if is_tied(header) {
        weights.output = weights.output.saturating_add(weights.token_embd);
    }
    Ok(weights)
}

/// The sliding-window pattern llama.cpp applies for architectures that do not write one.
fn swa_pattern(architecture: &str) -> Option<u64> {
    match architecture {
        "gemma2" | "gpt-oss" => Some(2),
        "cohere2" => Some(4),
        "gemma3" => Some(6),
        _ => None,
    }
}

fn per_layer_max(value: &PerLayer) -> u64 {
    value.max().unwrap_or(0)
}

/// A size as the shape holds it, saturated at `u32::MAX`.
fn to_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// A tied model has no `output.weight`: its output layer is `token_embd`.
fn is_tied(header: &Header) -> bool {
    !header.tensors.iter().any(|t| t.name == "output.weight")
}

/// The architecture the metadata states, read part by part; the parts run in the order their
/// warnings are listed.
fn shape(
    header: &Header,
    architecture: &str,
    weights: &FileWeights,
    warnings: &mut Vec<String>,
) -> Result<Architecture, GgufError> {
    let meta = Metadata {
        header,
        architecture,
    };
    let sizes = meta.dense_sizes(warnings)?;
    let mut arch = meta.dense_shape(&sizes);
    arch.window = meta.window(sizes.layers, warnings);
    arch.recurrent = meta.recurrent(&sizes, warnings);
    // A recurrent layer's mixer replaces its attention.
    arch.no_attention = arch.recurrent.layers;
    let rope_dim = meta.int("rope.dimension_count").unwrap_or(0);
    arch.mla = meta.latent_attention(sizes.head_dim, rope_dim, warnings);
    arch.moe = meta.experts(sizes.ffn, weights, warnings);
    arch.rope = meta.rope(to_u32(rope_dim), to_u32(sizes.head_dim), arch.mla.is_mla());
    arch.mtp_layers = to_u32(meta.int("nextn_predict_layers").unwrap_or(0));
    Ok(arch)
}

/// The dense transformer's sizes as the file writes them, before the shape saturates them to
/// `u32`.
struct DenseSizes {
    layers: u64,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    /// Layers with 0 KV heads: a hybrid's recurrent layers.
    kv_less_layers: u64,
    head_dim: u64,
    ffn: u64,
    vocab: u64,
}

/// A file's `{arch}.*` metadata and tensors, which the shape is read from.
struct Metadata<'a> {
    header: &'a Header,
    architecture: &'a str,
}

impl Metadata<'_> {
    fn key(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.architecture)
    }

    fn int(&self, suffix: &str) -> Option<u64> {
        self.header.arch_u64(suffix)
    }

    /// Whether some block holds a tensor whose name contains `role`.
    fn has_block_tensor(&self, role: &str) -> bool {
        self.header
            .tensors
            .iter()
            .any(|t| t.name.starts_with("blk.") && t.name.contains(role))
    }

    fn dense_sizes(&self, warnings: &mut Vec<String>) -> Result<DenseSizes, GgufError> {
        let (layers, hidden, heads) = self.required_sizes()?;
        let (kv_heads, kv_less_layers) = self.kv_heads(heads, warnings);
        Ok(DenseSizes {
            layers,
            hidden,
            heads,
            kv_heads,
            kv_less_layers,
            head_dim: self
                .int("attention.key_length_mla")
                .or_else(|| self.int("attention.key_length"))
                .unwrap_or(hidden.checked_div(heads).unwrap_or(0)),
            ffn: self.ffn(warnings),
            vocab: self.vocab(),
        })
    }

    /// The layers, the width and the most heads of any layer, each key named when it is missing.
    fn required_sizes(&self) -> Result<(u64, u64, u64), GgufError> {
        let mut missing = Vec::new();
        let mut required = |suffix: &str| {
            let value = self.int(suffix);
            if value.is_none() {
                missing.push(self.key(suffix));
            }
            value.unwrap_or(0)
        };
        let layers = required("block_count");
        let hidden = required("embedding_length");
        let heads_per_layer = self.header.arch_per_layer_u64("attention.head_count");
        if heads_per_layer.is_none() {
            missing.push(self.key("attention.head_count"));
        }
        if !missing.is_empty() {
            return Err(GgufError::Missing(missing));
        }
        Ok((
            layers,
            hidden,
            heads_per_layer.as_ref().map_or(0, per_layer_max),
        ))
    }

    /// The attention layers' KV heads, and how many layers have none.
    fn kv_heads(&self, heads: u64, warnings: &mut Vec<String>) -> (u64, u64) {
        let kv_per_layer = self
            .header
            .arch_per_layer_u64("attention.head_count_kv")
            .unwrap_or(PerLayer::Same(heads));
        // Hybrid files write 0 KV heads for their recurrent layers.
        match &kv_per_layer {
            PerLayer::Same(kv) => (*kv, 0),
            PerLayer::Each(each) => {
                let attention: Vec<u64> = each.iter().copied().filter(|&kv| kv > 0).collect();
                let max = attention.iter().copied().max().unwrap_or(0);
                if attention.iter().any(|&kv| kv != max) {
                    warnings.push(format!(
                        "{} differs by layer; every attention layer is sized with {max}",
                        self.key("attention.head_count_kv")
                    ));
                }
                (max, (each.len() - attention.len()) as u64)
            }
        }
    }

    /// `vocab_size`, else the tokenizer's token count, else `token_embd`'s rows.
    fn vocab(&self) -> u64 {
        self.int("vocab_size")
            .or_else(|| match self.header.get("tokenizer.ggml.tokens") {
                Some(MetaValue::Array(tokens)) => Some(tokens.len()),
                _ => None,
            })
            .or_else(|| {
                self.header
                    .tensors
                    .iter()
                    .find(|t| t.name == "token_embd.weight")
                    .and_then(|t| t.dims.get(1).copied())
            })
            .unwrap_or(0)
    }

    /// The widest layer's MLP.
    fn ffn(&self, warnings: &mut Vec<String>) -> u64 {
        let ffn_per_layer = self.header.arch_per_layer_u64("feed_forward_length");
        let experts = self.int("expert_count").unwrap_or(0);
        let expert_ffn = self.int("expert_feed_forward_length").unwrap_or(0);
        // An all-expert model may write no dense width; its MLP is the experts'.
        let ffn = ffn_per_layer
            .as_ref()
            .map_or(0, per_layer_max)
            .max(if experts > 0 { expert_ffn } else { 0 });
        if matches!(&ffn_per_layer, Some(PerLayer::Each(each)) if each.iter().any(|&f| f != ffn && f != 0))
        {
            warnings.push(format!(
                "{} differs by layer; the compute buffer uses the widest ({ffn}); the weights are the file's",
                self.key("feed_forward_length")
            ));
        }
        ffn
    }

    /// The dense shape of `sizes`, with what the tensors show: a tied output, a gated MLP and
    /// fused QKV.
    fn dense_shape(&self, sizes: &DenseSizes) -> Architecture {
        Architecture {
            // The phi3 graph splits `attn_qkv`'s output into views (src/models/phi3.cpp).
            fused_qkv: self.architecture == "phi3" && self.has_block_tensor(".attn_qkv"),
            // Their `attn_q` holds each head's query and output gate (src/models/qwen35.cpp).
            attention_gate: matches!(self.architecture, "qwen3next" | "qwen35" | "qwen35moe"),
            ..super::dense_shape(
                to_u32(sizes.layers),
                to_u32(sizes.hidden),
                to_u32(sizes.heads),
                to_u32(sizes.kv_heads),
                to_u32(sizes.head_dim),
                to_u32(sizes.ffn),
                to_u32(sizes.vocab),
                is_tied(self.header),
                self.has_block_tensor(".ffn_gate"),
            )
        }
    }

    /// The sliding window and the layers that use it.
    fn window(&self, layers: u64, warnings: &mut Vec<String>) -> Window {
        let tokens = self.int("attention.sliding_window").unwrap_or(0);
        let sliding_layers = if tokens > 0 {
            self.sliding_layers(layers)
        } else {
            0
        };
        if tokens > 0 && sliding_layers == 0 {
            warnings.push(format!(
                "{} is {tokens} but llama.cpp applies no sliding-window pattern to {} that vramfit knows; every layer is cached at full length",
                self.key("attention.sliding_window"),
                self.architecture
            ));
        }
        Window {
            tokens: to_u32(tokens),
            layers: to_u32(sliding_layers),
        }
    }

    /// The layers the file's sliding-window pattern makes sliding (a flag per layer, or a
    /// period), else the family's pattern.
    fn sliding_layers(&self, layers: u64) -> u64 {
        match self
            .header
            .get(&self.key("attention.sliding_window_pattern"))
        {
            Some(MetaValue::Array(MetaArray::Values(values))) => match values {
                vramfit_gguf::ArrayValues::Bool(each) => each.iter().filter(|&&s| s).count() as u64,
                other => other
                    .to_u64s()
                    .map_or(0, |each| each.iter().filter(|&&s| s != 0).count() as u64),
            },
            Some(MetaValue::Array(_)) | None => {
                swa_pattern(self.architecture).map_or(0, |n| layers - layers / n)
            }
            Some(value) => value
                .as_u64()
                .filter(|&n| n > 0)
                .map_or(layers, |n| layers - layers / n),
        }
    }

    /// The recurrent (`ssm.*`) layers: a hybrid's layers without KV heads, or every layer of a
    /// model without attention.
    fn recurrent(&self, sizes: &DenseSizes, warnings: &mut Vec<String>) -> Recurrent {
        let layers = if self.int("ssm.state_size").is_some() && sizes.kv_less_layers == 0 {
            // A pure state-space model (Mamba) has no KV heads at all.
            if sizes.kv_heads == 0 {
                sizes.layers
            } else {
                0
            }
        } else {
            sizes.kv_less_layers
        };
        let inner = self.int("ssm.inner_size").unwrap_or(0);
        if layers > 0 && inner == 0 {
            warnings.push(format!(
                "{layers} layers have no attention but {} is absent: their recurrent state is not counted",
                self.key("ssm.inner_size")
            ));
        }
        if layers == 0 {
            return Recurrent::default();
        }
        let heads = self.int("ssm.time_step_rank").unwrap_or(0).max(1);
        Recurrent {
            layers: to_u32(layers),
            heads: to_u32(heads),
            head_dim: to_u32(inner / heads),
            state: to_u32(self.int("ssm.state_size").unwrap_or(0)),
            groups: to_u32(self.int("ssm.group_count").unwrap_or(1)),
            conv: to_u32(self.int("ssm.conv_kernel").unwrap_or(0)),
            state_dtype: None,
        }
    }

    /// Multi-head latent attention, when the file has a KV latent; without one, a value width
    /// other than the keys' is named.
    fn latent_attention(&self, head_dim: u64, rope_dim: u64, warnings: &mut Vec<String>) -> Mla {
        let kv_rank = self.int("attention.kv_lora_rank").unwrap_or(0);
        if kv_rank > 0 {
            return Mla {
                kv_rank: to_u32(kv_rank),
                q_rank: to_u32(self.int("attention.q_lora_rank").unwrap_or(0)),
                rope_dim: to_u32(rope_dim),
                v_head_dim: to_u32(
                    self.int("attention.value_length_mla")
                        .or_else(|| self.int("attention.value_length"))
                        .unwrap_or(head_dim),
                ),
            };
        }
        if let Some(v) = self
            .int("attention.value_length")
            .filter(|&v| v != head_dim)
        {
            warnings.push(format!(
                "{} ({v}) differs from the key length ({head_dim}); values are sized like keys",
                self.key("attention.value_length")
            ));
        }
        Mla::default()
    }

    /// The experts, `ffn` wide where the file gives them no width of their own.
    fn experts(&self, ffn: u64, weights: &FileWeights, warnings: &mut Vec<String>) -> Moe {
        let experts = self.int("expert_count").unwrap_or(0);
        let expert_ffn = self
            .int("expert_feed_forward_length")
            .filter(|&width| width > 0)
            .unwrap_or(ffn);
        let shared = self.int("expert_shared_count").unwrap_or(0);
        // Saturating: both are the file's u64s, and their product overflowed (a panic in debug
        // builds, a wrapped width in release).
        let shared_ffn = self
            .int("expert_shared_feed_forward_length")
            .unwrap_or(expert_ffn)
            .saturating_mul(shared);
        if weights.blocks.iter().all(|b| b.experts == 0) && experts > 1 {
            warnings.push(format!(
                "{} is {experts} but no block has *_exps tensors; --n-cpu-moe moves nothing",
                self.key("expert_count")
            ));
        }
        let routed = |width: u64| if experts > 0 { to_u32(width) } else { 0 };
        Moe {
            experts: to_u32(experts),
            per_token: to_u32(self.int("expert_used_count").unwrap_or(0)),
            expert_ffn: routed(expert_ffn),
            shared_ffn: routed(shared_ffn),
            dense_layers: to_u32(self.int("leading_dense_block_count").unwrap_or(0)),
        }
    }

    /// The RoPE table a serving runtime would build for this shape (vLLM loads GGUF files too), read
    /// as [`super::hf_config`] reads config.json: `context_length` positions, × a linear scaling's
    /// factor, or a YaRN scaling's original length × factor; Gemma 3's sliding layers add a second,
    /// unscaled table. Architectures llama.cpp gives no RoPE have no table.
    fn rope(&self, rope_dim: u32, head_dim: u32, mla: bool) -> Rope {
        let Some(context) = self.int("context_length").filter(|_| rope_dim > 0) else {
            return Rope::default();
        };
        let factor = self
            .header
            .f32_key(&self.key("rope.scaling.factor"))
            .map_or(1.0, f64::from)
            .max(1.0);
        let positions = match self.header.string(&self.key("rope.scaling.type")) {
            Some("linear") => context as f64 * factor,
            Some("yarn") => self
                .int("rope.scaling.original_context_length")
                .map_or(context as f64, |original| original as f64 * factor),
            _ => context as f64,
        };
        Rope {
            positions: positions.min(f64::from(u32::MAX)) as u32,
            local_positions: if self.architecture == "gemma3" {
                context.min(u64::from(u32::MAX)) as u32
            } else {
                0
            },
            dim: if mla || rope_dim >= head_dim {
                0
            } else {
                rope_dim
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> &'static [u8] {
        include_bytes!("../../../gguf/tests/fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf")
    }

    #[test]
    fn llama_3_1_8b_q4_k_m_reads_its_shape_and_exact_tensor_bytes() {
        let model = read_gguf(fixture()).unwrap();
        assert_eq!(applied(&model).quant, FileType::Q4_K_M);
        assert_eq!(model.architecture, "llama");
        assert_eq!(model.file_type, Some(FileType::Q4_K_M));
        assert_eq!(model.context_length, Some(131_072));
        assert_eq!(model.tensor_bytes, 4_912_898_304);
        // Untied: the file total is the placed total.
        assert_eq!(model.weights.total(), model.tensor_bytes);
        let a = model.arch;
        assert_eq!(
            (a.layers, a.hidden, a.heads, a.kv_heads, a.head_dim, a.ffn, a.vocab),
            (32, 4096, 32, 8, 128, 14336, 128_256)
        );
        assert!(!a.tied && a.gated && !a.moe.is_moe());
        assert!(model.warnings.is_empty(), "{:?}", model.warnings);
        // token_embd Q4_K: 128256 × 4096 values at 144 B per 256.
        assert_eq!(model.weights.token_embd, 295_501_824);
        assert!(
            model.summary().contains("4,912,898,304 B"),
            "{}",
            model.summary()
        );
    }

    use vramfit_gguf::{write_header, ArrayValues, GgmlType, TensorInfo};

    /// The scenario the file's fields make, which must be valid and estimate.
    fn applied(model: &GgufModel) -> crate::Scenario {
        let mut scenario = crate::Scenario::default();
        for (key, value) in model.pairs() {
            scenario.set(key, &value).unwrap();
        }
        assert_eq!(scenario.validate(), vec![]);
        assert!(crate::estimate::estimate(&scenario).is_ok());
        assert_eq!(scenario.resolve().unwrap().arch, model.arch, "one shape");
        scenario
    }

    /// A header-only file of `arch` with `metadata` (the `{arch}.` prefix added) and tensors
    /// `(name, dims, type)`, written and read back as a dropped file would be.
    fn file(
        arch: &str,
        metadata: &[(&str, MetaValue)],
        tensors: &[(&str, &[u64], GgmlType)],
    ) -> Vec<u8> {
        let mut all = vec![(
            "general.architecture".to_string(),
            MetaValue::String(arch.to_string()),
        )];
        all.extend(
            metadata
                .iter()
                .map(|(k, v)| (format!("{arch}.{k}"), v.clone())),
        );
        write_header(&Header {
            version: 3,
            alignment: 32,
            metadata: all,
            tensors: tensors
                .iter()
                .map(|(name, dims, ggml_type)| TensorInfo {
                    name: name.to_string(),
                    dims: dims.to_vec(),
                    ggml_type: *ggml_type,
                    offset: 0,
                })
                .collect(),
            data_offset: 0,
        })
    }

    #[test]
    fn a_tied_sliding_window_model_duplicates_its_embedding_and_takes_the_family_pattern() {
        use MetaValue::U32;
        let bytes = file(
            "gemma2",
            &[
                ("block_count", U32(4)),
                ("embedding_length", U32(256)),
                ("feed_forward_length", U32(512)),
                ("attention.head_count", U32(4)),
                ("attention.head_count_kv", U32(2)),
                ("attention.key_length", U32(128)),
                ("attention.value_length", U32(128)),
                ("attention.sliding_window", U32(4096)),
                ("vocab_size", U32(1000)),
            ],
            &[
                ("token_embd.weight", &[256, 1000], GgmlType::Q8_0),
                ("blk.0.attn_q.weight", &[256, 512], GgmlType::Q4_K),
                ("blk.1.attn_q.weight", &[256, 512], GgmlType::Q4_K),
                ("blk.2.attn_q.weight", &[256, 512], GgmlType::Q4_K),
                ("blk.3.attn_q.weight", &[256, 512], GgmlType::Q6_K),
                ("blk.3.ffn_gate.weight", &[256, 512], GgmlType::Q4_K),
                ("output_norm.weight", &[256], GgmlType::F32),
            ],
        );
        let model = read_gguf(&bytes).unwrap();
        applied(&model);
        let a = model.arch;
        assert!(a.tied && a.gated);
        assert_eq!(
            (a.head_dim, a.window.tokens, a.window.layers),
            (128, 4096, 2)
        );
        // Q8_0: 34 bytes per 32 values; the output layer is the same table again.
        let embd = 256 * 1000 / 32 * 34;
        assert_eq!(model.weights.token_embd, embd);
        assert_eq!(model.weights.output, embd + 256 * 4);
        assert_eq!(model.tensor_bytes + embd, model.weights.total());
        // Q6_K: 210 bytes per 256 values.
        assert_eq!(model.weights.blocks[3].largest, 256 * 512 / 256 * 210);
        assert_eq!(model.file_type, None);
        assert!(model
            .warnings
            .iter()
            .any(|w| w.contains("general.file_type")));
    }

    /// The shared experts' width is the product of two of the file's u64s; one that overflows is
    /// read (saturated), never a panic.
    #[test]
    fn an_overflowing_shared_expert_width_does_not_panic() {
        use MetaValue::{U32, U64};
        let bytes = file(
            "qwen2moe",
            &[
                ("block_count", U32(1)),
                ("embedding_length", U32(256)),
                ("feed_forward_length", U32(512)),
                ("attention.head_count", U32(4)),
                ("attention.head_count_kv", U32(4)),
                ("expert_count", U32(4)),
                ("expert_used_count", U32(2)),
                ("expert_feed_forward_length", U32(64)),
                ("expert_shared_count", U64(u64::MAX / 2)),
                ("expert_shared_feed_forward_length", U64(4)),
            ],
            &[
                ("token_embd.weight", &[256, 1000], GgmlType::Q8_0),
                ("blk.0.ffn_up_exps.weight", &[256, 64, 4], GgmlType::Q8_0),
            ],
        );
        let _ = read_gguf(&bytes);
    }

    #[test]
    fn experts_and_recurrent_layers_come_from_the_files_keys() {
        use MetaValue::U32;
        let kv = MetaValue::Array(MetaArray::Values(ArrayValues::U32(vec![0, 0, 0, 2])));
        let bytes = file(
            "qwen3next",
            &[
                ("block_count", U32(4)),
                ("embedding_length", U32(256)),
                ("feed_forward_length", U32(0)),
                ("attention.head_count", U32(4)),
                ("attention.head_count_kv", kv),
                ("expert_count", U32(8)),
                ("expert_used_count", U32(2)),
                ("expert_feed_forward_length", U32(64)),
                ("ssm.state_size", U32(128)),
                ("ssm.inner_size", U32(512)),
                ("ssm.time_step_rank", U32(4)),
                ("ssm.group_count", U32(2)),
                ("ssm.conv_kernel", U32(4)),
            ],
            &[
                ("token_embd.weight", &[256, 1000], GgmlType::Q8_0),
                ("output.weight", &[256, 1000], GgmlType::Q8_0),
                ("blk.0.ffn_up_exps.weight", &[256, 64, 8], GgmlType::Q8_0),
                ("blk.0.ffn_gate_inp.weight", &[256, 8], GgmlType::F32),
                ("blk.1.ffn_up_exps.weight", &[256, 64, 8], GgmlType::Q8_0),
                ("blk.2.ffn_up_exps.weight", &[256, 64, 8], GgmlType::Q8_0),
                ("blk.3.ffn_up_exps.weight", &[256, 64, 8], GgmlType::Q8_0),
            ],
        );
        let model = read_gguf(&bytes).unwrap();
        let a = model.arch;
        assert_eq!(
            (a.moe.experts, a.moe.per_token, a.moe.expert_ffn),
            (8, 2, 64)
        );
        assert_eq!((a.kv_heads, a.recurrent.layers, a.no_attention), (2, 3, 3));
        assert_eq!(
            (
                a.recurrent.heads,
                a.recurrent.head_dim,
                a.recurrent.state,
                a.recurrent.conv
            ),
            (4, 128, 128, 4)
        );
        let experts = 256 * 64 * 8 / 32 * 34;
        assert_eq!(model.weights.blocks[1].experts, experts);
        assert_eq!(model.weights.blocks[0].bytes, experts + 256 * 8 * 4);
        assert!(!a.tied);
        assert!(a.attention_gate, "qwen3next's attn_q holds the output gate");
    }

    #[test]
    fn a_file_without_the_shape_keys_names_them() {
        let bytes = file(
            "llama",
            &[("embedding_length", MetaValue::U32(256))],
            &[("token_embd.weight", &[256, 1000], GgmlType::F16)],
        );
        let err = read_gguf(&bytes).unwrap_err();
        assert_eq!(
            err,
            GgufError::Missing(vec![
                "llama.block_count".into(),
                "llama.attention.head_count".into()
            ])
        );
        let orphan = file(
            "llama",
            &[
                ("block_count", MetaValue::U32(1)),
                ("embedding_length", MetaValue::U32(256)),
                ("attention.head_count", MetaValue::U32(2)),
            ],
            &[("blk.7.attn_q.weight", &[256, 256], GgmlType::F16)],
        );
        assert!(matches!(read_gguf(&orphan), Err(GgufError::Layout(_))));
    }

    #[test]
    fn the_wire_form_round_trips_and_runs_equal_blocks() {
        let weights = read_gguf(fixture()).unwrap().weights;
        let text = weights.format();
        assert!(text.len() < 400, "{text}");
        assert!(text.contains('*'), "{text}");
        assert_eq!(FileWeights::parse(&text), Ok(weights));
    }

    #[test]
    fn bad_wire_text_is_an_error_not_a_panic() {
        for text in [
            "",
            "1",
            "1,2",
            "1,2,x",
            "1,2,3:4",
            "1,2,3*0",
            "1,2,3*99999999999",
            "1,2,5:1:9",
            "1,2,3*600",
        ] {
            assert!(FileWeights::parse(text).is_err(), "{text}");
        }
        assert_eq!(
            FileWeights::parse("1,2,10:4:6*2").map(|w| w.blocks.len()),
            Ok(2)
        );
    }

    #[test]
    fn a_cut_header_asks_for_more_and_garbage_is_refused() {
        let bytes = fixture();
        match read_gguf(&bytes[..1000]) {
            Err(GgufError::Truncated { needed_at_least }) => {
                assert!(needed_at_least > 1000 && needed_at_least <= bytes.len() as u64)
            }
            other => panic!("{other:?}"),
        }
        let err = read_gguf(b"{\"not\": \"gguf\"}").unwrap_err();
        assert!(err.to_string().contains("not a GGUF file"), "{err}");
    }
}
