//! The what-if panel: memory against the micro-batch (in inference, the concurrent sequences) and
//! against the sequence (in inference, the context), each with the budget lines and the crossing,
//! from `vramfit_engine::what_if`. Hovering or tapping a point reads it out below its curve (an
//! `aria-live` line); clicking it (or a second tap) makes it the scenario, as one history entry. A
//! serving runtime's question is concurrency against context, which the serving panel draws, so
//! this panel steps aside there, as the solver does.

use crate::browser;
use crate::chart::{draw_memory_curve, MemoryCurve, CROSSING_COLOUR, CURVE_COLOUR, HERE_COLOUR};
use crate::components::chart_panel::{fit_canvas, CanvasWidth};
use crate::components::legend::{BudgetLegend, DotEntry};
use crate::palette::Theme;
use crate::state::PageState;
use leptos::html::Canvas;
use leptos::prelude::*;
use vramfit_engine::units::group_thousands;
use vramfit_engine::what_if::{what_if, Sweep, WhatIf};
use vramfit_engine::Units;
use web_sys::HtmlCanvasElement;

/// How a curve is named, by the field it sweeps and whether the scenario trains.
#[derive(Clone, Copy)]
struct Words {
    title: &'static str,
    axis: &'static str,
    /// The field in a word, as the crossing's label and the readout say it: "max batch 6".
    short: &'static str,
}

fn words(key: &str, training: bool) -> Words {
    let (title, axis, short) = match (key, training) {
        ("batch", true) => ("Memory vs micro-batch", "micro-batch", "batch"),
        ("batch", false) => (
            "Memory vs concurrent sequences",
            "batch (concurrent sequences)",
            "batch",
        ),
        (_, true) => ("Memory vs sequence length", "sequence (tokens)", "seq"),
        (_, false) => ("Memory vs context length", "context (tokens)", "context"),
    };
    Words { title, axis, short }
}

/// "max batch 6", "max seq 12,288"; `None` when not even 1 fits.
fn crossing_label(sweep: &Sweep, words: &Words) -> Option<String> {
    sweep
        .crossing
        .map(|n| format!("max {} {}", words.short, group_thousands(u64::from(n))))
}

#[component]
pub fn CurvesPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    let serving = Memo::new(move |_| state.serving_runtime());
    // A scenario that cannot be estimated keeps the last good curves on screen.
    let curves =
        Memo::new(
            move |previous: Option<&Option<WhatIf>>| match state.scenario.with(what_if) {
                Ok(curves) => Some(curves),
                Err(_) => previous.cloned().flatten(),
            },
        );
    let training = Memo::new(move |_| state.scenario.with(|s| s.mode.is_training()));
    let budget = Memo::new(move |_| {
        curves.with(|c| {
            c.as_ref()
                .map(|c| [c.budget.capacity, c.budget.usable, c.budget.tight_threshold])
        })
    });
    // Rebuilt only when the mode switches between training and inference, which renames the curves.
    move || {
        (!serving.get()).then(|| {
            let training = training.get();
            view! {
                <section class="panel curves" aria-label="What-if curves" data-testid="curves">
                    <h2>"What if"</h2>
                    <ul class="legend">
                        <BudgetLegend values=budget/>
                        <DotEntry colour=CURVE_COLOUR text="memory per GPU (hollow: out of memory)"/>
                        <DotEntry colour=HERE_COLOUR text="this scenario"/>
                        <DotEntry colour=CROSSING_COLOUR text="the most that fits"/>
                    </ul>
                    {curve(curves, words("batch", training), "batch", |c| &c.batch)}
                    {curve(curves, words("seq", training), "seq", |c| &c.seq)}
                </section>
            }
        })
    }
}

