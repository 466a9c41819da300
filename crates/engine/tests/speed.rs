//! The speed model against rooflines computed by hand: a dense model's decode reads its weights
//! and cache at the card's bandwidth, a mixture of experts reads the experts a batch reaches in
//! expectation (at their own share of it), prefill is compute against the tensor peak, and a large batch turns decode
//! compute-bound; tensor-parallel ranks all-reduce twice a layer, and a pipeline's request passes
//! every stage in turn.

use vramfit_engine::estimate::{Bound, ComponentId, Speed};
use vramfit_engine::{estimate, Estimate, Scenario};

/// The RTX 4090's datasheet (Ada whitepaper): 1,008 GB/s, 165.2 dense fp16 TFLOPS.
const BANDWIDTH: f64 = 1008e9;
const HALF_FLOPS: f64 = 165.2e12;
/// llama.cpp's typical shares of those peaks, and the fixed time of its decode step per layer,
/// which every runtime takes today.
const BANDWIDTH_SHARE: f64 = 1.0;
/// The share llama.cpp's `mul_mat_id` reads a mixture of experts' routed experts at.
const EXPERTS_SHARE: f64 = 0.61;
const COMPUTE_SHARE: f64 = 0.65;
const LAYER_S: f64 = 65.5e-6;
/// Under flash attention llama.cpp launches 19 kernels a layer where it launched 22, and its
/// time per layer shrinks in proportion.
const FLASH_ATTN_LAYER: f64 = 19.0 / 22.0;

/// A decode step's tokens per second: its reads at the bandwidth share, then the fixed time of
/// its layers.
fn decode_rate(read: f64, layers: f64) -> f64 {
    1.0 / (read / (BANDWIDTH * BANDWIDTH_SHARE) + LAYER_S * layers)
}

fn run(pairs: &[(&str, &str)]) -> Estimate {
    let (s, errors) = Scenario::from_pairs(pairs.iter().copied());
    assert!(errors.is_empty(), "{errors:?}");
    estimate(&s).unwrap()
}

fn speed(e: &Estimate) -> &Speed {
    e.speed
        .as_ref()
        .and_then(|t| t.inference())
        .expect("a catalogue GPU with a datasheet gives a speed")
}

fn close(got: f64, want: f64) {
    assert!((got / want - 1.0).abs() < 1e-9, "got {got}, want {want}");
}

#[test]
fn a_dense_decode_step_reads_the_weights_and_the_cache() {
    // Llama-3.1-8B in bf16: 8,030,261,248 × 2 B of weights; its cache 32 layers × 2 × 8 KV heads
    // × 128 × 2 B = 131,072 B per token, read at a mean 1.5 tokens (prompt 1, seq 2).
    let e = run(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("gpu", "rtx-4090"),
        ("prompt", "1"),
        ("seq", "2"),
    ]);
    assert_eq!(e.bytes_of(ComponentId::Weights).0, 16_060_522_496);
    let read = 16_060_522_496.0 + 131_072.0 * 1.5;
    let sp = speed(&e);
    close(sp.decode_tokens_per_s, decode_rate(read, 32.0));
    assert_eq!(sp.bound, Bound::Memory);
    assert!(
        sp.basis.contains("16.06 GB") && sp.basis.contains("1,008 GB/s"),
        "{}",
        sp.basis
    );
    assert!(sp.low < sp.output_tokens_per_s && sp.output_tokens_per_s < sp.high);
}

#[test]
fn prefill_is_the_prompts_flops_against_the_tensor_peak() {
    // 2 FLOPs per parameter per token, plus causal attention: 2 × prompt² × query width (4096)
    // per layer (32).
    let e = run(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("gpu", "rtx-4090"),
        ("prompt", "512"),
        ("seq", "640"),
    ]);
    let prompt = 512.0;
    let flops = 2.0 * 8_030_261_248.0 * prompt + 2.0 * prompt * prompt * 4096.0 * 32.0;
    let seconds = flops / (HALF_FLOPS * COMPUTE_SHARE);
    close(speed(&e).ttft_s.unwrap(), seconds);
    close(speed(&e).prefill_tokens_per_s.unwrap(), prompt / seconds);
}

