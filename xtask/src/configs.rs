//! `cargo xtask configs`: docs/models.md's table of real config.json files: published
//! parameters and checkpoint size beside what vramfit reads from each config.

use std::path::Path;
use vramfit_engine::model::{parse_hf_config, parse_published, ActiveClaim};

fn billions(params: f64) -> String {
    format!("{:.2}B", params / 1e9)
}

pub fn report(root: &Path) -> Result<(), String> {
    let dir = root.join("crates/engine/tests/fixtures/hf-configs");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| format!("cannot read {name}: {e}"))
    };
    println!("| config.json | published params | vramfit params | published active | vramfit active | checkpoint | vramfit weights |");
    println!("|---|---|---|---|---|---|---|");
    for p in parse_published(&read("published.csv")?)? {
        let config = parse_hf_config(&read(&p.file)?).map_err(|e| format!("{}: {e}", p.file))?;
        let counted = config
            .counted(p.active)
            .map_err(|e| format!("{}: {e:?}", p.file))?;
        let published_active = match p.active {
            ActiveClaim::Dense => String::new(),
            ActiveClaim::Label => "(label only)".to_string(),
            ActiveClaim::WithEmbedding(a) => billions(a),
            ActiveClaim::WithoutEmbedding(a) => format!("{} excl. embedding", billions(a)),
        };
        let gb = |bytes: f64| format!("{:.2} GB", bytes / 1e9);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.file.trim_end_matches(".json"),
            billions(p.total_params),
            billions(counted.params),
            published_active,
            counted.active.map(billions).unwrap_or_default(),
            p.checkpoint_bytes.map(gb).unwrap_or_default(),
            gb(counted.weight_bytes),
        );
    }
    Ok(())
}
