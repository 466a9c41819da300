//! llama.cpp's buffers as its build and settings place them: which layers `-ngl` offloads, the
//! compute buffer's peak (the attention mask, a CPU weight's matmul run on the GPU, the logits),
//! unified or per-slot KV streams, and the Vulkan backend.

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::estimate::{estimate, Estimate};
use vramfit_engine::Scenario;

const MIB: f64 = 1_048_576.0;

fn run(query: &str) -> Estimate {
    let mut s = Scenario::default();
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap();
        s.set(k, v).unwrap_or_else(|e| panic!("{pair}: {e}"));
    }
    estimate(&s).expect("a valid scenario")
}

fn gpu_mib(query: &str, id: &str) -> f64 {
    run(query).bytes_of(ComponentId::parse(id).unwrap()).0 as f64 / MIB
}

fn host_mib(query: &str, id: &str) -> f64 {
    run(query)
        .serving
        .expect("a llama.cpp scenario reports its buffers")
        .host
        .components
        .iter()
        .filter(|c| c.id == id)
        .map(|c| c.bytes.0 as f64 / MIB)
        .sum()
}

const MISTRAL: &str = "mode=inference&runtime=llama.cpp&model=mistral-7b&quant=Q4_K_M&ctx-size=768\
                       &ubatch-size=256&logit-rows=ubatch";

#[test]
fn older_builds_offload_blocks_before_the_output_layer() {
    // Mistral-7B has 32 blocks. Since PR #18148, -ngl 20 is the output layer and 19 blocks;
    // before it, 20 blocks and the output layer stays in system RAM.
    let gpu = |ngl: u32, order: &str| {
        gpu_mib(
            &format!("{MISTRAL}&n-gpu-layers={ngl}&offload-output={order}"),
            "weights",
        )
    };
    let output_layer = gpu(1, "first");
    let block = gpu(21, "first") - gpu(20, "first");
    assert!(output_layer > 100.0 && block > 100.0);
    assert!((gpu(20, "last") - gpu(20, "first") - (block - output_layer)).abs() < 1e-3);
    assert_eq!(gpu(1, "last"), block);
    // Every layer offloads everything under either rule.
    assert_eq!(gpu(33, "first"), gpu(33, "last"));
}

#[test]
fn unset_defaults_follow_the_build_and_say_which_applied() {
    let base = "mode=inference&runtime=llama.cpp&model=mistral-7b&quant=Q4_K_M&ctx-size=768\
                &ubatch-size=256&parallel=4&n-gpu-layers=20";
    let at = |build: &str| run(&format!("{base}&llama-cpp-build={build}"));
    let same = |a: &Estimate, b: &Estimate| assert_eq!(a.total_bytes, b.total_bytes);
    // b7445: output layer last, a row of logits per ubatch token, --fit off.
    same(
        &at("b7445"),
        &run(&format!(
            "{base}&offload-output=last&logit-rows=ubatch&fit=false"
        )),
    );
    // b9460 and later: the output layer first, a row per slot.
    same(
        &at("9460"),
        &run(&format!("{base}&offload-output=first&logit-rows=slots")),
    );
    same(&at("latest"), &at("b9460"));
    let settings = at("b7000").serving.unwrap().settings;
    let from = |key: &str| {
        let s = settings.iter().find(|s| s.key == key).unwrap();
        (s.value.clone(), s.default_from.clone().unwrap_or_default())
    };
    assert_eq!(from("offload-output").0, "last");
    assert!(from("offload-output").1.contains("#18148"));
    assert_eq!(from("logit-rows").0, "ubatch");
    assert!(from("logit-rows").1.contains("#23861"));
    assert_eq!(from("fit").0, "off");
    assert!(from("fit").1.contains("#16653"));
    assert_eq!(from("llama-cpp-build").0, "b7000");
    // A build inside the window where PR #18148's first build is unpinned says so.
    assert!(at("b8000").notes.iter().any(|n| n.contains("not pinned")));
}

#[test]
fn an_output_layer_left_on_the_cpu_is_copied_to_the_gpu_for_its_matmul() {
    // llama-032 (llama-cpp-python, mid-2025): 137.79 MiB = the q6_K output weight (102.54 MiB)
    // and the logits of 256 rows, both in the GPU's compute buffer.
    let q = format!("{MISTRAL}&n-gpu-layers=20&offload-output=last");
    let compute = gpu_mib(&q, "compute_buffer");
    assert!((compute - 137.79).abs() / 137.79 < 0.03, "{compute} MiB");
    // Below 32 tokens per ubatch ggml-cuda runs it on the CPU: the logits move to the host.
    let small = format!("{MISTRAL}&n-gpu-layers=20&offload-output=last&ubatch-size=16");
    assert!(gpu_mib(&small, "compute_buffer") < 20.0);
    assert!(host_mib(&small, "compute_buffer") > 1.9);
}

