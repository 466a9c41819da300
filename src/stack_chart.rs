//! The memory stack: one stacked bar per scenario, with horizontal lines for the GPU's capacity,
//! the usable budget and the tight threshold. Every shape in it is an axis-aligned rectangle or a
//! label, so it is drawn with the canvas's own 2D API: the shell's first download then holds no
//! charting library (the panels' curves, `crate::chart`, use plotters).

use crate::palette::{axis_unit, component_colour, Theme, BUDGET_LINES};
use vramfit_engine::{Estimate, Units};
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

pub struct Bar<'a> {
    pub label: String,
    pub estimate: &'a Estimate,
}

/// The plot's rectangle in device pixels, and the data's range on the memory axis.
struct Plot {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    y_max: f64,
}

impl Plot {
    /// The canvas's y for `value` axis units.
    fn y(&self, value: f64) -> f64 {
        self.bottom - (value / self.y_max) * (self.bottom - self.top)
    }
}

/// The memory axis's step: 1, 2 or 5 times a power of ten, the smallest giving at most `most`
/// steps up to `max`.
fn tick_step(max: f64, most: f64) -> f64 {
    let rough = (max / most).max(f64::MIN_POSITIVE);
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|step| *step >= rough)
        .unwrap_or(10.0 * power)
}

/// A tick's label with as many decimals as its step needs.
fn tick_label(value: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{value:.decimals$}")
}

pub fn draw(
    canvas: &HtmlCanvasElement,
    bars: &[Bar],
    units: Units,
    theme: &Theme,
) -> Result<(), String> {
    let ctx = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        .ok_or("the canvas has no 2D context")?;
    let (width, height) = (f64::from(canvas.width()), f64::from(canvas.height()));
    ctx.set_fill_style_str(&theme.background.css());
    ctx.fill_rect(0.0, 0.0, width, height);
    // The lines are this scenario's (the last bar's), as the legend's values are.
    let Some(current) = bars.last() else {
        return Ok(());
    };
    let (divisor, unit) = axis_unit(units);
    let budget = [
        current.estimate.capacity_bytes,
        current.estimate.usable_bytes,
        current.estimate.tight_threshold_bytes,
    ]
    .map(|b| b.as_f64() / divisor);
    let tallest = bars
        .iter()
        .map(|b| b.estimate.total_bytes.as_f64() / divisor)
        .fold(budget[0], f64::max);
    let px = |css: f64| f64::from(theme.px(css));
    let plot = Plot {
        left: px(12.0 + 56.0),
        right: width - px(12.0),
        top: px(12.0),
        bottom: height - px(12.0 + 28.0),
        y_max: (tallest * 1.08).max(1.0),
    };
    ctx.set_font(&format!("{}px sans-serif", px(12.0)));
    draw_axes(&ctx, &plot, unit, theme);
    draw_bars(&ctx, &plot, bars, divisor, theme);
    for (value, line) in budget.into_iter().zip(BUDGET_LINES) {
        let colour = line.colour.unwrap_or(theme.foreground);
        ctx.set_fill_style_str(&colour.css());
        let y = plot.y(value);
        ctx.fill_rect(plot.left, y - px(1.0), plot.right - plot.left, px(2.0));
    }
    Ok(())
}

/// The grid, the axes, the memory axis's labels and its unit.
fn draw_axes(ctx: &CanvasRenderingContext2d, plot: &Plot, unit: &str, theme: &Theme) {
    let px = |css: f64| f64::from(theme.px(css));
    let step = tick_step(plot.y_max, 10.0);
    ctx.set_text_align("right");
    ctx.set_text_baseline("middle");
    let mut value = 0.0;
    while value <= plot.y_max {
        let y = plot.y(value).round();
        ctx.set_fill_style_str(&theme.foreground.css_alpha(0.15));
        ctx.fill_rect(plot.left, y, plot.right - plot.left, px(1.0));
        ctx.set_fill_style_str(&theme.foreground.css());
        let _ = ctx.fill_text(&tick_label(value, step), plot.left - px(6.0), y);
        value += step;
    }
    ctx.set_fill_style_str(&theme.foreground.css_alpha(0.6));
    ctx.fill_rect(
        plot.left - px(1.0),
        plot.top,
        px(1.0),
        plot.bottom - plot.top,
    );
    ctx.fill_rect(plot.left, plot.bottom, plot.right - plot.left, px(1.0));
    // The unit, read bottom to top beside the labels.
    ctx.save();
    let _ = ctx.translate(px(12.0), (plot.top + plot.bottom) / 2.0);
    let _ = ctx.rotate(-std::f64::consts::FRAC_PI_2);
    ctx.set_text_align("center");
    ctx.set_fill_style_str(&theme.foreground.css());
    let _ = ctx.fill_text(unit, 0.0, 0.0);
    ctx.restore();
}

/// Each scenario's components stacked from the axis up, its label below it.
fn draw_bars(
    ctx: &CanvasRenderingContext2d,
    plot: &Plot,
    bars: &[Bar],
    divisor: f64,
    theme: &Theme,
) {
    let slot = (plot.right - plot.left) / bars.len() as f64;
    ctx.set_text_align("center");
    ctx.set_text_baseline("top");
    for (i, bar) in bars.iter().enumerate() {
        let left = plot.left + slot * (i as f64 + 0.2);
        let mut base = 0.0;
        for c in &bar.estimate.components {
            let top = base + c.bytes.as_f64() / divisor;
            ctx.set_fill_style_str(&component_colour(&c.id).css());
            let (y_top, y_base) = (plot.y(top), plot.y(base));
            ctx.fill_rect(left, y_top, slot * 0.6, y_base - y_top);
            base = top;
        }
        ctx.set_fill_style_str(&theme.foreground.css());
        let centre = plot.left + slot * (i as f64 + 0.5);
        let _ = ctx.fill_text(&bar.label, centre, plot.bottom + f64::from(theme.px(6.0)));
    }
}

#[cfg(test)]
mod tests {
    use super::{tick_label, tick_step};

    #[test]
    fn the_memory_axis_steps_by_one_two_or_five() {
        assert_eq!(tick_step(80.0, 10.0), 10.0);
        assert_eq!(tick_step(26.0, 10.0), 5.0);
        assert_eq!(tick_step(14.0, 10.0), 2.0);
        assert_eq!(tick_step(0.9, 10.0), 0.1);
        assert_eq!(tick_label(2.0, 0.5), "2.0");
        assert_eq!(tick_label(40.0, 10.0), "40");
    }
}