#[test]
fn a_mixture_of_experts_reads_the_experts_a_batch_reaches() {
    // Qwen3-30B-A3B: 48 layers × 128 experts × 3 × 2048 × 768 routed parameters; 4 tokens each
    // choosing 8 reach 1 − (1 − 8/128)⁴ of a layer's experts in expectation.
    let one = run(&[
        ("model", "qwen3-30b-a3b"),
        ("mode", "inference"),
        ("gpu", "rtx-4090"),
        ("vram", "200GiB"),
        ("prompt", "1"),
        ("seq", "2"),
        ("batch", "4"),
    ]);
    let weights = one.bytes_of(ComponentId::Weights).as_f64();
    let routed = 48.0 * 128.0 * 3.0 * 2048.0 * 768.0 / one.params;
    let touched = 1.0 - (1.0 - 8.0 / 128.0_f64).powi(4);
    // 48 layers × 2 × 4 KV heads × 128 × 2 B per token, 4 requests at a mean 1.5 tokens.
    let cache = 4.0 * 1.5 * 48.0 * 2.0 * 4.0 * 128.0 * 2.0;
    let experts = weights * routed * touched;
    let read = weights * (1.0 - routed) + cache + experts * BANDWIDTH_SHARE / EXPERTS_SHARE;
    close(speed(&one).decode_tokens_per_s, decode_rate(read, 48.0));
    assert!(touched < 0.25, "far fewer than all experts: {touched}");
    let basis = &speed(&one).basis;
    let named = format!("the routed experts' {:.2} GB of it at 61%", experts / 1e9);
    assert!(basis.contains(&named), "{basis}");
}

#[test]
fn a_large_batch_turns_decode_compute_bound() {
    let at = |concurrency| {
        run(&[
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("runtime", "vllm"),
            ("gpu", "rtx-4090"),
            ("prompt", "128"),
            ("seq", "256"),
            ("concurrency", concurrency),
        ])
    };
    let e = at("1024");
    let sp = speed(&e);
    assert_eq!(sp.bound, Bound::Compute, "{}", sp.basis);
    assert!(sp.basis.starts_with("compute-bound"));
    let single = at("1");
    assert!(sp.output_tokens_per_s > 20.0 * speed(&single).output_tokens_per_s);
    assert!(sp
        .measure
        .as_deref()
        .unwrap()
        .contains("--max-concurrency 1024"));
}

#[test]
fn no_datasheet_is_said_not_guessed() {
    let undocumented = vramfit_engine::gpu_catalogue::GPUS
        .iter()
        .filter(|g| g.datasheet.is_none());
    for gpu in undocumented {
        let e = run(&[
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("gpu", gpu.id),
        ]);
        assert!(e.speed.is_none());
        assert!(
            e.notes.iter().any(|n| n.contains("no datasheet")),
            "{:?}",
            e.notes
        );
    }
    let mac = run(&[
        ("model", "llama-3.1-8b"),
        ("mode", "qlora"),
        ("gpu", "m2-max-64"),
    ]);
    assert!(mac.speed.is_none());
    assert!(
        mac.notes
            .iter()
            .any(|n| n.contains("no 16-bit tensor throughput")),
        "{:?}",
        mac.notes
    );
}

#[test]
fn the_serving_plan_answers_for_a_speed_target() {
    use vramfit_engine::estimate::speed_of;
    use vramfit_engine::serving_plan::plan_serving;
    let (s, _) = Scenario::from_pairs([
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("gpu", "rtx-4090"),
        ("max-model-len", "4096"),
    ]);
    let target = 40.0;
    let plan = plan_serving(&s, Some(8), Some(target)).unwrap();
    let most = plan
        .most_users_at_speed
        .expect("one request decodes faster than 40 tokens/s");
    let decode = |n: u32| {
        let mut at = s.clone();
        at.concurrency = Some(n);
        speed_of(&at).unwrap().unwrap().decode_tokens_per_s
    };
    // The most is where the speed falls below the target, or the pool's concurrency if it never
    // does before the pool is full.
    let pool = plan.max_concurrency.floor() as u32;
    assert!(decode(most) >= target && (most == pool || decode(most + 1) < target));
    let gpu = plan
        .smallest_gpu_for_speed
        .expect("some catalogue GPU serves 8 at 40 tokens/s");
    let mut there = s.clone();
    there.gpu = gpu;
    there.concurrency = Some(8);
    assert!(speed_of(&there).unwrap().unwrap().decode_tokens_per_s >= target);
}

