//! What a step's GPUs send one another, and how a step passes them.
//!
//! Tensor parallelism splits every layer over `tp` ranks, which sum their partial outputs twice a
//! layer: vLLM's `RowParallelLinear.forward` all-reduces its output
//! (`tensor_model_parallel_all_reduce`, vllm/model_executor/layers/linear.py), and a Llama layer
//! has two of them, attention's `o_proj` and the MLP's `down_proj`
//! (vllm/model_executor/models/llama.py); a mixture of experts all-reduces once after its
//! experts instead (`FusedMoE` with `reduce_results`, mixtral.py; qwen2_moe.py sums the shared
//! expert first), also under expert parallelism (`ep_size > 1`, fused_moe/layer.py; all vLLM
//! 0.8.0). Each carries the step's tokens × hidden values, timed as a ring all-reduce,
//! `2(n − 1)/n × bytes` over the link, plus [`LINK_LATENCY_S`].
//!
//! Pipeline stages (vLLM's `--pipeline-parallel-size`, llama.cpp's layer split over several
//! GPUs) hold whole layers: one request's step passes every stage in turn, so its time is the
//! stages' times added, plus one send of its activations at each boundary. vLLM keeps as many
//! batches in flight as stages (V0's one scheduler per virtual engine, llm_engine.py; V1's
//! `max_concurrent_batches = pipeline_parallel_size`, v1/executor/ray_distributed_executor.py),
//! so the requests split into that many micro-batches and a stage works on one while the others
//! are elsewhere: each request still waits for every stage, and aggregate throughput is the
//! requests over that time. llama.cpp and transformers run one batch through the stages at a time.

use crate::scenario::Resolved;

/// How a runtime spreads one step over its GPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parallel {
    /// Ranks each layer is split over (tensor parallelism).
    pub tp: u32,
    /// GPUs a token passes in turn, each holding whole layers.
    pub stages: u32,
    /// Batches in flight at once: the requests split into this many micro-batches.
    pub in_flight: u32,
    /// Bytes of one activation value sent between GPUs.
    pub activation_bytes: f64,
    /// Weights that the planned GPU's figure, taken once per stage, counts beyond what the
    /// stages hold together (the planned GPU is the fullest stage, with an embedding table or
    /// the output layer that the other stages lack).
    pub overcount_bytes: f64,
}

/// All-reduces a tensor-parallel layer makes: after the attention's output projection and after
/// the MLP's down projection (or the experts).
pub const ALL_REDUCES_PER_LAYER: f64 = 2.0;

/// Seconds one all-reduce or send of a step's few kilobytes takes whatever the bandwidth: vLLM's
/// custom all-reduce on H100s, 9.5, 9.1 and 10.1 µs at 2, 4 and 8 GPUs for a 512-byte message
/// (sgl-project/sglang PR #2904, "unit test performance in H100 (without cuda graph)", its vllm
/// table), taken as their median. vLLM uses that kernel on two GPUs or on GPUs all joined by
/// NVLink, for messages under 8 MiB (`should_custom_ar`,
/// vllm/distributed/device_communicators/custom_all_reduce.py, 0.8.0); more than two GPUs on
/// PCIe run NCCL, and llama.cpp copies between GPUs with its own calls: both are given this
/// latency too, for want of a published figure of their own.
pub const LINK_LATENCY_S: f64 = 9.5e-6;

/// A step's traffic between GPUs: its all-reduces and sends, each of `bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Traffic {
    all_reduces: f64,
    layers: u32,
    sends: f64,
    tp: u32,
    bytes: f64,
}

impl Traffic {
    /// The traffic of one pass of `tokens` tokens through the model.
    pub fn new(p: &Parallel, r: &Resolved, tokens: f64) -> Traffic {
        let tp_layers = if p.tp > 1 { r.arch.layers } else { 0 };
        Traffic {
            all_reduces: ALL_REDUCES_PER_LAYER * f64::from(tp_layers),
            layers: tp_layers,
            sends: f64::from(p.stages.max(1) - 1),
            tp: p.tp.max(1),
            bytes: tokens * f64::from(r.arch.hidden) * p.activation_bytes,
        }
    }

