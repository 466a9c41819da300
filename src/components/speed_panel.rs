//! The speed panel: how fast the scenario runs on its GPU (`Estimate::speed`: prefill, decode,
//! output tokens/s, time to first token, the band and the step's basis, with the benchmark that
//! measures it; for training, the optimizer step's time and tokens/s); or, where there is no
//! speed, why. For a runtime with a shared pool, output
//! tokens/s at 1, 2, 4, … concurrent requests up to the pool's concurrency, each point the
//! engine's `speed_of` at that concurrency, as a table with a bar per row: exact figures a screen
//! reader reads. Last, the llama-bench paste.

use crate::components::bench_paste::BenchPaste;
use crate::components::command::Command;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::estimate::{speed_of, Speed, Timing, TrainSpeed};
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
pub fn duration(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else {
        format!("{seconds:.2} s")
    }
}

/// One figure, its exact value in `data-value` for the tests; a card without a stated
/// throughput has none.
fn figure(
    testid: &'static str,
    term: &'static str,
    value: Option<f64>,
    show: fn(f64) -> String,
) -> impl IntoView {
    let text = value.map_or_else(|| NO_THROUGHPUT.to_string(), show);
    view! {
        <dt>{term}</dt>
        <dd data-testid=testid data-value=value.map(|v| v.to_string())>{text}</dd>
    }
}

/// "1,234 tokens/s".
fn tokens(v: f64) -> String {
    format!("{} tokens/s", rate(v))
}

/// The answer, the figures, the basis and the benchmark command.
fn figures(s: &Speed) -> impl IntoView {
    let over = match s.concurrency {
        1 => "for one request".to_string(),
        n => format!("over {} concurrent requests", group_thousands(u64::from(n))),
    };
    let measure = s.measure.clone().map(|command| {
        view! {
            <h3>"Measure it"</h3>
            <Command testid="speed-measure" label="benchmark command" command/>
        }
    });
    view! {
        <p class="speed-answer" data-testid="speed-output" data-value=s.output_tokens_per_s.to_string()>
            <strong>{rate(s.output_tokens_per_s)}" tokens/s"</strong>" of output "{over}
        </p>
        <dl class="figures">
            {figure("speed-prefill", "Prefill (one prompt)", s.prefill_tokens_per_s, tokens)}
            {figure("speed-decode", "Decode (each request)", Some(s.decode_tokens_per_s), tokens)}
            {figure("speed-ttft", "Time to first token", s.ttft_s, duration)}
            {band_and_basis((s.low, s.high), " tokens/s of output, where 90% of published runs fall", &s.basis)}
        </dl>
        {measure}
    }
}

/// The band's two ends, what they are, and the basis in words.
fn band_and_basis((low, high): (f64, f64), what: &'static str, basis: &str) -> impl IntoView {
    view! {
        <dt>"Band"</dt>
        <dd data-testid="speed-band" data-low=low.to_string() data-high=high.to_string()>
            {rate(low)}"–"{rate(high)}{what}
        </dd>
        <dt>"Why"</dt>
        <dd data-testid="speed-basis">{basis.to_string()}</dd>
    }
}

/// A training step: its time, tokens/s over every GPU and on one, the band and the basis.
fn training_figures(s: &TrainSpeed) -> impl IntoView {
    view! {
        <p class="speed-answer" data-testid="speed-train-tokens" data-value=s.train_tokens_per_s.to_string()>
            <strong>{rate(s.train_tokens_per_s)}" tokens/s"</strong>" of training"
        </p>
        <dl class="figures">
            {figure("speed-train-step", "Optimizer step", Some(s.train_step_s), duration)}
            // One GPU's rate is the whole: said only where several GPUs share the step.
            {(s.train_tokens_per_s_per_gpu < s.train_tokens_per_s).then(|| {
                figure("speed-train-per-gpu", "Each GPU", Some(s.train_tokens_per_s_per_gpu), tokens)
            })}
            {band_and_basis(
                (s.train_tokens_per_s_low, s.train_tokens_per_s_high),
                " tokens/s, at the low and high utilisation",
                &s.basis,
            )}
        </dl>
    }
}

