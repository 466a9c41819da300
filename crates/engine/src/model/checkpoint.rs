//! A Hugging Face checkpoint's tensors, read from its safetensors headers, grouped into the parts
//! the planner places: the embedding, each decoder layer (its routed experts apart), the head,
//! the vision tower and the multi-token-prediction modules. Their sum is the checkpoint's exact
//! tensor bytes in whatever format it is stored (bf16, fp8 with its scales, AWQ's packed int32,
//! MXFP4 blocks), which the shape and a dtype can only approximate. The CLI's `--hf` and
//! `--model-dir` come through [`read_checkpoint`]; what it gives is applied as scenario fields.
//!
//! Names follow transformers' modeling files: `model.layers.N.` (Llama and most decoders),
//! `transformer.h.N.` (GPT-2), `model.language_model.layers.N.` and `language_model.model.layers.N.`
//! (multimodal wrappers); layers past `num_hidden_layers` are DeepSeek-V3's and GLM-4.5's MTP
//! layers, and `mtp.` is Qwen3-Next's.

use super::gguf::{byte_count, format_blocks, parse_blocks, BlockBytes, MAX_BLOCKS};
use crate::dtype::Dtype;
use crate::units::group_thousands;
use std::fmt;
use vramfit_safetensors::TensorInfo;

/// A checkpoint's tensor bytes by part, in the format it is stored in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointWeights {
    /// The weight format the bytes hold (config.json's `quantization_config` or `torch_dtype`):
    /// they stand for the weights only when the scenario keeps that format.
    pub format: Dtype,
    /// The token (and position) embeddings.
    pub embed: u64,
    /// The LM head, the final norm and any other language-model tensor outside the layers.
    pub head: u64,
    /// The vision tower and its projector.
    pub vision: u64,
    /// The multi-token-prediction modules, loaded only with `mtp`.
    pub mtp: u64,
    /// Each decoder layer; `largest` is its largest tensor.
    pub blocks: Vec<BlockBytes>,
}

impl CheckpointWeights {
    /// The language model's bytes: what a runtime loads without the vision tower and MTP.
    pub fn text(&self) -> u64 {
        self.blocks
            .iter()
            .fold(self.embed.saturating_add(self.head), |sum, b| {
                sum.saturating_add(b.bytes)
            })
    }

    /// The routed experts' bytes, which expert parallelism splits.
    pub fn experts(&self) -> u64 {
        self.blocks
            .iter()
            .fold(0u64, |sum, b| sum.saturating_add(b.experts))
    }

    /// The wire form: `format,embed,head,vision,mtp,block…` in bytes, the blocks as a GGUF
    /// file's are written (`bytes:largest[:experts]`, a run `*count`).
    pub fn format(&self) -> String {
        format!(
            "{},{},{},{},{}{}",
            self.format,
            self.embed,
            self.head,
            self.vision,
            self.mtp,
            format_blocks(&self.blocks)
        )
    }

    /// Reads [`CheckpointWeights::format`]'s form.
    pub fn parse(text: &str) -> Result<CheckpointWeights, String> {
        let syntax = "format,embed,head,vision,mtp,block… in bytes (set by --hf or --model-dir)";
        let mut parts = text.split(',');
        let mut next = || parts.next().ok_or_else(|| format!("expected {syntax}"));
        let format = next()?;
        let format = Dtype::parse(format)?;
        let [embed, head, vision, mtp] = [next()?, next()?, next()?, next()?];
        Ok(CheckpointWeights {
            format,
            embed: byte_count(embed)?,
            head: byte_count(head)?,
            vision: byte_count(vision)?,
            mtp: byte_count(mtp)?,
            blocks: parse_blocks(parts, syntax)?,
        })
    }
}

/// What the headers gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub weights: CheckpointWeights,
    /// Every tensor's bytes, exact.
    pub tensor_bytes: u64,
    pub tensors: usize,
    /// The parameter count, where every tensor is a plain float (a quantized checkpoint packs
    /// several values in an element and keeps scales beside them, so its elements are not its
    /// parameters).
    pub params: Option<u64>,
    /// What the headers hold that the estimate places nowhere else, each named.
    pub warnings: Vec<String>,
}