#[test]
fn a_cpu_blocks_weight_copy_is_not_added_to_the_logits_peak() {
    // llama-039: Llama-3.1-8B Q4_0, -ngl 15 of 33, ubatch 512: the logits with the final norm
    // beside them (258.5 MiB) are the peak; the copy of one CPU block's weight happens while they
    // are not allocated.
    let q = "mode=inference&runtime=llama.cpp&model=llama-3.1-8b&quant=Q4_0&ctx-size=32768\
             &ubatch-size=512&logit-rows=ubatch&n-gpu-layers=15";
    let logits = 4.0 * 512.0 * (128_256.0 + 4096.0) / MIB;
    assert!((gpu_mib(q, "compute_buffer") - logits).abs() < 0.01);
}

#[test]
fn slots_with_their_own_streams_attend_over_their_own_cells() {
    // Four slots of 16k: per-slot streams mask 16k cells per token; a unified cache masks 64k.
    let base = "mode=inference&runtime=llama.cpp&model=llama-3.1-8b&quant=Q4_K_M&ctx-size=65536\
                &parallel=4&ubatch-size=512&flash-attn=false";
    let split = gpu_mib(base, "compute_buffer");
    let unified = gpu_mib(&format!("{base}&kv-unified=true"), "compute_buffer");
    // Without flash attention the scores are heads × cells × ubatch f32.
    let scores = |cells: f64| 4.0 * 32.0 * cells * 512.0 / MIB;
    assert!(unified - split > 0.9 * (scores(65536.0) - scores(16384.0)));
    // The KV buffer holds the same cells either way.
    assert_eq!(
        gpu_mib(base, "kv_cache"),
        gpu_mib(&format!("{base}&kv-unified=true"), "kv_cache")
    );
    // A unified slot can use the whole cache.
    let context = |q: &str| run(q).serving.unwrap().context_tokens;
    assert_eq!(context(&format!("{base}&kv-unified=true")), 65536);
    assert_eq!(context(base), 16384);
}

#[test]
fn flash_attention_peaks_at_the_mask_cast_for_long_contexts() {
    // llama-042: at 262,144 cells and ubatch 512 the f32 mask copied from the host (512 MiB)
    // beside its f16 cast (256 MiB) outgrows the logits (501 MiB); the log says 808.02 MiB.
    let q = "mode=inference&runtime=llama.cpp&model=llama-3.1-8b&quant=Q4_K_M&ctx-size=262144\
             &ubatch-size=512&logit-rows=ubatch&kq-mask=f32";
    let mask = 262_144.0 * 512.0 / MIB;
    assert!(gpu_mib(q, "compute_buffer") >= 6.0 * mask);
}

#[test]
fn an_f16_mask_from_the_host_leaves_no_cast() {
    // llama-048 (b11151, after PR #23764): Qwen3.5-27B's shape at 262,144 cells, ubatch 512,
    // on ROCm: 378.02 MiB logged, the FFN's 4u(2E + 3F) (122 MiB) beside the f16 mask (256 MiB).
    let q = "mode=inference&runtime=llama.cpp&model=qwen3.5-27b&n-gpu-layers=65&ctx-size=262144\
             &ubatch-size=512&flash-attn=true";
    let mask = 262_144.0 * 512.0 / MIB;
    let ffn = 4.0 * 512.0 * (2.0 * 5120.0 + 3.0 * 17408.0) / MIB;
    let gpu = gpu_mib(q, "compute_buffer");
    assert!((gpu - (2.0 * mask + ffn)).abs() < 0.01, "{gpu}");
    assert!((gpu - 378.02).abs() / 378.02 < 0.01, "{gpu}");
    // The same run on a build before the PR holds the f32 mask and its cast.
    assert!(gpu_mib(&format!("{q}&kq-mask=f32"), "compute_buffer") >= 6.0 * mask);
}