#[test]
fn a_mac_without_a_stated_throughput_gets_decode_and_no_prefill() {
    // The M4 Max's 546 GB/s (Apple states no TFLOPS), at llama.cpp Metal's typical 93%; flash
    // attention on (llama.cpp's `auto`), so 19/22 of Metal's 189 µs a layer.
    let e = run(&[
        ("model", "llama-2-7b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("quant", "Q4_0"),
        ("gpu", "m4-max-128"),
        ("prompt", "512"),
        ("seq", "640"),
    ]);
    let sp = speed(&e);
    assert_eq!(sp.prefill_tokens_per_s, None);
    assert_eq!(sp.ttft_s, None);
    assert_eq!(sp.bound, Bound::Memory);
    assert!(sp.decode_tokens_per_s > 0.0 && sp.decode_tokens_per_s.is_finite());
    // Without a prefill to time, the output rate is decoding alone.
    close(sp.output_tokens_per_s, sp.decode_tokens_per_s);
    assert!(
        sp.basis.contains("546 GB/s × 93%, plus 32 layers × 163 µs"),
        "{}",
        sp.basis
    );
}

#[test]
fn a_mac_has_no_link_for_its_cpu_layers_to_cross() {
    // The 76-core M2 Ultra has a stated throughput (27.2 TFLOPS) and no link: layers llama.cpp
    // keeps on the CPU stay in the memory the GPU reads, so prefill stays finite.
    let e = run(&[
        ("model", "llama-2-7b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("quant", "F16"),
        ("gpu", "m2-ultra-64"),
        ("n-gpu-layers", "16"),
        ("prompt", "512"),
        ("seq", "512"),
    ]);
    let prefill = speed(&e).prefill_tokens_per_s.unwrap();
    assert!(prefill.is_finite() && prefill > 0.0, "{prefill}");
}

#[test]
fn vllm_and_sglang_are_refused_on_a_mac_and_never_planned_onto_one() {
    for runtime in ["vllm", "sglang"] {
        let (s, _) = Scenario::from_pairs([
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("runtime", runtime),
            ("gpu", "m4-max-128"),
        ]);
        let refused = estimate(&s).unwrap_err();
        assert!(
            refused
                .iter()
                .any(|e| e.field == "runtime" && e.message.contains("Metal")),
            "{refused:?}"
        );
        let (on_cuda, _) = Scenario::from_pairs([
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("runtime", runtime),
            ("gpu", "h200"),
        ]);
        let plan =
            vramfit_engine::serving_plan::plan_serving(&on_cuda, Some(4), Some(10.0)).unwrap();
        for gpu in [plan.smallest_gpu, plan.smallest_gpu_for_speed]
            .into_iter()
            .flatten()
        {
            let card = vramfit_engine::gpu_catalogue::find(&gpu).unwrap();
            assert!(!card.is_mac(), "{runtime} planned onto {gpu}");
        }
    }
    let (mac, _) = Scenario::from_pairs([
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("gpu", "m4-max-128"),
    ]);
    assert!(estimate(&mac).is_ok());
}

#[test]
fn a_layer_on_the_cpu_takes_the_cpus_time_per_node_not_the_gpus() {
    // `-ngl 25` offloads the output layer and the last 24 of Llama 3.1 8B's 32 blocks, so 8 run
    // on the CPU: 22 nodes each at ggml-cpu's 2.07 µs a node (its threads' barrier), 46 µs,
    // while the GPU's 65.5 µs a layer is charged for the 24 it runs.
    let e = llama_cpp_8b_on_4090(&[
        ("n-gpu-layers", "25"),
        ("flash-attn", "false"),
        ("prompt", "1"),
        ("seq", "2"),
    ]);
    let host = &e
        .serving
        .as_ref()
        .expect("llama.cpp plans its buffers")
        .host;
    assert_eq!(host.layers, 8);
    let basis = &speed(&e).basis;
    assert!(
        basis.contains(
            "plus 24 layers × 66 µs of kernel launches and 8 CPU layers × 46 µs of the CPU \
             threads' barriers"
        ),
        "{basis}"
    );
}

/// Llama 3.1 8B served by llama.cpp wholly on the RTX 4090, with `settings` on top.
fn llama_cpp_8b_on_4090(settings: &[(&str, &str)]) -> Estimate {
    let mut pairs = vec![
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("gpu", "rtx-4090"),
        ("n-gpu-layers", "99"),
    ];
    pairs.extend_from_slice(settings);
    run(&pairs)
}

/// llama.cpp's decode seconds per token on the RTX 4090 at two cache lengths (prompt 1).
fn llama_cpp_step(build: &str, flash_attn: &str, seq: &str) -> f64 {
    let e = llama_cpp_8b_on_4090(&[
        ("quant", "Q4_K_M"),
        ("llama-cpp-build", build),
        ("flash-attn", flash_attn),
        ("prompt", "1"),
        ("seq", seq),
    ]);
    1.0 / speed(&e).decode_tokens_per_s
}

#[test]
fn without_flash_attention_a_2024_build_reads_its_cache_slowly() {
    // Seq 2 and 4098 read a mean 1.5 and 2,049.5 cached tokens: 2,048 × 131,072 B more, at the
    // 2024 builds' cache share without flash attention (33%), at the weights' share with it.
    let more = 2048.0 * 131_072.0;
    let without = llama_cpp_step("b2843", "false", "4098") - llama_cpp_step("b2843", "false", "2");
    close(without, more / (BANDWIDTH * 0.33));
    let with = llama_cpp_step("b2843", "true", "4098") - llama_cpp_step("b2843", "true", "2");
    close(with, more / (BANDWIDTH * 0.893));
    let latest = llama_cpp_step("latest", "false", "4098") - llama_cpp_step("latest", "false", "2");
    close(latest, more / (BANDWIDTH * BANDWIDTH_SHARE));
}

/// llama.cpp's prefill seconds for a prompt on the RTX 4090 in F16 (cuBLAS, no dequantizing).
fn llama_cpp_prefill(flash_attn: &str, prompt: &str) -> f64 {
    let e = llama_cpp_8b_on_4090(&[
        ("quant", "F16"),
        ("flash-attn", flash_attn),
        ("ubatch-size", "512"),
        ("prompt", prompt),
        ("seq", prompt),
    ]);
    speed(&e).ttft_s.unwrap()
}

#[test]
fn without_flash_attention_a_prompt_writes_and_reads_its_scores() {
    // Two ubatches of 512 against the cache up to each one's end: 1024 × (1024 + 512) / 2
    // scores per query head (32) and layer (32), 20 bytes each, at the weights' share.
    let scores = 20.0 * 32.0 * 32.0 * 1024.0 * (1024.0 + 512.0) / 2.0;
    let extra = llama_cpp_prefill("false", "1024") - llama_cpp_prefill("true", "1024");
    close(extra, scores / (BANDWIDTH * BANDWIDTH_SHARE));
}

#[test]
fn a_2024_build_prefills_through_cublas_in_fp16() {
    // Before int8 MMQ a quantized file is dequantized to f16 once per ubatch (its bytes read and
    // 2 bytes a parameter written; the GEMM's read of the copy overlaps its FLOPs) and multiplied
    // at what the RTX 4090's 450 W buy on TSMC 4N, 0.439 TFLOPS a watt.
    let e = llama_cpp_8b_on_4090(&[
        ("quant", "Q4_K_M"),
        ("llama-cpp-build", "b2843"),
        ("ubatch-size", "512"),
        ("prompt", "1024"),
        ("seq", "1024"),
    ]);
    let weights = e.bytes_of(ComponentId::Weights).as_f64()
        + e.bytes_of(ComponentId::QuantConstants).as_f64();
    let prompt = 1024.0;
    let params = 8_030_261_248.0;
    let flops = 2.0 * params * prompt + 2.0 * prompt * prompt * 4096.0 * 32.0;
    let dequantized = 2.0 * (weights + 2.0 * params);
    let seconds = flops / (0.439e12 * 450.0) + dequantized / (BANDWIDTH * 0.90);
    close(speed(&e).ttft_s.unwrap(), seconds);
}

#[test]
fn a_2024_build_without_a_fitted_process_keeps_the_share() {
    // GA100 (the A100, TSMC N7) has no fit row for a rate per watt: its F16 prefill runs at 34%
    // of its 312 TFLOPS; nothing is dequantized and flash attention leaves no scores.
    let e = run(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("gpu", "a100-80"),
        ("quant", "F16"),
        ("flash-attn", "true"),
        ("llama-cpp-build", "b2837"),
        ("prompt", "1024"),
        ("seq", "1024"),
    ]);
    let prompt = 1024.0;
    let flops = 2.0 * 8_030_261_248.0 * prompt + 2.0 * prompt * prompt * 4096.0 * 32.0;
    close(speed(&e).ttft_s.unwrap(), flops / (312e12 * 0.34));
}

#[test]
fn mmq_prefills_at_its_ops_per_sm_cycle() {
    // Since int8 MMQ a quantized file's matmuls run at 477 int8 ops per SM per cycle: the RTX
    // 4090's 128 SMs at 2,520 MHz, whatever its int8 peak. With flash attention nothing is
    // serial, and the FLOPs outlast the weights' reads.
    let e = llama_cpp_8b_on_4090(&[
        ("quant", "Q4_K_M"),
        ("flash-attn", "true"),
        ("prompt", "1024"),
        ("seq", "1024"),
    ]);
    let prompt = 1024.0;
    let flops = 2.0 * 8_030_261_248.0 * prompt + 2.0 * prompt * prompt * 4096.0 * 32.0;
    close(speed(&e).ttft_s.unwrap(), flops / (477.0 * 128.0 * 2520e6));
}

/// A 2024 build's decode step for Llama 3.1 8B in `quant` on `gpu`, with flash attention (the
/// cache at the weights' share) at a context of one token: its seconds, and the bytes it reads
/// (the weights, their quantization constants and the cache).
fn step_2024(gpu: &str, quant: &str) -> (f64, f64) {
    let e = run(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("gpu", gpu),
        ("n-gpu-layers", "99"),
        ("quant", quant),
        ("llama-cpp-build", "b2843"),
        ("flash-attn", "true"),
        ("prompt", "1"),
        ("seq", "2"),
    ]);
    let read = e.bytes_of(ComponentId::Weights).as_f64()
        + e.bytes_of(ComponentId::QuantConstants).as_f64()
        + 131_072.0 * 1.5;
    (1.0 / speed(&e).decode_tokens_per_s, read)
}