impl Checkpoint {
    /// The scenario fields the checkpoint sets; config.json's pairs come before them.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![("checkpoint-weights", self.weights.format())];
        if let Some(params) = self.params {
            pairs.push(("params", params.to_string()));
        }
        pairs
    }

    /// One line for people: tensors, exact bytes, and the parameters where they are known.
    pub fn summary(&self) -> String {
        let params = match self.params {
            Some(p) => format!(", {} parameters", group_thousands(p)),
            None => String::new(),
        };
        format!(
            "{} tensors, {} B ({:.2} GiB) in {}{params}.",
            group_thousands(self.tensors as u64),
            group_thousands(self.tensor_bytes),
            self.tensor_bytes as f64 / f64::from(1u32 << 30),
            self.weights.format
        )
    }
}

/// Why the headers cannot stand for the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointError {
    /// No tensor at all.
    Empty,
    /// A layer index past what a checkpoint can hold.
    TooManyLayers(String),
    /// Layers config.json declares that no tensor fills.
    MissingLayers { declared: u32, found: usize },
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::Empty => f.write_str("the checkpoint's headers list no tensors"),
            CheckpointError::TooManyLayers(name) => {
                write!(f, "tensor {name} is past the {MAX_BLOCKS} layers vramfit reads")
            }
            CheckpointError::MissingLayers { declared, found } => write!(
                f,
                "config.json declares {declared} layers but the tensors fill {found}; is a shard missing?"
            ),
        }
    }
}

impl std::error::Error for CheckpointError {}

/// Where a tensor belongs.
#[derive(Debug, PartialEq, Eq)]
enum Part {
    Embed,
    Head,
    Vision,
    Mtp,
    /// A decoder layer, and whether the tensor is one of its routed experts.
    Layer(usize, bool),
}

/// Names the multimodal wrappers give their vision towers and projectors.
const VISION_SEGMENTS: &[&str] = &[
    "visual",
    "vision_tower",
    "vision_model",
    "vision_encoder",
    "multi_modal_projector",
    "mm_projector",
    "image_newline",
];

/// Names of the embedding matrices: token embeddings under each family's name, and GPT-2's
/// learned positions.
const EMBED_SEGMENTS: &[&str] = &[
    "embed_tokens",
    "wte",
    "wpe",
    "word_embeddings",
    "tok_embeddings",
];

/// Names of decoder-layer lists, followed by the layer's index.
const LAYER_SEGMENTS: &[&str] = &["layers", "h", "blocks"];

fn part(name: &str, layers: u32) -> Result<Part, CheckpointError> {
    let segments: Vec<&str> = name.split('.').collect();
    if segments.iter().any(|s| VISION_SEGMENTS.contains(s)) {
        return Ok(Part::Vision);
    }
    if segments.first() == Some(&"mtp") {
        return Ok(Part::Mtp);
    }
    let layer = segments.windows(2).find_map(|w| {
        LAYER_SEGMENTS
            .contains(&w[0])
            .then(|| w[1].parse::<usize>().ok())
            .flatten()
    });
    match layer {
        Some(i) if i >= MAX_BLOCKS => Err(CheckpointError::TooManyLayers(name.to_string())),
        Some(i) if i >= layers as usize => Ok(Part::Mtp),
        Some(i) => Ok(Part::Layer(i, segments.contains(&"experts"))),
        None if segments.iter().any(|s| EMBED_SEGMENTS.contains(s)) => Ok(Part::Embed),
        None => Ok(Part::Head),
    }
}

/// Groups every tensor of a checkpoint (all shards' headers together) into its parts.
/// `layers` is config.json's `num_hidden_layers`, `format` the weight format it states.
pub fn read_checkpoint<'a>(
    tensors: impl IntoIterator<Item = &'a TensorInfo>,
    layers: u32,
    format: Dtype,
) -> Result<Checkpoint, CheckpointError> {
    let mut weights = CheckpointWeights {
        format,
        embed: 0,
        head: 0,
        vision: 0,
        mtp: 0,
        blocks: Vec::new(),
    };
    let (mut count, mut total, mut params) = (0usize, 0u64, Some(0u64));
    for tensor in tensors {
        let bytes = tensor.bytes();
        count += 1;
        total = total.saturating_add(bytes);
        params = params
            .filter(|_| is_plain_float(tensor))
            .zip(tensor.elements())
            .map(|(sum, n)| sum.saturating_add(n));
        let slot = match part(&tensor.name, layers)? {
            Part::Embed => &mut weights.embed,
            Part::Head => &mut weights.head,
            Part::Vision => &mut weights.vision,
            Part::Mtp => &mut weights.mtp,
            Part::Layer(i, expert) => {
                if weights.blocks.len() <= i {
                    weights.blocks.resize(i + 1, BlockBytes::default());
                }
                let b = &mut weights.blocks[i];
                b.largest = b.largest.max(bytes);
                if expert {
                    b.experts = b.experts.saturating_add(bytes);
                }
                &mut b.bytes
            }
        };
        *slot = slot.saturating_add(bytes);
    }
    if count == 0 {
        return Err(CheckpointError::Empty);
    }
    let found = weights.blocks.iter().filter(|b| b.bytes > 0).count();
    if found != layers as usize || weights.blocks.len() != layers as usize {
        return Err(CheckpointError::MissingLayers {
            declared: layers,
            found,
        });
    }
    Ok(Checkpoint {
        weights,
        tensor_bytes: total,
        tensors: count,
        params,
        warnings: Vec::new(),
    })
}

