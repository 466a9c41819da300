//! What runs an inference scenario: transformers' `generate()` (a cache that grows with the
//! sequence) or a serving runtime with its own memory rules (vLLM's and SGLang's preallocated KV
//! pools, llama.cpp's per-device buffers). The rules themselves live in `estimate/serving/`.

use crate::wire::wire_enum;

wire_enum! {
    /// The program that holds the model on the GPU.
    Runtime {
        Transformers = "transformers" => "Hugging Face transformers: a cache that grows with the sequence",
        Vllm = "vllm" => "vLLM V1: a preallocated KV pool in gpu-memory-utilization of the GPU",
        Sglang = "sglang" => "SGLang: weights and KV pool in mem-fraction-static of free memory",
        LlamaCpp = "llama.cpp" => "llama.cpp (also ollama, LM Studio): GGUF weights, layers offloaded with -ngl",
    }
}

impl Runtime {
    /// vLLM and SGLang size a KV pool once at start and serve many requests from it.
    pub fn pools_kv(self) -> bool {
        matches!(self, Runtime::Vllm | Runtime::Sglang)
    }
}