/// [`step_2024`] against the hand-computed roofline on a card whose sheet states its SMs and
/// boost clock: the weights and cache at the lesser of 89.3% of the bandwidth and the batch-1
/// kernel's `sm_bytes_per_s` per SM, plus 167,000 cycles per layer at the boost clock (19/22 of
/// them under [`step_2024`]'s flash attention).
fn clocked_2024_step(
    (gpu, quant): (&str, &str),
    (bandwidth, sms, boost_hz): (f64, f64, f64),
    sm_bytes_per_s: f64,
) -> (f64, f64) {
    let (got, read) = step_2024(gpu, quant);
    let rate = (0.893 * bandwidth).min(sm_bytes_per_s * sms);
    (
        got,
        read / rate + 167e3 * FLASH_ATTN_LAYER / boost_hz * 32.0,
    )
}

/// A100 80GB SXM: 108 SMs at 1410 MHz and 2,039 GB/s.
const A100: (f64, f64, f64) = (2039e9, 108.0, 1410e6);

#[test]
fn an_hbm_card_meets_the_per_sm_ceiling_before_its_bandwidth() {
    // Q4_K_M through mmvq: 108 SMs × 10.9 GB/s = 1,177 GB/s, below 89.3% of 2,039 GB/s.
    let (got, want) = clocked_2024_step(("a100-80", "Q4_K_M"), A100, 10.9e9);
    close(got, want);
}

