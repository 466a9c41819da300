//! Draws the page's two charts, each one function from data to a canvas: the memory stack (one
//! stacked bar per scenario, with horizontal lines for the GPU's capacity, the usable budget and
//! the tight threshold) and a serving runtime's concurrency against context.

use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use vramfit_engine::{Estimate, Units};

/// One of the horizontal lines: its name and colour (`None`: the theme's foreground).
pub struct BudgetLine {
    pub name: &'static str,
    pub colour: Option<RGBColor>,
}

/// Capacity, usable and tight, in that order.
pub const BUDGET_LINES: [BudgetLine; 3] = [
    BudgetLine {
        name: "capacity",
        colour: None,
    },
    BudgetLine {
        name: "usable",
        colour: Some(RGBColor(213, 94, 0)),
    },
    BudgetLine {
        name: "tight",
        colour: Some(RGBColor(230, 159, 0)),
    },
];

/// Okabe & Ito's colour-blind-safe palette (2008), one colour per stable component id.
pub fn component_colour(id: &str) -> RGBColor {
    match id {
        "weights" => RGBColor(0, 114, 178),
        "quant_constants" => RGBColor(86, 180, 233),
        "adapters" => RGBColor(204, 121, 167),
        "gradients" => RGBColor(230, 159, 0),
        "optimizer" => RGBColor(213, 94, 0),
        "master_weights" => RGBColor(240, 228, 66),
        "weight_copies" => RGBColor(51, 34, 136),
        "activations" => RGBColor(0, 158, 115),
        "logits" => RGBColor(136, 34, 85),
        "kv_cache" => RGBColor(68, 170, 153),
        "non_torch" => RGBColor(170, 68, 153),
        "cuda_graphs" => RGBColor(221, 204, 119),
        "cuda_context" => RGBColor(153, 153, 153),
        "fragmentation" => RGBColor(204, 204, 204),
        _ => RGBColor(102, 102, 102),
    }
}

pub struct Bar<'a> {
    pub label: String,
    pub estimate: &'a Estimate,
}

pub struct Theme {
    pub background: RGBColor,
    pub foreground: RGBColor,
    /// Device pixels per CSS pixel, so text and lines stay crisp on HiDPI screens.
    pub scale: f64,
}