    /// Bytes over the link, or none where there is no link to cross (a unified device).
    fn over(bytes: f64, link: f64) -> f64 {
        if link > 0.0 {
            bytes / link
        } else {
            0.0
        }
    }

    /// One ring all-reduce: each rank sends and receives `2(n − 1)/n` of the bytes.
    fn all_reduce_s(&self, link: f64) -> f64 {
        let n = f64::from(self.tp);
        LINK_LATENCY_S + Self::over(2.0 * (n - 1.0) / n * self.bytes, link)
    }

    fn send_s(&self, link: f64) -> f64 {
        LINK_LATENCY_S + Self::over(self.bytes, link)
    }

    /// Seconds the step spends on the link; it overlaps none of its reads or FLOPs.
    pub fn seconds(&self, link: f64) -> f64 {
        self.all_reduces * self.all_reduce_s(link) + self.sends * self.send_s(link)
    }

    /// The traffic in words, from the figures [`Traffic::seconds`] adds: ", plus 2 all-reduces ×
    /// 80 layers of 16.4 kB at 450 GB/s, 9.5 µs each: 1.52 ms"; empty without any.
    pub fn words(&self, link: f64) -> String {
        // Most steps cross no link: nothing to say, and nothing to format.
        if self.all_reduces <= 0.0 && self.sends <= 0.0 {
            return String::new();
        }
        let size = if self.bytes < 1e6 {
            format!("{:.1} kB", self.bytes / 1e3)
        } else {
            format!("{:.1} MB", self.bytes / 1e6)
        };
        let at = format!(
            "at {:.0} GB/s, {:.1} µs each",
            link / 1e9,
            LINK_LATENCY_S * 1e6
        );
        let mut parts = Vec::new();
        if self.all_reduces > 0.0 {
            parts.push(format!(
                "{ALL_REDUCES_PER_LAYER} all-reduces × {} layers of {size} over {} GPUs",
                self.layers, self.tp
            ));
        }
        if self.sends > 0.0 {
            parts.push(format!(
                "{} send{} of {size} between stages",
                self.sends,
                if self.sends == 1.0 { "" } else { "s" }
            ));
        }
        format!(
            ", plus {} {at}: {:.2} ms",
            parts.join(" and "),
            self.seconds(link) * 1e3
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traffic(tp: u32, stages: u32, bytes: f64) -> Traffic {
        Traffic {
            all_reduces: if tp > 1 { 160.0 } else { 0.0 },
            layers: 80,
            sends: f64::from(stages - 1),
            tp,
            bytes,
        }
    }

    #[test]
    fn a_ring_all_reduce_is_its_latency_plus_two_n_minus_one_over_n_of_the_bytes() {
        // Llama 3.3 70B at tp 8 on H200s, one token: 8192 values of 2 bytes, 160 all-reduces at
        // 450 GB/s: 160 × (9.5 µs + 2 × 7/8 × 16384 B / 450e9 B/s) = 160 × 9.5637 µs.
        let t = traffic(8, 1, 16384.0);
        let expected = 160.0 * (9.5e-6 + 1.75 * 16384.0 / 450e9);
        assert!((t.seconds(450e9) - expected).abs() < 1e-12);
        assert!((t.seconds(450e9) - 1.530_19e-3).abs() < 1e-8);
        assert_eq!(
            t.words(450e9),
            ", plus 2 all-reduces × 80 layers of 16.4 kB over 8 GPUs at 450 GB/s, 9.5 µs each: 1.53 ms"
        );
    }

    #[test]
    fn stages_send_once_per_boundary_and_no_link_costs_only_the_latency() {
        let t = traffic(1, 4, 32768.0);
        assert!((t.seconds(32e9) - 3.0 * (9.5e-6 + 32768.0 / 32e9)).abs() < 1e-12);
        assert!((t.seconds(0.0) - 3.0 * 9.5e-6).abs() < 1e-12);
        assert!(t.words(32e9).contains("3 sends of 32.8 kB between stages"));
        assert_eq!(traffic(1, 1, 1.0).words(1e9), "");
    }
}
