//! What each component of the stack is. Every id is declared once, in `component_ids!`, with how
//! PyTorch's caching allocator holds it (what fragmentation it adds), how long a training step
//! holds it, and which figure a runtime's log reports it in, so a new component cannot be added
//! without saying all three.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// How PyTorch's caching allocator holds a component, which sets the fragmentation it adds
/// (`overhead.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slack {
    /// Allocated and freed within a step in varying sizes: activations, logits, a growing cache.
    Transient,
    /// Allocated once, or in the same sizes every step, so freed blocks are reused exactly.
    Persistent,
    /// Not in PyTorch's allocator: the CUDA context, the driver's and NCCL's memory, CUDA
    /// managed memory, ggml's buffers, the user's own figures, and the slack itself.
    Outside,
}

/// How long a training step holds a component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Through the optimizer step (or, outside training, the whole run).
    WholeStep,
    /// Only through the forward and backward passes: freed before the optimizer step runs.
    ForwardBackward,
}

/// The figure a runtime logs that holds a component, as calibration/runtime-logs.csv's `figure`
/// column names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFigure {
    /// vLLM's "Model loading took", SGLang's "Load weight end", llama.cpp's model buffer.
    ModelLoad,
    /// vLLM's and SGLang's activation peak of the profile run.
    ActivationPeak,
    /// vLLM's non-torch memory.
    NonTorch,
    /// vLLM's "Graph capturing finished … took".
    CudaGraphs,
    /// llama.cpp's KV buffer.
    KvBuffer,
    /// llama.cpp's compute buffer.
    ComputeBuffer,
    /// llama.cpp's recurrent-state (RS) buffer.
    RecurrentBuffer,
    /// llama.cpp's output buffer (pinned host memory).
    OutputBuffer,
}

