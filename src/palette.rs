//! The charts' colours, scale and size unit, shared by the shell's stack (drawn with the canvas API) and
//! the panels' curves (drawn with plotters).

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::Units;

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// As CSS writes it: for the legends' SVG swatches and the canvas's styles.
    pub fn css(self) -> String {
        let Rgb(r, g, b) = self;
        format!("rgb({r},{g},{b})")
    }

    /// As CSS writes it at `alpha` opacity.
    pub fn css_alpha(self, alpha: f64) -> String {
        let Rgb(r, g, b) = self;
        format!("rgba({r},{g},{b},{alpha})")
    }
}

/// One of the horizontal lines: its name and colour (`None`: the theme's foreground).
pub struct BudgetLine {
    pub name: &'static str,
    pub colour: Option<Rgb>,
}

/// Capacity, usable and tight, in that order.
pub const BUDGET_LINES: [BudgetLine; 3] = [
    BudgetLine {
        name: "capacity",
        colour: None,
    },
    BudgetLine {
        name: "usable",
        colour: Some(Rgb(213, 94, 0)),
    },
    BudgetLine {
        name: "tight",
        colour: Some(Rgb(230, 159, 0)),
    },
];

/// Okabe & Ito's colour-blind-safe palette (2008), one colour per stable component id.
pub fn component_colour(id: &ComponentId) -> Rgb {
    match id {
        ComponentId::Weights => Rgb(0, 114, 178),
        ComponentId::QuantConstants => Rgb(86, 180, 233),
        ComponentId::Adapters => Rgb(204, 121, 167),
        ComponentId::Gradients => Rgb(230, 159, 0),
        ComponentId::Optimizer => Rgb(213, 94, 0),
        ComponentId::MasterWeights => Rgb(240, 228, 66),
        ComponentId::WeightCopies => Rgb(51, 34, 136),
        ComponentId::Activations => Rgb(0, 158, 115),
        ComponentId::Logits => Rgb(136, 34, 85),
        ComponentId::KvCache => Rgb(68, 170, 153),
        ComponentId::NonTorch => Rgb(170, 68, 153),
        ComponentId::CudaGraphs => Rgb(221, 204, 119),
        ComponentId::CudaContext => Rgb(153, 153, 153),
        ComponentId::Fragmentation => Rgb(204, 204, 204),
        _ => Rgb(102, 102, 102),
    }
}

/// The page's colours for a chart and the screen's pixel ratio.
pub struct Theme {
    pub background: Rgb,
    pub foreground: Rgb,
    /// Device pixels per CSS pixel, so text and lines stay crisp on HiDPI screens.
    pub scale: f64,
}

impl Theme {
    /// `css` CSS pixels in the canvas's device pixels.
    pub fn px(&self, css: f64) -> u32 {
        (css * self.scale).round() as u32
    }
}

/// How many bytes one unit of a memory axis is, and its name.
pub fn axis_unit(units: Units) -> (f64, &'static str) {
    match units {
        Units::Gb => (1e9, "GB"),
        Units::Gib => (1_073_741_824.0, "GiB"),
    }
}