#[test]
fn a_16_bit_file_meets_the_dmmv_kernels_ceiling() {
    // F16 through dmmv: 108 × 1410 MHz × 6.42 B = 978 GB/s.
    let (got, want) = clocked_2024_step(("a100-80", "F16"), A100, 6.42 * 1410e6);
    close(got, want);
    let (quantized, _) = clocked_2024_step(("a100-80", "Q4_K_M"), A100, 10.9e9);
    assert!(got > quantized, "F16 reads four times the bytes");
}

#[test]
fn a_geforce_card_reads_at_its_share_below_the_per_sm_ceiling() {
    // RTX 4090: 128 SMs × 10.9 GB/s = 1,395 GB/s, above 89.3% of 1,008 GB/s.
    let (got, want) = clocked_2024_step(("rtx-4090", "Q4_K_M"), (BANDWIDTH, 128.0, 2520e6), 10.9e9);
    close(got, want);
}

#[test]
fn a_sheet_without_sms_or_a_clock_keeps_the_unclocked_share_and_time_per_layer() {
    // The RTX 5080's sheet states neither: 90% of 960 GB/s and 124 µs per layer (19/22 of it
    // under flash attention).
    let (got, read) = step_2024("rtx-5080", "Q4_K_M");
    close(
        got,
        read / (0.90 * 960e9) + 124e-6 * FLASH_ATTN_LAYER * 32.0,
    );
}

