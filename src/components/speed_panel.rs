//! The speed panel: how fast the scenario runs on its GPU (`Estimate::speed`: prefill, decode,
//! output tokens/s, time to first token, the band and the step's basis), with the benchmark that
//! measures it; or, where there is no speed, why. For a runtime with a shared pool, output
//! tokens/s at 1, 2, 4, … concurrent requests up to the pool's concurrency, each point the
//! engine's `speed_of` at that concurrency, as a table with a bar per row: exact figures a screen
//! reader reads, and far less wasm than another canvas. Last, the llama-bench paste.

use crate::components::bench_paste::BenchPaste;
use crate::html::{command, copy_clicked, escape};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::estimate::{speed_of, Speed};
use vramfit_engine::units::group_thousands;
use vramfit_engine::{Estimate, Scenario};

/// Prefill and the time to first token on a card whose maker states no tensor throughput.
const NO_THROUGHPUT: &str = "not known: the card's maker states no tensor throughput";

/// The most concurrent requests the curve reaches: past this the doubling points are many and
/// far beyond what one GPU serves.
const MAX_CURVE_CONCURRENCY: u32 = 1 << 14;

/// "1,234" tokens/s, or "56.7" below 100.
pub fn rate(tokens_per_s: f64) -> String {
    if tokens_per_s >= 100.0 {
        group_thousands(tokens_per_s.round() as u64)
    } else {
        format!("{tokens_per_s:.1}")
    }
}

/// "85 ms", "1.24 s".
fn duration(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else {
        format!("{seconds:.2} s")
    }
}

/// The answer, the figures, the basis and the benchmark command. Each figure's exact value is in
/// `data-value` for the tests; a card without a stated throughput has no prefill (none there).
fn figures(s: &Speed) -> String {
    let over = match s.concurrency {
        1 => "for one request".to_string(),
        n => format!("over {} concurrent requests", group_thousands(u64::from(n))),
    };
    let figure = |testid: &str, term: &str, value: Option<f64>, show: fn(f64) -> String| {
        let (value, text) = match value {
            Some(v) => (format!(" data-value=\"{v}\""), show(v)),
            None => (String::new(), NO_THROUGHPUT.to_string()),
        };
        format!("<dt>{term}</dt><dd data-testid=\"{testid}\"{value}>{text}</dd>")
    };
    let tokens = |v: f64| format!("{} tokens/s", rate(v));
    let mut html = format!(
        "<p class=\"speed-answer\" data-testid=\"speed-output\" data-value=\"{}\">\
         <strong>{} tokens/s</strong> of output {over}</p><dl class=\"figures\">",
        s.output_tokens_per_s,
        rate(s.output_tokens_per_s)
    );
    html += &figure(
        "speed-prefill",
        "Prefill (one prompt)",
        s.prefill_tokens_per_s,
        tokens,
    );
    html += &figure(
        "speed-decode",
        "Decode (each request)",
        Some(s.decode_tokens_per_s),
        tokens,
    );
    html += &figure("speed-ttft", "Time to first token", s.ttft_s, duration);
    html += &format!(
        "<dt>Band</dt><dd data-testid=\"speed-band\" data-low=\"{}\" data-high=\"{}\">\
         {}–{} tokens/s of output, at the runtime's low and high efficiency</dd>\
         <dt>Why</dt><dd data-testid=\"speed-basis\">{}</dd></dl>",
        s.low,
        s.high,
        rate(s.low),
        rate(s.high),
        escape(&s.basis)
    );
    if let Some(measure) = &s.measure {
        html += &format!(
            "<h3>Measure it</h3>{}",
            command("speed-measure", "benchmark command", measure)
        );
    }
    html
}

/// Why the estimate has no speed: its own note where it gives one (a card without datasheet
/// figures), else what the speed model needs.
fn no_speed(e: &Estimate) -> String {
    let why = match e.notes.iter().find(|n| n.starts_with("No speed estimate")) {
        Some(note) => escape(note),
        None if e.scenario.mode.is_training() => {
            "No speed estimate: the speed model times inference; a training step's time is not modelled yet.".to_string()
        }
        None => "No speed estimate: it needs a catalogue GPU's datasheet (memory bandwidth, tensor throughput); choose a GPU rather than a memory size.".to_string(),
    };
    format!("<p class=\"note\" data-testid=\"speed-none\">{why}</p>")
}