/// One curve: its canvas, drawn from the engine's sweep, and the line that reads a point out.
fn curve(
    curves: Memo<Option<WhatIf>>,
    words: Words,
    id: &'static str,
    pick: fn(&WhatIf) -> &Sweep,
) -> impl IntoView {
    let state = expect_context::<PageState>();
    let canvas_ref = NodeRef::<Canvas>::new();
    let width = CanvasWidth::observe(canvas_ref);
    // The point being read, by its value, so it survives the curve being recomputed.
    let selected = RwSignal::new(None::<u32>);
    let draw_error = RwSignal::new(None::<String>);

    Effect::new(move |_| {
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        let units = state.units.get();
        let selected = selected.get();
        curves.with(|c| {
            let Some(c) = c else { return };
            let theme = fit_canvas(&canvas, width, 240, CURVE_HEIGHT);
            let drawn = draw_curve(canvas, &theme, c, pick(c), &words, selected, units);
            if drawn.as_ref().err() != draw_error.get_untracked().as_ref() {
                draw_error.set(drawn.err());
            }
        });
        // `cargo xtask bench-web` times input → this mark, with the stack's.
        browser::mark("vramfit:curves-drawn");
    });
    // The point being read, or why the curve could not be drawn.
    let readout = move || {
        draw_error.get().or_else(|| {
            let (selected, units) = (selected.get(), state.units.get());
            curves.with(|c| {
                c.as_ref()
                    .map(|c| reading(pick(c), &words, selected, units))
            })
        })
    };

    // The value of the point nearest a pointer at `offset` CSS pixels across the canvas.
    let nearest = move |offset: i32| {
        let map = canvas_ref.get_untracked()?.get_attribute("data-points")?;
        nearest_point(&map, offset)
    };
    let select = move |x: Option<u32>| {
        if x.is_some() && x != selected.get_untracked() {
            selected.set(x);
        }
    };
    let use_point = move |x: u32| {
        if let Some(key) = curves.with_untracked(|c| c.as_ref().map(|c| pick(c).key)) {
            state.apply(&[(key.to_string(), x.to_string())]);
        }
    };
    // A mouse has already selected the point by hovering; a first tap only selects it.
    let on_click = move |ev: web_sys::MouseEvent| {
        let Some(x) = nearest(ev.offset_x()) else {
            return;
        };
        if selected.get_untracked() == Some(x) {
            use_point(x);
        } else {
            selected.set(Some(x));
        }
    };
    view! {
        <figure class="curve">
            <h3>{words.title}</h3>
            <canvas id=format!("curve-{id}") node_ref=canvas_ref role="img"
                aria-label=format!("{}, against the budget lines; the line below reads the point under the pointer", words.title)
                on:pointermove=move |ev| select(nearest(ev.offset_x()))
                on:click=on_click></canvas>
            <p class="readout" id=format!("readout-{id}") aria-live="polite">{readout}</p>
        </figure>
    }
}

/// Draws `sweep` against the budget of `curves` and keeps its point map on the canvas, or says
/// why the drawing failed.
fn draw_curve(
    canvas: HtmlCanvasElement,
    theme: &Theme,
    curves: &WhatIf,
    sweep: &Sweep,
    words: &Words,
    selected: Option<u32>,
    units: Units,
) -> Result<(), String> {
    let curve = MemoryCurve {
        sweep,
        budget: &curves.budget,
        axis: words.axis,
        crossing_label: crossing_label(sweep, words),
        selected,
    };
    let drawn = draw_memory_curve(canvas.clone(), &curve, units, theme)?;
    let _ = canvas.set_attribute("data-points", &point_map(sweep, &drawn, theme.scale));
    Ok(())
}

/// The readout: the point being read ("batch 8: 23.41 GB per GPU, oom"), or the crossing.
fn reading(sweep: &Sweep, words: &Words, selected: Option<u32>, units: Units) -> String {
    let point = selected.and_then(|x| sweep.points.iter().find(|p| p.x == x));
    match point {
        Some(p) => format!(
            "{} {}: {} per GPU, {}{}",
            words.short,
            group_thousands(u64::from(p.x)),
            p.total.display(units),
            p.verdict.as_str(),
            if p.x == sweep.current {
                " (this scenario)"
            } else {
                "; click to use it"
            }
        ),
        None => match crossing_label(sweep, words) {
            Some(label) => format!("{label}. Hover or tap a point to read it."),
            None => format!("Not even {} 1 fits.", words.short),
        },
    }
}

/// Where each point is drawn, "x:px,…" (its value and CSS pixels across), kept on the canvas:
/// the page finds the point under a pointer in it, and the tests read it to click one.
fn point_map(sweep: &Sweep, pixels: &[i32], scale: f64) -> String {
    let pairs: Vec<String> = sweep
        .points
        .iter()
        .zip(pixels)
        .map(|(p, &px)| format!("{}:{}", p.x, (f64::from(px) / scale).round()))
        .collect();
    pairs.join(",")
}

/// The value of the point in `map` (as `point_map` writes it) nearest `offset` CSS pixels across.
fn nearest_point(map: &str, offset: i32) -> Option<u32> {
    map.split(',')
        .filter_map(|pair| {
            let (x, px) = pair.split_once(':')?;
            Some((x.parse::<u32>().ok()?, px.parse::<i32>().ok()?))
        })
        .min_by_key(|&(_, px)| (px - offset).abs())
        .map(|(x, _)| x)
}

/// Each curve's height in CSS pixels; its width is the panel's.
const CURVE_HEIGHT: f64 = 240.0;

#[cfg(test)]
mod tests {
    use super::nearest_point;

    #[test]
    fn a_pointer_reads_the_nearest_point() {
        let map = "1:40,2:80,4:120";
        assert_eq!(nearest_point(map, 0), Some(1));
        assert_eq!(nearest_point(map, 95), Some(2));
        assert_eq!(nearest_point(map, 500), Some(4));
        assert_eq!(nearest_point("", 10), None);
    }
}