#[test]
fn the_mask_cast_sits_above_the_first_attention_layers_roped_q_and_a_hidden_wide_block() {
    // Replaying ggml-alloc over Llama-3-8B's layer 0 with flash attention puts the f16 cast
    // above the embeddings, the f32 mask, the attention norm's freed block and the roped Q:
    // 4u(2E + E_q) = 24 MiB beside the masks at u 512, whatever the cell count.
    let llama = |cells: u32| {
        let q = format!(
            "mode=inference&runtime=llama.cpp&model=llama-3.1-8b&quant=Q4_K_M&ctx-size={cells}\
             &ubatch-size=512&logit-rows=ubatch&flash-attn=true&kq-mask=f32"
        );
        gpu_mib(&q, "compute_buffer") - 6.0 * f64::from(cells) * 512.0 / MIB
    };
    assert!((llama(262_144) - 24.0).abs() < 0.01, "{}", llama(262_144));
    assert!((llama(131_072) - 24.0).abs() < 0.01, "{}", llama(131_072));
    // llama-042, Qwen3.5-9B at 262,144 cells: 808.02 MiB logged; its gated attention's fused
    // Q+gate projection (16 MiB) is the part the engine has no input for.
    let qwen35 = gpu_mib(
        "mode=inference&runtime=llama.cpp&layers=32&hidden=4096&heads=16&kv-heads=4&head-dim=256\
         &ffn=12288&vocab=248320&tied=false&gated=true&recurrent-layers=24\
         &no-attention-layers=24&recurrent-heads=32&recurrent-head-dim=128&recurrent-state=128\
         &recurrent-groups=16&recurrent-conv=4&quant=Q4_K_M&n-gpu-layers=33&ctx-size=262144\
         &parallel=2&ubatch-size=512&flash-attn=true&cache-type-k=q8_0&cache-type-v=q8_0\
         &logit-rows=ubatch&kv-unified=true&kq-mask=f32",
        "compute_buffer",
    );
    assert!((qwen35 - 808.02).abs() / 808.02 < 0.03, "{qwen35}");
}

#[test]
fn vulkan_keeps_the_masks_under_the_logits() {
    // llama-035: Vulkan, Llama-3.1-8B, 16k cells, ubatch 1024: 613.01 MiB logged, the logits
    // (533 MiB) and both masks (96 MiB); CUDA reuses the masks' memory for the logits.
    let q = "mode=inference&runtime=llama.cpp&model=llama-3.1-8b&quant=Q4_0&ctx-size=16384\
             &ubatch-size=1024&logit-rows=ubatch&kq-mask=f32";
    let cuda = gpu_mib(q, "compute_buffer");
    let vulkan = gpu_mib(&format!("{q}&gpu-backend=vulkan"), "compute_buffer");
    assert!((vulkan - cuda - 96.0).abs() < 0.01, "{cuda} / {vulkan}");
    assert!((vulkan - 613.01).abs() / 613.01 < 0.03);
}

#[test]
fn settings_as_applied_list_every_setting_of_the_runtime() {
    use vramfit_engine::runtime::Runtime;
    use vramfit_engine::scenario::FIELDS;
    for (name, runtime) in [
        ("vllm", Runtime::Vllm),
        ("sglang", Runtime::Sglang),
        ("llama.cpp", Runtime::LlamaCpp),
    ] {
        let serving = run(&format!("mode=inference&runtime={name}"))
            .serving
            .expect("a serving runtime reports its settings");
        let listed: Vec<&str> = serving.settings.iter().map(|s| s.key.as_str()).collect();
        for field in FIELDS {
            let runtimes_own =
                field.group.applies_to(runtime) && !field.group.applies_to(Runtime::Transformers);
            assert!(
                !runtimes_own || listed.contains(&field.key),
                "{name}: `{}` is not in the settings as applied {listed:?}",
                field.key
            );
        }
    }
}

#[test]
fn a_fused_qkv_projection_keeps_its_roped_q_and_k_beside_it() {
    // llama-009: Phi-3-mini (one `attn_qkv`), 4096 cells, ubatch 256, no flash attention:
    // 150.00 MiB logged, the scores and mask (132 MiB), 16uE (12 MiB) and the roped Q and K that
    // cannot reuse the fused output's memory (4u(E + E_kv) = 6 MiB).
    let q = "mode=inference&runtime=llama.cpp&model=phi-3-mini&ctx-size=4096&ubatch-size=256\
             &flash-attn=false&logit-rows=ubatch";
    assert!((gpu_mib(q, "compute_buffer") - 150.0).abs() < 0.01);
    // The same shape typed by hand has three projections, and no roped copies.
    let by_hand = "mode=inference&runtime=llama.cpp&layers=32&hidden=3072&heads=32&kv-heads=32\
                   &head-dim=96&ffn=8192&vocab=32064&tied=false&gated=true&ctx-size=4096\
                   &ubatch-size=256&flash-attn=false&logit-rows=ubatch";
    assert!((gpu_mib(q, "compute_buffer") - gpu_mib(by_hand, "compute_buffer") - 6.0).abs() < 0.01);
}

