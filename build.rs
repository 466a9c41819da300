//! Computes the page's accuracy panel at build time: calibration/'s published measurements,
//! runtime logs, speeds and training rates through `vramfit_engine::accuracy`, the functions
//! `cargo xtask accuracy` and `vramfit estimate --accuracy` use, written as one finished HTML
//! fragment per kind of run, and one table row's cells per speed kind (at every breadth the
//! engine widens a kind to), that `src/components/accuracy.rs` includes. The fragments are
//! static, so the page ships them as text rather than as view code, which would add to the
//! page's wasm for no behaviour.

use std::fmt::Write;
use std::path::Path;
use vramfit_engine::accuracy::{
    speed_validation, validation, KindAccuracy, RunKind, SpeedGroup, PEAK,
};

const FILES: [&str; 6] = [
    "measured-public.csv",
    "scenarios.csv",
    "runtime-logs.csv",
    "speed-measured.csv",
    "speed-scenarios.csv",
    "training-speed.csv",
];

fn main() {
    let calibration = Path::new(env!("CARGO_MANIFEST_DIR")).join("calibration");
    let [measured, scenarios, logs, speed_measured, speed_scenarios, training] =
        FILES.map(|name| {
            println!("cargo:rerun-if-changed=calibration/{name}");
            std::fs::read_to_string(calibration.join(name))
                .unwrap_or_else(|e| panic!("cannot read calibration/{name}: {e}"))
        });
    let summaries = validation(&measured, &scenarios, &logs);
    let mut table = String::from("&[\n");
    for kind in RunKind::all() {
        let html = fragment(&KindAccuracy::of(&summaries, kind));
        writeln!(table, "    ({:?}, {:?}),", kind.key(), html).expect("writing to a String");
    }
    table.push(']');
    write("accuracy.rs", &table);
    let mut speed = String::from("&[\n");
    for group in speed_validation(&speed_measured, &speed_scenarios, &training) {
        let s = &group.summary;
        writeln!(
            speed,
            "    ({:?}, {}, {:?}),",
            s.kind,
            s.rows,
            speed_cells(&group)
        )
        .expect("writing to a String");
    }
    speed.push(']');
    write("speed_accuracy.rs", &speed);
}

fn write(name: &str, text: &str) {
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join(name);
    std::fs::write(&out, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

/// A speed kind's cells in the panel's speed table, after the figure and the kind the page
/// names: its held-out rows, the median and worst error and the rows inside the band.
fn speed_cells(g: &SpeedGroup) -> String {
    let s = &g.summary;
    let band = match g.banded {
        0 => "no band".to_string(),
        banded => format!("{} of {banded}", g.in_band),
    };
    format!(
        "<td>{}</td><td>{:.1}%</td><td>{:.1}%<br><small>{}</small></td><td>{band}</td>",
        s.rows,
        s.median_abs_pct,
        s.worst_abs_pct,
        escape(&s.worst_id)
    )
}

/// Text as HTML: the sources are free text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The panel's body for one kind of run: its figures, the note when few rows validate it, and the
/// sources of the published peaks (the runtime logs' dozens of excerpts stay in calibration/).
fn fragment(a: &KindAccuracy) -> String {
    let mut html = format!(
        r#"<p data-testid="accuracy-kind" data-kind="{}">Published runs like this one ({}), against this planner:</p>"#,
        a.kind,
        escape(a.label)
    );
    if !a.figures.is_empty() {
        html += r#"<table><thead><tr><th scope="col">Figure</th><th scope="col">Rows</th><th scope="col">Median error</th><th scope="col">Worst error</th><th scope="col">Within ±10%</th></tr></thead><tbody>"#;
        for f in &a.figures {
            let figure = if f.figure == PEAK {
                "peak memory"
            } else {
                &f.figure
            };
            write!(
                html,
                r#"<tr><th scope="row">{}</th><td>{}</td><td>{:.1}%</td><td>{:.1}%<br><small>{}</small></td><td>{} of {}</td></tr>"#,
                figure, f.rows, f.median_abs_pct, f.worst_abs_pct, escape(&f.worst_id),
                f.within_10_pct, f.rows
            )
            .expect("writing to a String");
        }
        html += "</tbody></table>";
    }
    if let Some(note) = &a.note {
        write!(
            html,
            r#"<p class="note" data-testid="accuracy-few">{}</p>"#,
            escape(note)
        )
        .expect("writing to a String");
    }
    let peaks: Vec<&String> = a
        .figures
        .iter()
        .filter(|f| f.figure == PEAK)
        .flat_map(|f| &f.sources)
        .collect();
    if !peaks.is_empty() {
        html += "<details><summary>Sources</summary><ul>";
        for source in peaks {
            write!(html, "<li>{}</li>", escape(source)).expect("writing to a String");
        }
        html += "</ul></details>";
    }
    if a.figures.iter().any(|f| f.figure != PEAK) {
        html += r#"<p class="note">Each runtime log is cited in calibration/runtime-logs.csv; <code>vramfit estimate --accuracy</code> lists them.</p>"#;
    }
    html
}