/// A tensor whose elements are parameters: a 16- or 32-bit float.
fn is_plain_float(tensor: &TensorInfo) -> bool {
    use vramfit_safetensors::Dtype as St;
    matches!(tensor.dtype, St::F32 | St::F16 | St::BF16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vramfit_safetensors::{Dtype as St, Header};

    fn header(tensors: &[(&str, St, &[u64])]) -> Header {
        Header::lay_out(
            tensors
                .iter()
                .map(|(n, d, s)| (n.to_string(), *d, s.to_vec())),
            Vec::new(),
        )
        .unwrap()
    }

    #[test]
    fn tensors_fall_into_their_parts() {
        let h = header(&[
            ("model.embed_tokens.weight", St::BF16, &[100, 8]),
            ("model.layers.0.self_attn.q_proj.weight", St::BF16, &[8, 8]),
            (
                "model.layers.0.mlp.experts.0.up_proj.weight",
                St::BF16,
                &[4, 8],
            ),
            (
                "model.layers.0.mlp.shared_experts.up_proj.weight",
                St::BF16,
                &[4, 8],
            ),
            ("model.layers.1.self_attn.q_proj.weight", St::BF16, &[8, 8]),
            ("model.layers.2.eh_proj.weight", St::BF16, &[8, 16]),
            ("model.norm.weight", St::BF16, &[8]),
            ("lm_head.weight", St::BF16, &[100, 8]),
            ("model.visual.blocks.0.attn.qkv.weight", St::BF16, &[24, 8]),
        ]);
        let c = read_checkpoint(&h.tensors, 2, Dtype::Bf16).unwrap();
        let w = &c.weights;
        assert_eq!((w.embed, w.head, w.vision, w.mtp), (1600, 1616, 384, 256));
        assert_eq!(
            w.blocks,
            [
                BlockBytes {
                    bytes: 256,
                    largest: 128,
                    experts: 64
                },
                BlockBytes {
                    bytes: 128,
                    largest: 128,
                    experts: 0
                }
            ]
        );
        assert_eq!(c.tensor_bytes, h.tensor_bytes());
        assert_eq!(w.text() + w.vision + w.mtp, c.tensor_bytes);
        assert_eq!(c.params, Some(c.tensor_bytes / 2));
        assert_eq!(CheckpointWeights::parse(&w.format()).as_ref(), Ok(w));
    }

    #[test]
    fn quantized_tensors_give_no_parameter_count() {
        let h = header(&[
            ("model.embed_tokens.weight", St::F16, &[100, 8]),
            ("model.layers.0.mlp.down_proj.qweight", St::I32, &[8, 1]),
            ("model.layers.0.mlp.down_proj.scales", St::F16, &[1, 8]),
        ]);
        let c = read_checkpoint(&h.tensors, 1, Dtype::Int4).unwrap();
        assert_eq!(c.params, None);
        assert_eq!(c.weights.blocks[0].bytes, 32 + 16);
    }

    #[test]
    fn a_missing_shard_is_named_not_guessed() {
        let h = header(&[
            ("model.layers.0.mlp.down_proj.weight", St::BF16, &[8, 8]),
            ("model.layers.2.mlp.down_proj.weight", St::BF16, &[8, 8]),
        ]);
        assert_eq!(
            read_checkpoint(&h.tensors, 3, Dtype::Bf16),
            Err(CheckpointError::MissingLayers {
                declared: 3,
                found: 2
            })
        );
        assert_eq!(
            read_checkpoint(std::iter::empty(), 3, Dtype::Bf16),
            Err(CheckpointError::Empty)
        );
    }
}