/// 1, 2, 4, … up to `max` requests, and `max` itself.
fn curve_points(max: f64) -> Vec<u32> {
    let top = max.clamp(0.0, f64::from(MAX_CURVE_CONCURRENCY)).floor() as u32;
    let mut points: Vec<u32> = (0..15)
        .map(|i| 1u32 << i)
        .take_while(|&n| n <= top)
        .collect();
    if points.last().is_some_and(|&last| last != top) {
        points.push(top);
    }
    points
}

/// The speed at each point, from the scenario with `concurrency` set.
fn speed_curve(s: &Scenario, max: f64) -> Vec<(u32, Speed)> {
    curve_points(max)
        .into_iter()
        .filter_map(|n| {
            let mut at = s.clone();
            at.concurrency = Some(n);
            Some((n, speed_of(&at).ok()??))
        })
        .collect()
}

/// The pool's concurrency, where the runtime shares a pool among requests, starts and has a speed.
fn pool_concurrency(e: &Estimate) -> Option<f64> {
    let s = e.serving.as_ref()?;
    let shared = !s.runtime.rules().pool_words().whole_slots;
    (s.starts && shared && e.speed.is_some()).then_some(s.max_concurrency)
}

/// The curve as a table, a bar per row scaled to the fastest, the scenario's own row marked.
fn curve_table(curve: &[(u32, Speed)], current: Option<u32>) -> String {
    let Some(fastest) = curve
        .iter()
        .map(|(_, s)| s.output_tokens_per_s)
        .reduce(f64::max)
    else {
        return String::new();
    };
    let mut rows = String::new();
    for (n, s) in curve {
        let share = s.output_tokens_per_s / fastest.max(f64::MIN_POSITIVE) * 100.0;
        let class = if Some(*n) == current {
            " class=\"current\""
        } else {
            ""
        };
        rows += &format!(
            "<tr{class} data-concurrency=\"{n}\" data-output=\"{}\" data-decode=\"{}\">\
             <td class=\"num\">{}</td><td class=\"bar-cell\"><span class=\"bar\" style=\"width:{share:.1}%\"></span>\
             <span class=\"bar-value\">{}</span></td><td class=\"num\">{}</td></tr>",
            s.output_tokens_per_s,
            s.decode_tokens_per_s,
            group_thousands(u64::from(*n)),
            rate(s.output_tokens_per_s),
            rate(s.decode_tokens_per_s)
        );
    }
    format!(
        "<h3>Output vs concurrency</h3><table class=\"speed-curve\" data-testid=\"speed-curve\">\
         <thead><tr><th scope=\"col\">Concurrency</th><th scope=\"col\">Output tokens/s</th>\
         <th scope=\"col\" class=\"num\">Each request</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

#[component]
pub fn SpeedPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    let html = Memo::new(move |_| {
        state
            .estimate
            .with(|e| {
                e.as_ref().map(|e| match &e.speed {
                    Some(s) => figures(s),
                    None => no_speed(e),
                })
            })
            .unwrap_or_default()
    });
    // From the scenario, which the estimate follows; an invalid one keeps the last good curve.
    // HTML in a `Memo<String>`: a memo of a new type costs the page more wasm than the text.
    let table = Memo::new(move |previous: Option<&String>| {
        let (max, current) = state.estimate.with(|e| {
            let e = e.as_ref();
            let current = e.and_then(|e| e.speed.as_ref().map(|s| s.concurrency));
            (e.and_then(pool_concurrency), current)
        });
        let Some(max) = max else {
            return String::new();
        };
        match state.scenario.with(|s| speed_curve(s, max)) {
            curve if curve.is_empty() => previous.cloned().unwrap_or_default(),
            curve => curve_table(&curve, current),
        }
    });
    view! {
        <section class="panel speed" aria-label="Speed" data-testid="speed" on:click=|ev| copy_clicked(&ev)>
            <h2>"How fast"</h2>
            <div inner_html=html></div>
            <div inner_html=table></div>
            <BenchPaste/>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::curve_points;

    #[test]
    fn the_curve_doubles_up_to_the_pool() {
        assert_eq!(curve_points(29.03), [1, 2, 4, 8, 16, 29]);
        assert_eq!(curve_points(32.0), [1, 2, 4, 8, 16, 32]);
        assert_eq!(curve_points(1.5), [1]);
        assert!(curve_points(0.4).is_empty());
        assert_eq!(curve_points(f64::INFINITY).len(), 15);
        assert!(curve_points(f64::NAN).is_empty());
    }
}
