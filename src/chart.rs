//! Draws the panels' charts with plotters, each one function from data to a canvas: a what-if
//! curve (memory against the batch or the sequence, with the budget lines and the crossing
//! marked) and a serving runtime's concurrency against context. The pieces they share (the
//! cleared canvas, text, the budget lines, log-2 axis labels) are written once here. The shell's
//! memory stack is `crate::stack_chart`, drawn without plotters so the first download holds none.

use crate::palette::{axis_unit, Rgb, Theme, BUDGET_LINES};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::BackendColor;
use plotters_canvas::CanvasBackend;
use vramfit_engine::estimate::Budget;
use vramfit_engine::what_if::Sweep;
use vramfit_engine::{Bytes, Units, Verdict};

/// A chart with both axes in `f64`, as every chart here is.
type Chart<'a> = ChartContext<'a, CanvasBackend, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

impl Color for Rgb {
    fn to_backend_color(&self) -> BackendColor {
        let Rgb(r, g, b) = *self;
        BackendColor {
            alpha: 1.0,
            rgb: (r, g, b),
        }
    }
}

impl Theme {
    /// A line of `width` CSS pixels in `colour`.
    fn stroke(&self, colour: Rgb, width: f64) -> ShapeStyle {
        ShapeStyle::from(colour).stroke_width(self.px(width))
    }

    /// Chart text of `size` CSS pixels in the foreground colour.
    fn font(&self, size: f64) -> TextStyle<'static> {
        // The enum, not the name "sans-serif": plotters reads a family name through Unicode
        // lowercasing, whose tables would enter the page's wasm.
        (FontFamily::SansSerif, size * self.scale)
            .into_font()
            .color(&self.foreground)
    }
}

/// The canvas as a drawing area, cleared to the theme's background.
fn cleared(
    canvas: web_sys::HtmlCanvasElement,
    theme: &Theme,
) -> Result<DrawingArea<CanvasBackend, Shift>, String> {
    let backend =
        CanvasBackend::with_canvas_object(canvas).ok_or("the canvas has no 2D context")?;
    let root = backend.into_drawing_area();
    root.fill(&theme.background).map_err(|e| e.to_string())?;
    Ok(root)
}

/// How a chart is framed: its data ranges, the room its axis labels take (CSS pixels), and how
/// its axes are labelled.
struct Frame<'a> {
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    x_area: f64,
    y_area: f64,
    x_labels: usize,
    y_labels: usize,
    x_label: &'a dyn Fn(&f64) -> String,
    /// `None`: plotters' own numbers.
    y_label: Option<&'a dyn Fn(&f64) -> String>,
    x_desc: Option<&'a str>,
    y_desc: &'a str,
    /// Vertical grid lines, where x values are read against them.
    x_mesh: bool,
}

/// The chart inside `root`, its axes, labels and grid drawn: every chart's frame, written once.
fn framed<'a>(
    root: &'a DrawingArea<CanvasBackend, Shift>,
    frame: &Frame,
    theme: &Theme,
) -> Result<Chart<'a>, String> {
    let mut chart = ChartBuilder::on(root)
        .margin(theme.px(12.0))
        .x_label_area_size(theme.px(frame.x_area))
        .y_label_area_size(theme.px(frame.y_area))
        .build_cartesian_2d(frame.x.clone(), frame.y.clone())
        .map_err(|e| e.to_string())?;
    let mut mesh = chart.configure_mesh();
    if !frame.x_mesh {
        mesh.disable_x_mesh();
    }
    mesh.light_line_style(theme.foreground.mix(0.06))
        .bold_line_style(theme.foreground.mix(0.15))
        .axis_style(theme.foreground.mix(0.6))
        .x_labels(frame.x_labels)
        .y_labels(frame.y_labels)
        .x_label_formatter(frame.x_label)
        .y_desc(frame.y_desc)
        .label_style(theme.font(12.0))
        .axis_desc_style(theme.font(12.0));
    if let Some(format) = frame.y_label {
        mesh.y_label_formatter(format);
    }
    if let Some(desc) = frame.x_desc {
        mesh.x_desc(desc);
    }
    mesh.draw().map_err(|e| e.to_string())?;
    Ok(chart)
}