/// Below Ampere ggml-cuda captures no CUDA graph, so each step pays its launches from the host:
/// a V100 takes LLAMA_CPP_CUDA_PRE_AMPERE's 110 µs a layer (3.5 ms over 32) where an Ampere or
/// newer card takes CUDA's 65.5 µs (2.1 ms), each 19/22 of it under flash attention (llama.cpp's
/// `auto`, on); on Vulkan the card's architecture does not enter: its 1.57 ms a step over the
/// fit rows' 32 layers, 19/22 of it.
#[test]
fn a_card_older_than_ampere_launches_its_kernels_without_cuda_graphs() {
    let basis = |gpu: &str, backend: &str| {
        let e = run(&[
            ("model", "llama-2-7b"),
            ("mode", "inference"),
            ("runtime", "llama.cpp"),
            ("quant", "Q4_0"),
            ("gpu", gpu),
            ("gpu-backend", backend),
            ("n-gpu-layers", "99"),
            ("prompt", "1"),
            ("seq", "128"),
        ]);
        speed(&e).basis.clone()
    };
    assert!(basis("v100-32", "cuda").ends_with("plus 32 layers × 95 µs of kernel launches"));
    assert!(basis("a100-80", "cuda").ends_with("plus 32 layers × 57 µs of kernel launches"));
    assert!(
        basis("quadro-rtx-6000", "vulkan").ends_with("plus 32 layers × 42 µs of kernel launches")
    );
}

/// vLLM serving Llama-3.1-8B in bf16 on H100 SXMs (3.35 TB/s, NVLink 450 GB/s a direction).
fn vllm_8b_on_h100s(gpus: &str, sharding: &str, concurrency: &str) -> Estimate {
    run(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("gpu", "h100-80"),
        ("gpus", gpus),
        ("sharding", sharding),
        ("max-model-len", "4096"),
        ("concurrency", concurrency),
        ("prompt", "1"),
        ("seq", "2"),
    ])
}

#[test]
fn tensor_parallel_decode_pays_two_all_reduces_a_layer() {
    // Two ranks each read half the layers' weights and half the KV heads' cache; each of the
    // 32 layers then all-reduces twice 4096 bf16 values (8,192 B) of the one token: a ring's
    // 2 × (2 − 1)/2 of them over 450 GB/s, plus 9.5 µs, 64 times.
    let one = vllm_8b_on_h100s("1", "none", "1");
    let two = vllm_8b_on_h100s("2", "tensor", "1");
    let (w1, w2) = (
        one.bytes_of(ComponentId::Weights).as_f64(),
        two.bytes_of(ComponentId::Weights).as_f64(),
    );
    let all_reduces = 64.0 * (9.5e-6 + 8192.0 / 450e9);
    // The fixed time is the same on both; the cache a rank skips, 98,304 B at 3.35 TB/s times
    // a share of at least 30%, is under 0.1 µs.
    let by_hand = (w2 - w1) / 3350e9 + all_reduces;
    let step = |e: &Estimate| 1.0 / speed(e).decode_tokens_per_s;
    let got = step(&two) - step(&one);
    assert!((got - by_hand).abs() < 1e-7, "got {got}, by hand {by_hand}");
    assert!(speed(&two).basis.contains(
        "plus 2 all-reduces × 32 layers of 8.2 kB over 2 GPUs at 450 GB/s, 9.5 µs each: 0.61 ms"
    ));
}