#[test]
fn a_hybrids_attention_blocks_are_every_fourth_as_llama_cpp_loads_them() {
    // Qwen3.5-27B (llama-040): 64 blocks, attention where (il + 1) % 4 == 0. -ngl 26 offloads
    // the output layer and blocks 39–63, 7 of the 16 attention blocks and 18 of the 48
    // recurrent ones, which is what its log's CUDA0 KV (3584 of 8192 MiB) and RS buffers say.
    let q = "mode=inference&runtime=llama.cpp&model=qwen3.5-27b&quant=Q4_K_S&ctx-size=131072\
             &parallel=1&ubatch-size=1024&flash-attn=true&n-gpu-layers=26";
    let at = |ngl: u32, id: &str| {
        gpu_mib(
            &q.replace("n-gpu-layers=26", &format!("n-gpu-layers={ngl}")),
            id,
        )
    };
    let kv = |ngl: u32| at(ngl, "kv_cache");
    let state = |ngl: u32| at(ngl, "recurrent_state");
    assert_eq!(kv(26), kv(65) * 7.0 / 16.0);
    assert_eq!(state(26), state(65) * 18.0 / 48.0);
    // The last block is an attention block, the one before it recurrent.
    assert!(kv(2) > 0.0 && state(2) == 0.0);
    assert!(kv(3) == kv(2) && state(3) > 0.0);
    // The weights follow: llama-040 logs a 6096.65 MiB CUDA0 model buffer; with every kind
    // stacked in the last blocks the offloaded 25 held 15% more.
    let weights = gpu_mib(q, "weights");
    assert!((weights / 6096.65 - 1.0).abs() < 0.01, "{weights}");
}

/// The value and the origin llama.cpp's settings list gives a key.
fn setting(e: &Estimate, key: &str) -> (String, Option<String>) {
    let serving = e.serving.as_ref().expect("llama.cpp reports its settings");
    let s = serving.settings.iter().find(|s| s.key == key).unwrap();
    (s.value.clone(), s.default_from.clone())
}

const SEVENTY_ON_A_4090: &str =
    "mode=inference&runtime=llama.cpp&model=llama-3.1-70b&quant=Q4_K_M&ctx-size=8192&gpu=rtx-4090";

#[test]
fn fit_moves_a_dense_models_layers_until_a_gib_stays_free() {
    let fitted = run(SEVENTY_ON_A_4090);
    let (ngl, from) = setting(&fitted, "n-gpu-layers");
    let ngl: u32 = ngl.parse().unwrap();
    assert!(ngl > 1 && ngl < 81, "-ngl {ngl}");
    assert_eq!(from.as_deref(), Some("chosen by --fit"));
    assert!(fitted.verdict.fits());
    // The same layers given by hand are the same buffers; one more layer is more.
    let with = |n: u32| run(&format!("{SEVENTY_ON_A_4090}&n-gpu-layers={n}"));
    assert_eq!(with(ngl).total_bytes, fitted.total_bytes);
    assert!(with(ngl + 1).total_bytes > fitted.total_bytes);
    // Off, or with -ngl given, llama.cpp loads every layer as asked, and runs out of memory.
    assert!(!run(&format!("{SEVENTY_ON_A_4090}&fit=false"))
        .verdict
        .fits());
    let given = run(&format!("{SEVENTY_ON_A_4090}&n-gpu-layers=81"));
    assert!(!given.verdict.fits());
    assert!(given
        .notes
        .iter()
        .any(|n| n.contains("already set by user")));
}

#[test]
fn fit_keeps_a_mixture_of_experts_layers_on_the_gpu_with_some_experts_in_system_ram() {
    let q = "mode=inference&runtime=llama.cpp&model=qwen3-30b-a3b&quant=Q4_K_M&ctx-size=16384&gpu=rtx-3060";
    let fitted = run(q);
    assert_eq!(setting(&fitted, "n-gpu-layers").0, "49");
    let (moe, from) = setting(&fitted, "n-cpu-moe");
    let moe: u32 = moe.parse().unwrap();
    assert!(moe > 0 && moe < 48, "--n-cpu-moe {moe}");
    assert_eq!(from.as_deref(), Some("chosen by --fit"));
    assert!(fitted.verdict.fits());
    // One layer fewer with its experts in system RAM does not leave the margin.
    let fewer = run(&format!("{q}&n-gpu-layers=49&n-cpu-moe={}", moe - 1));
    assert!(fewer.total_bytes > fitted.total_bytes);
    assert_eq!(
        run(&format!("{q}&n-gpu-layers=49&n-cpu-moe={moe}")).total_bytes,
        fitted.total_bytes
    );
}

