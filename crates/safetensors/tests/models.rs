//! Headers shaped like real checkpoints, built with `Header::lay_out` and read back: a dense BF16
//! model (Qwen3-0.6B), an FP8 block-quantized layer and a GPTQ int4 layer, to show their sizes
//! come out of the header exactly and their dtypes read.

use vramfit_safetensors::{parse_header, write_header, Dtype, Header};

fn read_back(header: &Header) -> Header {
    let read = parse_header(&write_header(header)).unwrap();
    assert_eq!(&read, header);
    read
}

/// Qwen3-0.6B's `model.safetensors`, as its `config.json` shapes it (hidden 1024, 28 layers,
/// 16 query heads and 8 KV heads of 128, intermediate 3072, vocabulary 151,936, QK-norm, tied
/// embeddings: no `lm_head.weight`), all BF16.
///
/// The published checkpoint's total is what its own header gives; this test holds the arithmetic
/// of the shapes above, and is to be checked against the real file's header when the Hub fixture
/// server exists (including whether the file also stores `lm_head.weight`, which would add
/// 151,936 × 1024 values).
fn qwen3_0_6b() -> Vec<(String, Dtype, Vec<u64>)> {
    let (hidden, layers, q, kv, head, ffn, vocab) = (1024, 28, 16, 8, 128, 3072, 151_936);
    let mut tensors = vec![("model.embed_tokens.weight".into(), vec![vocab, hidden])];
    for i in 0..layers {
        let p = format!("model.layers.{i}");
        tensors.extend([
            (format!("{p}.input_layernorm.weight"), vec![hidden]),
            (format!("{p}.mlp.down_proj.weight"), vec![hidden, ffn]),
            (format!("{p}.mlp.gate_proj.weight"), vec![ffn, hidden]),
            (format!("{p}.mlp.up_proj.weight"), vec![ffn, hidden]),
            (format!("{p}.post_attention_layernorm.weight"), vec![hidden]),
            (format!("{p}.self_attn.k_norm.weight"), vec![head]),
            (
                format!("{p}.self_attn.k_proj.weight"),
                vec![kv * head, hidden],
            ),
            (
                format!("{p}.self_attn.o_proj.weight"),
                vec![hidden, q * head],
            ),
            (format!("{p}.self_attn.q_norm.weight"), vec![head]),
            (
                format!("{p}.self_attn.q_proj.weight"),
                vec![q * head, hidden],
            ),
            (
                format!("{p}.self_attn.v_proj.weight"),
                vec![kv * head, hidden],
            ),
        ]);
    }
    tensors.push(("model.norm.weight".into(), vec![hidden]));
    tensors
        .into_iter()
        .map(|(name, shape)| (name, Dtype::BF16, shape))
        .collect()
}

#[test]
fn qwen3_0_6b_sums_to_its_parameter_count_in_bf16() {
    let header =
        read_back(&Header::lay_out(qwen3_0_6b(), vec![("format".into(), "pt".into())]).unwrap());
    assert_eq!(header.tensors.len(), 1 + 28 * 11 + 1);

    // The parameter count from the shapes, part by part.
    let embed = 151_936 * 1024;
    let attention = 2048 * 1024 + 1024 * 1024 + 1024 * 1024 + 1024 * 2048 + 128 + 128;
    let mlp = 3 * 3072 * 1024;
    let norms = 2 * 1024;
    let per_layer = attention + mlp + norms;
    assert_eq!(per_layer, 15_730_944);
    let parameters: u64 = embed + 28 * per_layer + 1024;
    assert_eq!(parameters, 596_049_920);
    let counted: u64 = header.tensors.iter().map(|t| t.elements().unwrap()).sum();
    assert_eq!(counted, parameters);

    assert_eq!(header.tensor_bytes(), 2 * parameters);
    assert_eq!(header.tensor_bytes(), 1_192_099_840);
    assert_eq!(header.file_len(), header.data_start + 1_192_099_840);
    assert_eq!(
        header
            .tensor("model.layers.27.self_attn.o_proj.weight")
            .map(|t| (t.shape.clone(), t.bytes())),
        Some((vec![1024, 2048], 4_194_304))
    );

    // Every prefix shorter than the header asks for exactly the header.
    let bytes = write_header(&header);
    for len in [0, 7, 8, 9, bytes.len() / 2, bytes.len() - 1] {
        let needed = if len < 8 { 8 } else { header.data_start };
        assert_eq!(
            parse_header(&bytes[..len]),
            Err(vramfit_safetensors::ParseError::Truncated { needed })
        );
    }
}

