//! How a run is spread over several GPUs, and what is moved to CPU memory.

use crate::wire::wire_enum;

wire_enum! {
    /// How the model state is split across GPUs (Rajbhandari et al. 2020, "ZeRO"), plus the two
    /// model-parallel layouts inference commonly uses.
    Sharding {
        None = "none" => "every GPU holds everything",
        Ddp = "ddp" => "data parallel: a full replica per GPU",
        Zero1 = "zero1" => "ZeRO-1: optimizer state sharded",
        Zero2 = "zero2" => "ZeRO-2: optimizer state and gradients sharded",
        Zero3 = "zero3" => "ZeRO-3: weights sharded too",
        Fsdp = "fsdp" => "FSDP full shard, as ZeRO-3",
        /// Tensor parallel (Megatron-style): weights, KV cache and activations split N ways.
        Tensor = "tensor" => "tensor parallel: every layer split across the GPUs",
        /// Pipeline / `device_map="auto"`: whole layers placed on successive GPUs.
        Pipeline = "pipeline" => "pipeline: whole layers on successive GPUs",
        /// Expert parallelism (GShard, Lepikhin et al. 2020; Megatron-Core, vLLM, SGLang): each
        /// GPU holds 1/N of every MoE layer's routed experts and a replica of everything else, runs
        /// its own batch, and exchanges tokens with the others in an all-to-all.
        Expert = "expert" => "expert parallel: routed experts split across the GPUs, the rest replicated",
    }
}

impl Sharding {
    pub fn shards_optimizer(self) -> bool {
        !matches!(self, Sharding::None | Sharding::Ddp | Sharding::Expert)
    }

    pub fn shards_gradients(self) -> bool {
        self.shards_weights() || self == Sharding::Zero2
    }

    pub fn shards_weights(self) -> bool {
        self.is_fully_sharded() || self.is_model_parallel()
    }

    /// ZeRO-3 and FSDP full shard: every GPU keeps a slice of every parameter and gathers each
    /// layer when it runs. Only these can offload the parameters themselves.
    pub fn is_fully_sharded(self) -> bool {
        matches!(self, Sharding::Zero3 | Sharding::Fsdp)
    }

    /// Each GPU runs its own batch: the replicas and ZeRO/FSDP shardings, which tensor
    /// parallelism can be put beside (`tp`).
    pub fn is_data_parallel(self) -> bool {
        matches!(
            self,
            Sharding::Ddp | Sharding::Zero1 | Sharding::Zero2 | Sharding::Zero3 | Sharding::Fsdp
        )
    }

    /// Model parallelism also splits activations and the KV cache; data parallelism does not.
    pub fn is_model_parallel(self) -> bool {
        matches!(self, Sharding::Tensor | Sharding::Pipeline)
    }
}

wire_enum! {
    /// What is moved to CPU memory (ZeRO-Offload, Ren et al. 2021).
    Offload {
        None = "none" => "everything stays on the GPU",
        Optimizer = "optimizer" => "optimizer state and master weights in CPU RAM",
        All = "all" => "parameters too; needs zero3 or fsdp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_zero_stage_shards_what_it_names_and_everything_before_it() {
        let row = |s: Sharding| {
            (
                s.shards_optimizer(),
                s.shards_gradients(),
                s.shards_weights(),
            )
        };
        assert_eq!(row(Sharding::None), (false, false, false));
        assert_eq!(row(Sharding::Ddp), (false, false, false));
        assert_eq!(row(Sharding::Zero1), (true, false, false));
        assert_eq!(row(Sharding::Zero2), (true, true, false));
        for full in [
            Sharding::Zero3,
            Sharding::Fsdp,
            Sharding::Tensor,
            Sharding::Pipeline,
        ] {
            assert_eq!(row(full), (true, true, true), "{full}");
        }
    }
}