const EIGHT_ON_A_3070: &str =
    "mode=inference&runtime=llama.cpp&model=llama-3.1-8b&quant=Q4_K_M&gpu=rtx-3070";

#[test]
fn without_c_fit_shrinks_the_trained_context_to_what_leaves_a_gib_free() {
    let fitted = run(&format!("{EIGHT_ON_A_3070}&ctx-size=auto"));
    let (cells, from) = setting(&fitted, "ctx-size");
    let cells: u32 = cells.parse().unwrap();
    assert_eq!(from.as_deref(), Some("chosen by --fit"));
    assert!(
        cells > 4096 && cells < 131_072 && cells.is_multiple_of(256),
        "-c {cells}"
    );
    // Every layer stays on the GPU, and the context given by hand is the same buffers.
    assert_eq!(setting(&fitted, "n-gpu-layers").0, "33");
    let given = |c: u32| run(&format!("{EIGHT_ON_A_3070}&ctx-size={c}&n-gpu-layers=33"));
    assert_eq!(given(cells).total_bytes, fitted.total_bytes);
    // --fit given that context keeps every layer on the GPU, and 1024 cells more it would not:
    // llama.cpp interpolates between the buffers at the trained context and at 4096, then rounds
    // down to 256.
    let layers_at = |c: u32| {
        setting(
            &run(&format!("{EIGHT_ON_A_3070}&ctx-size={c}")),
            "n-gpu-layers",
        )
        .0
    };
    assert_eq!(layers_at(cells), "33");
    assert_ne!(layers_at(cells + 1024), "33");
    assert!(fitted
        .notes
        .iter()
        .any(|n| n.contains(&format!("shrinks the context from 131072 to {cells} cells"))));
    let serving = fitted.serving.as_ref().unwrap();
    assert!(serving
        .command
        .as_deref()
        .is_some_and(|c| c.contains(&format!("-c {cells} "))));
}

#[test]
fn a_given_c_0_keeps_the_trained_context_from_pr_19070_and_layers_move_instead() {
    let whole = run(&format!("{EIGHT_ON_A_3070}&ctx-size=0"));
    assert_eq!(setting(&whole, "ctx-size").0, "131072");
    let ngl: u32 = setting(&whole, "n-gpu-layers").0.parse().unwrap();
    assert!(ngl < 33, "-ngl {ngl}");
    // Before it, --fit shrank -c 0 as it shrinks no -c.
    let older = run(&format!(
        "{EIGHT_ON_A_3070}&ctx-size=0&llama-cpp-build=b7539"
    ));
    let cells: u32 = setting(&older, "ctx-size").0.parse().unwrap();
    assert!(cells < 131_072);
    // Without --fit, llama_context takes the trained context once over every slot.
    let off = run(&format!(
        "{EIGHT_ON_A_3070}&ctx-size=0&fit=false&parallel=4&n-gpu-layers=33"
    ));
    assert_eq!(setting(&off, "ctx-size").0, "131072");
    let per_stream = run(&format!(
        "{EIGHT_ON_A_3070}&ctx-size=0&parallel=4&n-gpu-layers=0"
    ));
    assert_eq!(setting(&per_stream, "ctx-size").0, "524288");
}

#[test]
fn when_even_4096_cells_leave_no_margin_the_layers_move_too() {
    let fitted = run(
        "mode=inference&runtime=llama.cpp&model=llama-3.1-70b&quant=Q4_K_M&gpu=rtx-4090&ctx-size=auto",
    );
    assert_eq!(setting(&fitted, "ctx-size").0, "4096");
    let ngl: u32 = setting(&fitted, "n-gpu-layers").0.parse().unwrap();
    assert!(ngl > 1 && ngl < 81, "-ngl {ngl}");
    assert!(fitted.verdict.fits());
    // A -ngl given stops --fit after the context: it still shrinks, and the layers load as asked.
    let given = run(
        "mode=inference&runtime=llama.cpp&model=llama-3.1-70b&quant=Q4_K_M&gpu=rtx-4090&ctx-size=auto&n-gpu-layers=81",
    );
    assert_eq!(setting(&given, "ctx-size").0, "4096");
    assert_eq!(setting(&given, "n-gpu-layers").0, "81");
    assert!(!given.verdict.fits());
}