macro_rules! component_ids {
    ($($(#[$doc:meta])* $variant:ident = $id:literal, $slack:ident, $lifetime:ident, $logged:expr;)*) => {
        /// A component of the memory stack. Its wire form (`id()`) is stable: JSON exports and
        /// calibration rows use it.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum ComponentId {
            $($(#[$doc])* $variant,)*
            /// A size the user adds by hand; holds the whole id, `custom:<name>`.
            Custom(String),
        }

        impl ComponentId {
            /// Every id but `Custom`, in declaration order.
            pub const KNOWN: &'static [ComponentId] = &[$(ComponentId::$variant),*];

            /// The stable wire id.
            pub fn id(&self) -> &str {
                match self {
                    $(ComponentId::$variant => $id,)*
                    ComponentId::Custom(id) => id,
                }
            }

            /// How PyTorch's caching allocator holds it.
            pub fn slack(&self) -> Slack {
                match self {
                    $(ComponentId::$variant => Slack::$slack,)*
                    ComponentId::Custom(_) => Slack::Outside,
                }
            }

            /// How long a training step holds it.
            pub fn lifetime(&self) -> Lifetime {
                match self {
                    $(ComponentId::$variant => Lifetime::$lifetime,)*
                    ComponentId::Custom(_) => Lifetime::WholeStep,
                }
            }

            /// The runtime log figure that reports it, if any.
            pub fn logged_in(&self) -> Option<LogFigure> {
                match self {
                    $(ComponentId::$variant => $logged,)*
                    ComponentId::Custom(_) => None,
                }
            }
        }
    };
}

use LogFigure::*;

// Each id: its wire form, its `Slack`, its `Lifetime` in a training step, its `LogFigure`.
component_ids! {
    /// The model's weights (a serving runtime's model buffer on the GPU, or in system RAM).
    Weights = "weights", Persistent, WholeStep, Some(ModelLoad);
    /// A quantized format's scales, zeros and block constants.
    QuantConstants = "quant_constants", Persistent, WholeStep, Some(ModelLoad);
    /// The vision tower's weights.
    Vision = "vision", Persistent, WholeStep, Some(ModelLoad);
    /// Multi-token-prediction modules.
    Mtp = "mtp", Persistent, WholeStep, Some(ModelLoad);
    /// vLLM's and SGLang's RoPE cos/sin tables, built while the model loads.
    RopeTables = "rope_tables", Persistent, WholeStep, Some(ModelLoad);
    /// The images the vision tower encodes.
    VisionActivations = "vision_activations", Transient, WholeStep, None;
    /// LoRA adapters.
    Adapters = "adapters", Persistent, WholeStep, None;
    /// Gradients of the trained parameters.
    Gradients = "gradients", Persistent, WholeStep, None;
    /// The optimizer's state.
    Optimizer = "optimizer", Persistent, WholeStep, None;
    /// A paged optimizer's large moments, in CUDA managed memory.
    PagedOptimizer = "paged_optimizer", Outside, WholeStep, None;
    /// The optimizer step's temporaries beyond the backward pass's peak.
    OptimizerStep = "optimizer_step", Persistent, WholeStep, None;
    /// fp32 master weights.
    MasterWeights = "master_weights", Persistent, WholeStep, None;
    /// Autocast's and FSDP's copies of weights in the compute dtype.
    WeightCopies = "weight_copies", Transient, ForwardBackward, None;
    /// Activations kept for backward, or an inference step's working set.
    Activations = "activations", Transient, ForwardBackward, Some(ActivationPeak);
    /// What vLLM's profile of a multimodal encoder adds to the text profile's peak (serving only).
    EncoderProfile = "encoder_profile", Transient, WholeStep, Some(ActivationPeak);
    /// One layer's quantized experts dequantized whole.
    DequantizedExperts = "dequantized_experts", Persistent, ForwardBackward, None;
    /// Expert parallelism's all-to-all buffers.
    AllToAll = "all_to_all", Transient, ForwardBackward, None;
    /// Logits and the loss.
    Logits = "logits", Transient, ForwardBackward, None;
    /// What `generate` keeps of each new token's distribution.
    KeptScores = "kept_scores", Persistent, WholeStep, None;
    /// The KV cache of full-attention layers.
    KvCache = "kv_cache", Transient, WholeStep, Some(KvBuffer);
    /// The KV cache of sliding-window layers.
    KvCacheSliding = "kv_cache_sliding", Transient, WholeStep, Some(KvBuffer);
    /// Recurrent layers' state.
    RecurrentState = "recurrent_state", Transient, WholeStep, Some(RecurrentBuffer);
    /// Memory a serving runtime holds outside torch (NCCL, cuBLAS workspaces).
    NonTorch = "non_torch", Outside, WholeStep, Some(LogFigure::NonTorch);
    /// vLLM's captured CUDA graphs.
    CudaGraphs = "cuda_graphs", Outside, WholeStep, Some(LogFigure::CudaGraphs);
    /// llama.cpp's compute buffer.
    ComputeBuffer = "compute_buffer", Outside, WholeStep, Some(LogFigure::ComputeBuffer);
    /// llama.cpp's output buffer.
    OutputBuffer = "output_buffer", Outside, WholeStep, Some(LogFigure::OutputBuffer);
    /// The CUDA context.
    CudaContext = "cuda_context", Outside, WholeStep, None;
    /// The caching allocator's slack.
    Fragmentation = "fragmentation", Outside, WholeStep, None;
}

impl ComponentId {
    /// A size the user adds by hand.
    pub fn custom(name: &str) -> ComponentId {
        ComponentId::Custom(format!("custom:{name}"))
    }

    /// The id for its wire form; `None` for an unknown one.
    pub fn parse(id: &str) -> Option<ComponentId> {
        if id.starts_with("custom:") {
            return Some(ComponentId::Custom(id.to_string()));
        }
        ComponentId::KNOWN.iter().find(|k| k.id() == id).cloned()
    }

    /// What a runtime's model load holds: the figure it logs as the weights.
    pub fn is_model_load(&self) -> bool {
        self.logged_in() == Some(LogFigure::ModelLoad)
    }
}

impl fmt::Display for ComponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl PartialEq<str> for ComponentId {
    fn eq(&self, other: &str) -> bool {
        self.id() == other
    }
}

impl PartialEq<&str> for ComponentId {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

impl Serialize for ComponentId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for ComponentId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        ComponentId::parse(&id)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown component id `{id}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_from_its_wire_form() {
        for id in ComponentId::KNOWN {
            assert_eq!(ComponentId::parse(id.id()).as_ref(), Some(id));
        }
        let custom = ComponentId::custom("dataloader");
        assert_eq!(custom.id(), "custom:dataloader");
        assert_eq!(ComponentId::parse("custom:dataloader"), Some(custom));
        assert_eq!(ComponentId::parse("weight"), None);
    }

    #[test]
    fn wire_ids_are_unique() {
        let mut ids: Vec<&str> = ComponentId::KNOWN.iter().map(ComponentId::id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), ComponentId::KNOWN.len());
    }

    #[test]
    fn what_a_runtime_logs_as_its_model_load() {
        let load: Vec<&str> = ComponentId::KNOWN
            .iter()
            .filter(|c| c.is_model_load())
            .map(ComponentId::id)
            .collect();
        assert_eq!(
            load,
            ["weights", "quant_constants", "vision", "mtp", "rope_tables"]
        );
    }

    #[test]
    fn memory_outside_the_caching_allocator_adds_no_slack() {
        for id in [
            "cuda_context",
            "fragmentation",
            "paged_optimizer",
            "non_torch",
        ] {
            assert_eq!(ComponentId::parse(id).unwrap().slack(), Slack::Outside);
        }
        assert_eq!(ComponentId::custom("x").slack(), Slack::Outside);
        assert_eq!(ComponentId::Activations.slack(), Slack::Transient);
        assert_eq!(ComponentId::Weights.slack(), Slack::Persistent);
    }

    #[test]
    fn what_the_backward_pass_frees_before_the_optimizer_step() {
        let freed: Vec<&str> = ComponentId::KNOWN
            .iter()
            .filter(|c| c.lifetime() == Lifetime::ForwardBackward)
            .map(ComponentId::id)
            .collect();
        assert_eq!(
            freed,
            [
                "weight_copies",
                "activations",
                "dequantized_experts",
                "all_to_all",
                "logits"
            ]
        );
    }

    #[test]
    fn json_form_is_the_wire_id() {
        let json = serde_json::to_string(&ComponentId::KvCacheSliding).unwrap();
        assert_eq!(json, "\"kv_cache_sliding\"");
        let back: ComponentId = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ComponentId::KvCacheSliding);
        assert!(serde_json::from_str::<ComponentId>("\"kv\"").is_err());
    }
}