/// Why the estimate has no speed: its own note where it gives one (a card without datasheet
/// figures), else what the speed model needs.
fn no_speed(e: &Estimate) -> String {
    match e.notes.iter().find(|n| n.starts_with("No speed estimate")) {
        Some(note) => note.clone(),
        None if e.scenario.mode.is_training() => e
            .notes
            .iter()
            .find(|n| n.starts_with("No training speed estimate"))
            .cloned()
            .unwrap_or_else(|| "No speed estimate: it needs a catalogue GPU's datasheet (tensor throughput); choose a GPU rather than a memory size.".to_string()),
        None => "No speed estimate: it needs a catalogue GPU's datasheet (memory bandwidth, tensor throughput); choose a GPU rather than a memory size.".to_string(),
    }
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
    let shared = s.runtime.rules().facts().pools_kv();
    (s.starts && shared && e.speed.is_some()).then_some(s.max_concurrency)
}

/// One row of the curve: its bar scaled to the fastest, the scenario's own row marked.
fn curve_row(n: u32, s: Speed, share: f64, current: bool) -> impl IntoView {
    view! {
        <tr class=current.then_some("current") data-concurrency=n.to_string()
            data-output=s.output_tokens_per_s.to_string() data-decode=s.decode_tokens_per_s.to_string()>
            <td class="num">{group_thousands(u64::from(n))}</td>
            <td class="bar-cell">
                <span class="bar" style=format!("width:{share:.1}%")></span>
                <span class="bar-value">{rate(s.output_tokens_per_s)}</span>
            </td>
            <td class="num">{rate(s.decode_tokens_per_s)}</td>
        </tr>
    }
}

/// The curve as a table, a bar per row.
#[component]
fn CurveTable(curve: Memo<Vec<(u32, Speed)>>, current: Memo<Option<u32>>) -> impl IntoView {
    let fastest = Memo::new(move |_| {
        curve.with(|c| {
            c.iter()
                .map(|(_, s)| s.output_tokens_per_s)
                .reduce(f64::max)
        })
    });
    let rows = move || {
        let fastest = fastest.get().unwrap_or_default().max(f64::MIN_POSITIVE);
        let current = current.get();
        curve.get().into_iter().map(move |(n, s)| {
            (
                n,
                s.output_tokens_per_s / fastest * 100.0,
                Some(n) == current,
                s,
            )
        })
    };
    move || {
        fastest.get().is_some().then(|| view! {
            <h3>"Output vs concurrency"</h3>
            <table class="speed-curve" data-testid="speed-curve">
                <thead>
                    <tr>
                        <th scope="col">"Concurrency"</th>
                        <th scope="col">"Output tokens/s"</th>
                        <th scope="col" class="num">"Each request"</th>
                    </tr>
                </thead>
                <tbody>
                    <For each=rows
                        key=|(n, share, current, s)| {
                            (*n, share.to_bits(), *current, s.output_tokens_per_s.to_bits(), s.decode_tokens_per_s.to_bits())
                        }
                        children=|(n, share, current, s)| curve_row(n, s, share, current)/>
                </tbody>
            </table>
        })
    }
}

#[component]
pub fn SpeedPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    // The speed, or why there is none.
    let speed = Memo::new(move |_| {
        state.estimate.with(|e| {
            e.as_ref()
                .map(|e| e.speed.clone().ok_or_else(|| no_speed(e)))
        })
    });
    let answer = move || {
        speed.with(|s| {
            s.as_ref().map(|s| match s {
                Ok(Timing::Inference(s)) => figures(s).into_any(),
                Ok(Timing::Training(s)) => training_figures(s).into_any(),
                Err(why) => {
                    view! { <p class="note" data-testid="speed-none">{why.clone()}</p> }.into_any()
                }
            })
        })
    };
    let current = Memo::new(move |_| {
        speed.with(|s| {
            s.as_ref()
                .and_then(|s| s.as_ref().ok())
                .and_then(Timing::inference)
                .map(|s| s.concurrency)
        })
    });
    // From the scenario, which the estimate follows; an invalid one keeps the last good curve.
    let curve = Memo::new(move |previous: Option<&Vec<(u32, Speed)>>| {
        let Some(max) = state
            .estimate
            .with(|e| e.as_ref().and_then(pool_concurrency))
        else {
            return Vec::new();
        };
        match state.scenario.with(|s| speed_curve(s, max)) {
            curve if curve.is_empty() => previous.cloned().unwrap_or_default(),
            curve => curve,
        }
    });
    view! {
        <section class="panel speed" aria-label="Speed" data-testid="speed">
            <h2>"How fast"</h2>
            <div>{answer}</div>
            <div><CurveTable curve current/></div>
            // Benchmarks time inference; a training scenario has nothing to set beside them.
            {move || (!state.scenario.with(|s| s.mode.is_training())).then(|| view! { <BenchPaste/> })}
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