pub fn draw(
    canvas: web_sys::HtmlCanvasElement,
    bars: &[Bar],
    units: Units,
    theme: &Theme,
) -> Result<(), String> {
    let backend =
        CanvasBackend::with_canvas_object(canvas).ok_or("the canvas has no 2D context")?;
    let root = backend.into_drawing_area();
    root.fill(&theme.background).map_err(|e| e.to_string())?;
    let Some(first) = bars.first() else {
        return Ok(());
    };
    let (divisor, unit) = match units {
        Units::Gb => (1e9, "GB"),
        Units::Gib => (1_073_741_824.0, "GiB"),
    };
    let capacity = first.estimate.capacity_bytes.as_f64() / divisor;
    let usable = first.estimate.usable_bytes.as_f64() / divisor;
    let tight = first.estimate.tight_threshold_bytes.as_f64() / divisor;
    let tallest = bars
        .iter()
        .map(|b| b.estimate.total_bytes.as_f64() / divisor)
        .fold(capacity, f64::max);
    let y_max = (tallest * 1.08).max(1.0);
    let px = |v: f64| (v * theme.scale).round() as u32;
    let font = |size: f64| {
        // The enum, not the name "sans-serif": plotters reads a family name through Unicode
        // lowercasing, whose tables cost the page ~8 KiB of wasm.
        (FontFamily::SansSerif, size * theme.scale)
            .into_font()
            .color(&theme.foreground)
    };
    let slots = bars.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .margin(px(12.0))
        .x_label_area_size(px(28.0))
        .y_label_area_size(px(56.0))
        .build_cartesian_2d(0.0..slots, 0.0..y_max)
        .map_err(|e| e.to_string())?;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(theme.foreground.mix(0.08))
        .bold_line_style(theme.foreground.mix(0.15))
        .axis_style(theme.foreground.mix(0.6))
        .x_labels(bars.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let index = (x - 0.5).round();
            if (x - 0.5 - index).abs() < 1e-6 && index >= 0.0 {
                labels.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(unit)
        .label_style(font(12.0))
        .axis_desc_style(font(12.0))
        .draw()
        .map_err(|e| e.to_string())?;

    for (i, bar) in bars.iter().enumerate() {
        let left = i as f64 + 0.2;
        let right = i as f64 + 0.8;
        let mut base = 0.0;
        for c in &bar.estimate.components {
            let top = base + c.bytes.as_f64() / divisor;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(left, base), (right, top)],
                    component_colour(&c.id).filled(),
                )))
                .map_err(|e| e.to_string())?;
            base = top;
        }
    }
    // Their names and values are in the legend beside the canvas (`budget_lines`).
    for (value, line) in [capacity, usable, tight].into_iter().zip(BUDGET_LINES) {
        let colour = line.colour.unwrap_or(theme.foreground);
        let style = ShapeStyle::from(colour).stroke_width(px(2.0));
        chart
            .draw_series(LineSeries::new([(0.0, value), (slots, value)], style))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// The concurrency chart's colours: the curve, and the marks for the scenario's own context and
/// the users asked for.
pub const CURVE_COLOUR: RGBColor = RGBColor(0, 114, 178);
pub const HERE_COLOUR: RGBColor = RGBColor(213, 94, 0);
pub const USERS_COLOUR: RGBColor = RGBColor(0, 158, 115);

/// "1k", "16k", "1M": a context length on the axis.
fn tokens_label(tokens: f64) -> String {
    if tokens >= 1_048_576.0 {
        format!("{}M", (tokens / 1_048_576.0).round())
    } else if tokens >= 1024.0 {
        format!("{}k", (tokens / 1024.0).round())
    } else {
        format!("{}", tokens.round())
    }
}

/// "512", "1", "1/4": a power of two of requests on the axis.
fn requests_label(log2: f64) -> String {
    if log2 >= 0.0 {
        format!("{}", log2.exp2().round())
    } else {
        format!("1/{}", (-log2).exp2().round())
    }
}

/// Concurrent requests against context length: `curve` as (context tokens, requests), both axes
/// log 2 (each doubling of context about halves the requests, so every point stays readable),
/// the scenario's own context (`here`) marked by a vertical line and a dot, and `users` as a
/// horizontal line. An empty curve and values that are not positive draw nothing, never panic.
pub fn draw_concurrency(
    canvas: web_sys::HtmlCanvasElement,
    curve: &[(u32, f64)],
    here: Option<(u32, f64)>,
    users: Option<f64>,
    theme: &Theme,
) -> Result<(), String> {
    let backend =
        CanvasBackend::with_canvas_object(canvas).ok_or("the canvas has no 2D context")?;
    let root = backend.into_drawing_area();
    root.fill(&theme.background).map_err(|e| e.to_string())?;
    let log2_tokens = |tokens: u32| f64::from(tokens.max(1)).log2();
    let log2_requests = |n: f64| (n.is_finite() && n > 0.0).then(|| n.log2());
    let points: Vec<(f64, f64)> = curve
        .iter()
        .filter_map(|&(t, c)| Some((log2_tokens(t), log2_requests(c)?)))
        .collect();
    let here_x = here.map(|(t, _)| log2_tokens(t));
    let here_y = here.and_then(|(_, c)| log2_requests(c));
    let users = users.and_then(log2_requests);
    let span = |values: &mut dyn Iterator<Item = f64>| {
        values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
    };
    let (x_min, x_max) = span(&mut points.iter().map(|p| p.0).chain(here_x));
    let (y_min, y_max) = span(&mut points.iter().map(|p| p.1).chain(here_y).chain(users));
    if !(x_min.is_finite() && x_max.is_finite() && y_min.is_finite() && y_max.is_finite()) {
        return root.present().map_err(|e| e.to_string());
    }
    let (x_min, x_max) = (x_min.floor() - 0.25, x_max.ceil() + 0.25);
    let (y_min, y_max) = (y_min.floor().min(0.0) - 0.25, y_max.ceil() + 0.25);
    let px = |v: f64| (v * theme.scale).round() as u32;
    let font = |size: f64| {
        (FontFamily::SansSerif, size * theme.scale)
            .into_font()
            .color(&theme.foreground)
    };
    let mut chart = ChartBuilder::on(&root)
        .margin(px(12.0))
        .x_label_area_size(px(40.0))
        .y_label_area_size(px(52.0))
        .build_cartesian_2d(x_min..x_max, y_min..y_max)
        .map_err(|e| e.to_string())?;
    let (width, height) = root.dim_in_pixel();
    // One label per doubling where it fits; plotters thins them to a round step where not.
    let fit = |extent: f64, room: u32, per_label: f64| {
        let most = (f64::from(room) / (per_label * theme.scale))
            .floor()
            .max(2.0);
        extent.round().clamp(2.0, most) as usize + 1
    };
    chart
        .configure_mesh()
        .light_line_style(theme.foreground.mix(0.06))
        .bold_line_style(theme.foreground.mix(0.15))
        .axis_style(theme.foreground.mix(0.6))
        .x_labels(fit(x_max - x_min, width, 48.0))
        .y_labels(fit(y_max - y_min, height, 22.0))
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 {
                tokens_label(x.round().exp2())
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| {
            if (y - y.round()).abs() < 1e-6 {
                requests_label(y.round())
            } else {
                String::new()
            }
        })
        .x_desc("context (tokens, log scale)")
        .y_desc("concurrent requests (log scale)")
        .label_style(font(12.0))
        .axis_desc_style(font(12.0))
        .draw()
        .map_err(|e| e.to_string())?;

    if let Some(users) = users {
        let style = ShapeStyle::from(USERS_COLOUR).stroke_width(px(1.5));
        chart
            .draw_series(LineSeries::new([(x_min, users), (x_max, users)], style))
            .map_err(|e| e.to_string())?;
    }
    let line = ShapeStyle::from(CURVE_COLOUR).stroke_width(px(2.5));
    chart
        .draw_series(LineSeries::new(points.iter().copied(), line))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, px(3.0), CURVE_COLOUR.filled())),
        )
        .map_err(|e| e.to_string())?;
    if let Some(x) = here_x {
        let style = ShapeStyle::from(HERE_COLOUR).stroke_width(px(1.5));
        chart
            .draw_series(LineSeries::new([(x, y_min), (x, y_max)], style))
            .map_err(|e| e.to_string())?;
        if let Some(y) = here_y {
            chart
                .draw_series(std::iter::once(Circle::new(
                    (x, y),
                    px(5.0),
                    HERE_COLOUR.filled(),
                )))
                .map_err(|e| e.to_string())?;
        }
    }
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::{requests_label, tokens_label};

    #[test]
    fn axis_labels_name_powers_of_two() {
        assert_eq!(tokens_label(512.0), "512");
        assert_eq!(tokens_label(1024.0), "1k");
        assert_eq!(tokens_label(262_144.0), "256k");
        assert_eq!(tokens_label(1_048_576.0), "1M");
        assert_eq!(requests_label(0.0), "1");
        assert_eq!(requests_label(9.0), "512");
        assert_eq!(requests_label(-2.0), "1/4");
        // Far out of range: a label, not a panic.
        assert_eq!(requests_label(2000.0), "inf");
        assert_eq!(requests_label(-2000.0), "1/inf");
    }
}