#[test]
fn a_pipeline_adds_its_stages_for_one_request_and_fills_them_with_as_many() {
    // vLLM's two stages hold half the blocks and one table each, as one GPU holds both tables:
    // one request passes both in turn, so it decodes at one GPU's rate less one send of 4096
    // bf16 values; a second request rides the other batch in flight, doubling the output.
    let one = vllm_8b_on_h100s("1", "none", "1");
    let pp1 = vllm_8b_on_h100s("2", "pipeline", "1");
    let pp2 = vllm_8b_on_h100s("2", "pipeline", "2");
    let decoding = |concurrency: &str| {
        speed(&run(&[
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("runtime", "vllm"),
            ("gpu", "h100-80"),
            ("gpus", "2"),
            ("sharding", "pipeline"),
            ("max-model-len", "4096"),
            ("concurrency", concurrency),
            ("seq", "2"),
        ]))
        .output_tokens_per_s
    };
    let step = 1.0 / speed(&one).decode_tokens_per_s;
    close(
        1.0 / speed(&pp1).decode_tokens_per_s,
        step + 9.5e-6 + 8192.0 / 450e9,
    );
    close(
        speed(&pp2).decode_tokens_per_s,
        speed(&pp1).decode_tokens_per_s,
    );
    close(decoding("2"), 2.0 * decoding("1"));
    // llama.cpp's layer split runs one batch at a time: a two-GPU run decodes as one GPU's
    // reads and launches, plus one f32 copy of the hidden state (4096 × 4 B over PCIe 4.0).
    let llama = |gpus: &str| {
        1.0 / speed(&run(&[
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("runtime", "llama.cpp"),
            ("quant", "Q4_K_M"),
            ("gpu", "rtx-4090"),
            ("gpus", gpus),
            ("sharding", "pipeline"),
            ("prompt", "1"),
            ("seq", "128"),
        ]))
        .decode_tokens_per_s
    };
    close(llama("2"), llama("1") + 9.5e-6 + 16384.0 / 32e9);
}

#[test]
fn fit_finds_the_fewest_gpus_for_a_speed() {
    use vramfit_engine::estimate::speed_of;
    use vramfit_engine::serving_plan::plan_serving;
    let (s, _) = Scenario::from_pairs([
        ("model", "llama-3.3-70b"),
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("gpu", "h100-80"),
        ("max-model-len", "4096"),
    ]);
    let target = 50.0;
    let plan = plan_serving(&s, Some(1), Some(target)).unwrap();
    let fewest = plan.fewest_gpus.expect("some count holds the 70B model");
    let n = plan
        .fewest_gpus_for_speed
        .expect("some count decodes one request at 50 tokens/s");
    let decode = |gpus: u32| {
        let mut at = s.clone();
        at.gpus = gpus;
        at.sharding = vramfit_engine::sharding::Sharding::Tensor;
        at.concurrency = Some(1);
        speed_of(&at).unwrap().unwrap().decode_tokens_per_s
    };
    // By hand at tp 2: 70.6 GB a rank at 3.35 TB/s (21 ms), 80 layers × 65.5 µs (5.2 ms) and 160
    // all-reduces of 16 kB (1.5 ms): about 36 tokens/s, short of 50; at tp 4 about 57.
    assert!(n > fewest, "the speed asks for more GPUs than the memory");
    assert!(decode(n) >= target && decode(n / 2) < target);
    assert_eq!(n, 4);
}