/// Block-wise FP8 as DeepSeek-V3 and Qwen3-FP8 ship it: an `F8_E4M3` weight and an `F32`
/// `weight_scale_inv` with one scale per 128×128 block (`weight_block_size: [128, 128]`),
/// rounded up at the edges. The shape is DeepSeek-V3's `kv_a_proj_with_mqa` (576 × 7168).
#[test]
fn fp8_block_quantized_weights_read() {
    let (rows, cols, block) = (576u64, 7168u64, 128u64);
    let scales = vec![rows.div_ceil(block), cols.div_ceil(block)];
    assert_eq!(scales, [5, 56]);
    let p = "model.layers.0.self_attn.kv_a_proj_with_mqa";
    let header = read_back(
        &Header::lay_out(
            [
                (format!("{p}.weight"), Dtype::F8_E4M3, vec![rows, cols]),
                (format!("{p}.weight_scale_inv"), Dtype::F32, scales),
            ],
            vec![],
        )
        .unwrap(),
    );
    let weight = &header.tensors[0];
    assert_eq!((weight.dtype, weight.bytes()), (Dtype::F8_E4M3, 576 * 7168));
    assert_eq!(header.tensors[1].bytes(), 5 * 56 * 4);
    assert_eq!(header.tensor_bytes(), 4_128_768 + 1120);
}

/// GPTQ 4-bit as AutoGPTQ/GPTQModel ship it for a 4096 × 4096 projection with group size 128:
/// `qweight` packs 8 values per `I32` along the input (`[in / 8, out]`), `qzeros` packs 8 zero
/// points per `I32` along the output (`[in / 128, out / 8]`), `scales` is one `F16` per group and
/// output (`[in / 128, out]`), and `g_idx` one `I32` per input.
#[test]
fn gptq_int4_weights_read() {
    let (inputs, outputs, group) = (4096u64, 4096u64, 128u64);
    let p = "model.layers.0.self_attn.q_proj";
    let header = read_back(
        &Header::lay_out(
            [
                (format!("{p}.g_idx"), Dtype::I32, vec![inputs]),
                (
                    format!("{p}.qweight"),
                    Dtype::I32,
                    vec![inputs / 8, outputs],
                ),
                (
                    format!("{p}.qzeros"),
                    Dtype::I32,
                    vec![inputs / group, outputs / 8],
                ),
                (
                    format!("{p}.scales"),
                    Dtype::F16,
                    vec![inputs / group, outputs],
                ),
            ],
            vec![],
        )
        .unwrap(),
    );
    let qweight = header.tensor(&format!("{p}.qweight")).unwrap();
    assert_eq!(qweight.bytes(), inputs * outputs / 2, "4 bits per weight");
    assert_eq!(
        header.tensor(&format!("{p}.scales")).map(|t| t.bytes()),
        Some(32 * 4096 * 2)
    );
    assert_eq!(
        header.tensor_bytes(),
        4 * 4096 + 8_388_608 + 4 * 32 * 512 + 2 * 32 * 4096
    );
}

/// MXFP4 and MXFP6 elements (`F4`, `F6_*`) with their `F8_E8M0` scales, one per 32 values.
#[test]
fn microscaling_weights_read() {
    let header = read_back(
        &Header::lay_out(
            [
                ("w4".to_string(), Dtype::F4, vec![64, 96]),
                ("w4_scale".to_string(), Dtype::F8_E8M0, vec![64, 3]),
                ("w6".to_string(), Dtype::F6_E2M3, vec![64, 96]),
                ("w6_scale".to_string(), Dtype::F8_E8M0, vec![64, 3]),
            ],
            vec![],
        )
        .unwrap(),
    );
    let bytes: Vec<u64> = header.tensors.iter().map(|t| t.bytes()).collect();
    assert_eq!(bytes, [64 * 96 / 2, 192, 64 * 96 * 6 / 8, 192]);
}