/// The capacity, usable and tight lines across the chart from `left` to `right`; their names
/// and values are in the legend beside the canvas.
fn draw_budget_lines(
    chart: &mut Chart,
    budget: [f64; 3],
    (left, right): (f64, f64),
    theme: &Theme,
) -> Result<(), String> {
    for (value, line) in budget.into_iter().zip(BUDGET_LINES) {
        let style = theme.stroke(line.colour.unwrap_or(theme.foreground), 2.0);
        draw_line(chart, vec![(left, value), (right, value)], style)?;
    }
    Ok(())
}

/// A polyline through `points` (data coordinates); every chart's lines go through this one call.
fn draw_line(chart: &mut Chart, points: Vec<(f64, f64)>, style: ShapeStyle) -> Result<(), String> {
    chart
        .draw_series(LineSeries::new(points, style))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Dots; every chart's points go through this one call.
fn draw_dots(chart: &mut Chart, dots: Vec<Circle<(f64, f64), u32>>) -> Result<(), String> {
    chart
        .draw_series(dots)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// How many labels a log-2 axis spanning `extent` doublings gets: one per doubling where they
/// fit in `room` device pixels at `per_label` CSS pixels each; plotters thins them to a round
/// step where not.
fn log2_labels(extent: f64, room: u32, per_label: f64, theme: &Theme) -> usize {
    let most = (f64::from(room) / (per_label * theme.scale))
        .floor()
        .max(2.0);
    extent.round().clamp(2.0, most) as usize + 1
}

/// A log-2 axis label: the power of two at a whole `log2`, nothing between.
fn log2_axis_label(log2: f64, label: fn(f64) -> String) -> String {
    if (log2 - log2.round()).abs() < 1e-6 {
        label(log2.round())
    } else {
        String::new()
    }
}

/// The curves' colours: the curve, the scenario's own value, the users asked for (concurrency)
/// and the largest value that fits (what-if).
pub const CURVE_COLOUR: Rgb = Rgb(0, 114, 178);
pub const HERE_COLOUR: Rgb = Rgb(213, 94, 0);
pub const USERS_COLOUR: Rgb = Rgb(0, 158, 115);
pub const CROSSING_COLOUR: Rgb = Rgb(0, 158, 115);

/// One what-if curve as the page shows it.
pub struct MemoryCurve<'a> {
    pub sweep: &'a Sweep,
    pub budget: &'a Budget,
    /// The x axis, in words: "micro-batch", "context (tokens)".
    pub axis: &'a str,
    /// The crossing's label, "max batch 6"; `None` when nothing fits.
    pub crossing_label: Option<String>,
    /// The point being read (hovered, tapped or chosen by keyboard), ringed.
    pub selected: Option<u32>,
}

/// How far above the capacity the memory axis reaches before points leave the top: far enough to
/// show the curve leaving the budget, near enough that the budget lines stay apart.
const CURVE_HEADROOM: f64 = 1.5;

/// Memory per GPU against the swept field: x log 2 (the points are powers of two, evenly spaced),
/// memory linear from 0 with the budget lines; the curve is cut where it leaves the top (its
/// points past there sit on the top edge, their values in the readout), out-of-memory points are
/// hollow, the scenario's own point is a larger dot, and the crossing is a vertical line with its
/// label. Returns each point's x in canvas pixels, so the page can find the point under a pointer.
pub fn draw_memory_curve(
    canvas: web_sys::HtmlCanvasElement,
    curve: &MemoryCurve,
    units: Units,
    theme: &Theme,
) -> Result<Vec<i32>, String> {
    let root = cleared(canvas, theme)?;
    let (divisor, unit) = axis_unit(units);
    let gb = |b: Bytes| b.as_f64() / divisor;
    // Each point as drawn: log 2 of its value, and its total before the top cuts it.
    let totals: Vec<(f64, f64)> = curve
        .sweep
        .points
        .iter()
        .map(|p| (log2(p.x), gb(p.total)))
        .collect();
    let (Some(&(first_x, first_y)), Some(&(last_x, last_y))) = (totals.first(), totals.last())
    else {
        root.present().map_err(|e| e.to_string())?;
        return Ok(Vec::new());
    };
    let budget = [
        gb(curve.budget.capacity),
        gb(curve.budget.usable),
        gb(curve.budget.tight_threshold),
    ];
    let top = memory_axis_top(first_y, last_y, budget[0]);
    let (x_min, x_max) = (first_x - 0.3, last_x + 0.3);
    let (width, _) = root.dim_in_pixel();
    let frame = Frame {
        x: x_min..x_max,
        y: 0.0..top,
        x_area: 38.0,
        y_area: 46.0,
        x_labels: log2_labels(x_max - x_min, width, 36.0, theme),
        y_labels: 5,
        x_label: &|x| log2_axis_label(*x, power_of_two_label),
        y_label: None,
        x_desc: Some(curve.axis),
        y_desc: unit,
        x_mesh: false,
    };
    let mut chart = framed(&root, &frame, theme)?;
    draw_budget_lines(&mut chart, budget, (x_min, x_max), theme)?;
    if let Some(crossing) = curve.sweep.crossing {
        let x = log2(crossing);
        let style = theme.stroke(CROSSING_COLOUR, 1.5);
        draw_line(&mut chart, vec![(x, 0.0), (x, top)], style)?;
    }
    let line = cut_at_top(&totals, top);
    draw_line(&mut chart, line, theme.stroke(CURVE_COLOUR, 2.5))?;
    draw_dots(&mut chart, curve_dots(curve, &totals, top, theme))?;

    let pixels: Vec<i32> = totals
        .iter()
        .map(|&(x, _)| chart.backend_coord(&(x, 0.0)).0)
        .collect();
    if let (Some(crossing), Some(label)) = (curve.sweep.crossing, &curve.crossing_label) {
        draw_crossing_label(&root, &chart, log2(crossing), label, theme)?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(pixels)
}

/// A value on a log-2 axis (0 is drawn as 1).
fn log2(x: u32) -> f64 {
    f64::from(x.max(1)).log2()
}

/// The memory axis's top, from the curve's first and last totals and the capacity: high enough
/// for the capacity, and for the whole curve unless that is past `CURVE_HEADROOM`.
fn memory_axis_top(first: f64, last: f64, capacity: f64) -> f64 {
    last.min((capacity * CURVE_HEADROOM).max(first * 1.25))
        .max(capacity)
        .max(1.0)
        * 1.08
}

/// The curve's line through `totals` up to `top`. Totals only grow, so the line stops where it
/// first leaves the top, cut at the edge.
fn cut_at_top(totals: &[(f64, f64)], top: f64) -> Vec<(f64, f64)> {
    let mut line = Vec::with_capacity(totals.len());
    for &(x, y) in totals {
        if y <= top {
            line.push((x, y));
            continue;
        }
        if let Some(&(x0, y0)) = line.last() {
            line.push((x0 + (x - x0) * (top - y0) / (y - y0), top));
        }
        break;
    }
    line
}

/// A dot per point (hollow where out of memory, on the top edge past it), a larger one on the
/// scenario's own value and a ring around the point being read.
fn curve_dots(
    curve: &MemoryCurve,
    totals: &[(f64, f64)],
    top: f64,
    theme: &Theme,
) -> Vec<Circle<(f64, f64), u32>> {
    let points = || curve.sweep.points.iter().zip(totals);
    let at = |&(x, y): &(f64, f64)| (x, y.min(top));
    let mut dots: Vec<_> = points()
        .map(|(p, xy)| {
            let style = if p.verdict == Verdict::Oom {
                theme.stroke(CURVE_COLOUR, 1.5)
            } else {
                CURVE_COLOUR.filled()
            };
            Circle::new(at(xy), theme.px(3.5), style)
        })
        .collect();
    for (p, xy) in points() {
        if p.x == curve.sweep.current {
            dots.push(Circle::new(at(xy), theme.px(5.5), HERE_COLOUR.filled()));
        }
        if Some(p.x) == curve.selected {
            let ring = theme.stroke(theme.foreground, 1.5);
            dots.push(Circle::new(at(xy), theme.px(8.0), ring));
        }
    }
    dots
}

/// The crossing's label at `x` (log 2), just above the x axis, on the side of the crossing's line
/// with more room, so it is never cut off.
fn draw_crossing_label(
    root: &DrawingArea<CanvasBackend, Shift>,
    chart: &Chart,
    x: f64,
    label: &str,
    theme: &Theme,
) -> Result<(), String> {
    let (x, bottom) = chart.backend_coord(&(x, 0.0));
    let gap = theme.px(4.0) as i32;
    let (across, _) = chart.plotting_area().get_pixel_range();
    let (anchor, x) = if x - across.start > across.end - x {
        (HPos::Right, x - gap)
    } else {
        (HPos::Left, x + gap)
    };
    let style = theme
        .font(12.0)
        .color(&CROSSING_COLOUR)
        .pos(Pos::new(anchor, VPos::Bottom));
    root.draw_text(label, &style, (x, bottom - gap))
        .map_err(|e| e.to_string())
}

/// "512", "1k", "16k", "1M": the power of two `2^log2` (tokens, a batch) on a log-2 axis.
fn power_of_two_label(log2: f64) -> String {
    let value = log2.exp2();
    if value >= 1_048_576.0 {
        format!("{}M", (value / 1_048_576.0).round())
    } else if value >= 1024.0 {
        format!("{}k", (value / 1024.0).round())
    } else {
        format!("{}", value.round())
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
    let root = cleared(canvas, theme)?;
    let log2_requests = |n: f64| (n.is_finite() && n > 0.0).then(|| n.log2());
    let points: Vec<(f64, f64)> = curve
        .iter()
        .filter_map(|&(t, c)| Some((log2(t), log2_requests(c)?)))
        .collect();
    let here_x = here.map(|(t, _)| log2(t));
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
    let (width, height) = root.dim_in_pixel();
    let frame = Frame {
        x: x_min..x_max,
        y: y_min..y_max,
        x_area: 40.0,
        y_area: 52.0,
        x_labels: log2_labels(x_max - x_min, width, 48.0, theme),
        y_labels: log2_labels(y_max - y_min, height, 22.0, theme),
        x_label: &|x| log2_axis_label(*x, power_of_two_label),
        y_label: Some(&|y| log2_axis_label(*y, requests_label)),
        x_desc: Some("context (tokens, log scale)"),
        y_desc: "concurrent requests (log scale)",
        x_mesh: true,
    };
    let mut chart = framed(&root, &frame, theme)?;

    if let Some(users) = users {
        let style = theme.stroke(USERS_COLOUR, 1.5);
        draw_line(&mut chart, vec![(x_min, users), (x_max, users)], style)?;
    }
    draw_line(&mut chart, points.clone(), theme.stroke(CURVE_COLOUR, 2.5))?;
    let mut dots: Vec<_> = points
        .iter()
        .map(|&p| Circle::new(p, theme.px(3.0), CURVE_COLOUR.filled()))
        .collect();
    if let Some(x) = here_x {
        draw_line(
            &mut chart,
            vec![(x, y_min), (x, y_max)],
            theme.stroke(HERE_COLOUR, 1.5),
        )?;
        if let Some(y) = here_y {
            dots.push(Circle::new((x, y), theme.px(5.0), HERE_COLOUR.filled()));
        }
    }
    draw_dots(&mut chart, dots)?;
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::{cut_at_top, power_of_two_label, requests_label};

    #[test]
    fn the_curve_stops_where_it_leaves_the_top() {
        let totals = [(0.0, 1.0), (1.0, 2.0), (2.0, 6.0), (3.0, 12.0)];
        assert_eq!(
            cut_at_top(&totals, 4.0),
            [(0.0, 1.0), (1.0, 2.0), (1.5, 4.0)]
        );
        assert_eq!(cut_at_top(&totals, 20.0), totals);
        // Above the top from the first point: nothing to draw.
        assert!(cut_at_top(&totals, 0.5).is_empty());
    }

    #[test]
    fn axis_labels_name_powers_of_two() {
        assert_eq!(power_of_two_label(0.0), "1");
        assert_eq!(power_of_two_label(9.0), "512");
        assert_eq!(power_of_two_label(10.0), "1k");
        assert_eq!(power_of_two_label(18.0), "256k");
        assert_eq!(power_of_two_label(20.0), "1M");
        assert_eq!(requests_label(0.0), "1");
        assert_eq!(requests_label(9.0), "512");
        assert_eq!(requests_label(-2.0), "1/4");
        // Far out of range: a label, not a panic.
        assert_eq!(requests_label(2000.0), "inf");
        assert_eq!(requests_label(-2000.0), "1/inf");
    }
}
