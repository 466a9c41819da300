//! A component's bytes and its "show your work" text from one expression, so they cannot disagree.
//!
//! A [`Formula`] is an `f64` and, only when the stack explains itself, the tree that computed it:
//! leaves are numbers (with an optional symbol, words before and a unit after), joined by `+ − × ÷`
//! (std's operators, so the arithmetic runs in the order it is written) and `max`, `min` and
//! `ceil`. Without text a formula is a bare `f64` and allocates nothing, which keeps the solver's
//! thousands of estimates cheap.
//!
//! The text reads `symbols = numbers` when a leaf has a symbol (`L × b·s = 32 × 2048`), else just
//! the numbers with their words and units. A term left out with [`Formula::shown_if`] is the
//! identity of its operation (a split over one GPU, a `max` with 0). Remarks ([`Formula::remark`]) follow the
//! arithmetic, each after `"; "`. [`Formula::arithmetic`] renders the same tree as numbers and
//! operators only; `estimate::arithmetic` puts it in each component's `formula`, so a test can
//! evaluate it and compare it with the bytes.

use super::stack::{num, percent};
use crate::units::{format_size_exact, Bytes, Units};
use std::fmt::{Display, Write};
use std::ops::{Add, Div, Mul, Sub};

/// Makes a formula's leaves, with text when the stack explains itself.
#[derive(Clone, Copy)]
pub(super) struct Fx {
    explain: bool,
}

impl Fx {
    pub fn new(explain: bool) -> Fx {
        Fx { explain }
    }

    /// A number.
    pub fn num(self, value: f64) -> Formula {
        self.leaf(value, None)
    }

    /// A number that the formula's symbolic side names: `L`, `b·s`.
    pub fn sym(self, symbol: &'static str, value: f64) -> Formula {
        self.leaf(value, Some(symbol))
    }

    fn leaf(self, value: f64, symbol: Option<&'static str>) -> Formula {
        Formula {
            value,
            node: self.explain.then(|| {
                Box::new(Node::Leaf(Leaf {
                    value,
                    symbol,
                    words: None,
                    unit: None,
                    style: Style::Num,
                }))
            }),
        }
    }
}

/// A value and, when explaining, the expression that computed it.
#[derive(Clone)]
pub(super) struct Formula {
    value: f64,
    node: Option<Box<Node>>,
}

#[derive(Clone)]
enum Node {
    Leaf(Leaf),
    Op(Op, Box<Node>, Box<Node>),
    Call(Call, Vec<Node>),
    /// A term left out of the text.
    Hidden,
    Remark(Box<Node>, String),
}

#[derive(Clone)]
struct Leaf {
    value: f64,
    symbol: Option<&'static str>,
    words: Option<String>,
    unit: Option<String>,
    style: Style,
}

/// How a leaf's number reads in the text; the arithmetic always has `num`'s form.
#[derive(Clone, Copy)]
enum Style {
    Num,
    Percent,
    Size(Units),
    ExactSize,
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

impl Op {
    fn precedence(self) -> u8 {
        match self {
            Op::Add | Op::Sub => 1,
            Op::Mul | Op::Div => 2,
        }
    }

    fn sign(self) -> &'static str {
        match self {
            Op::Add => " + ",
            Op::Sub => " − ",
            Op::Mul => " × ",
            Op::Div => " ÷ ",
        }
    }
}

#[derive(Clone, Copy)]
enum Call {
    Max,
    Min,
    Ceil,
}

/// The three renderings of one tree.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    Symbols,
    Numbers,
    Arithmetic,
}

impl Formula {
    pub fn value(&self) -> f64 {
        self.value
    }

    /// Whether text is built: the same as the leaves' [`Fx`].
    pub fn fx(&self) -> Fx {
        Fx::new(self.node.is_some())
    }

    /// Words shown before a leaf's number: "all-linear".
    pub fn words(mut self, words: impl Display) -> Formula {
        if let Some(leaf) = self.leaf_mut() {
            leaf.words = Some(words.to_string());
        }
        self
    }

    /// A unit shown after a leaf's number: "B (bf16)".
    pub fn unit(mut self, unit: impl Display) -> Formula {
        if let Some(leaf) = self.leaf_mut() {
            leaf.unit = Some(unit.to_string());
        }
        self
    }

    /// Shows a leaf's fraction as a percentage: 0.2 reads "20%".
    pub fn percent(self) -> Formula {
        self.styled(Style::Percent)
    }

    /// Shows a leaf's bytes in `units`: "12.61 GB".
    pub fn size(self, units: Units) -> Formula {
        self.styled(Style::Size(units))
    }

    /// Shows a leaf's bytes in the largest unit that divides them: "512MiB".
    pub fn exact_size(self) -> Formula {
        self.styled(Style::ExactSize)
    }

    fn styled(mut self, style: Style) -> Formula {
        if let Some(leaf) = self.leaf_mut() {
            leaf.style = style;
        }
        self
    }

    fn leaf_mut(&mut self) -> Option<&mut Leaf> {
        match self.node.as_deref_mut() {
            Some(Node::Leaf(leaf)) => Some(leaf),
            _ => None,
        }
    }

    /// Leaves this term out of the text unless `shown`; it must then be its operation's identity
    /// (a factor or divisor of 1, a term of 0), which the arithmetic test checks.
    pub fn shown_if(self, shown: bool) -> Formula {
        match self.node {
            Some(_) if !shown => Formula {
                value: self.value,
                node: Some(Box::new(Node::Hidden)),
            },
            node => Formula { node, ..self },
        }
    }

    /// Words after the arithmetic that do not change it: "offloaded to CPU".
    pub fn remark(self, remark: impl Display) -> Formula {
        Formula {
            value: self.value,
            node: self
                .node
                .map(|node| Box::new(Node::Remark(node, remark.to_string()))),
        }
    }

    pub fn max(self, other: Formula) -> Formula {
        self.call2(Call::Max, other, f64::max)
    }

    pub fn min(self, other: Formula) -> Formula {
        self.call2(Call::Min, other, f64::min)
    }

    pub fn ceil(self) -> Formula {
        Formula {
            value: self.value.ceil(),
            node: self
                .node
                .map(|n| Box::new(Node::Call(Call::Ceil, vec![*n]))),
        }
    }

    fn call2(self, call: Call, other: Formula, f: fn(f64, f64) -> f64) -> Formula {
        Formula {
            value: f(self.value, other.value),
            node: match (self.node, other.node) {
                (Some(a), Some(b)) => Some(Box::new(Node::Call(call, vec![*a, *b]))),
                _ => None,
            },
        }
    }

    fn op(self, op: Op, other: Formula, value: f64) -> Formula {
        Formula {
            value,
            node: match (self.node, other.node) {
                (Some(a), Some(b)) => Some(Box::new(Node::Op(op, a, b))),
                _ => None,
            },
        }
    }

    /// The text users read: `symbols = numbers`, then any remarks; empty when not explaining.
    pub fn text(&self) -> String {
        let Some(node) = self.node.as_deref() else {
            return String::new();
        };
        let mut out = String::new();
        if has_symbol(node) {
            write(node, Form::Symbols, 0, false, &mut out);
            out.push_str(" = ");
        }
        write(node, Form::Numbers, 0, false, &mut out);
        remarks(node, &mut out);
        out
    }

    /// The same tree as numbers and operators only, in `num`'s form: what the text's numbers
    /// compute.
    pub fn arithmetic(&self) -> String {
        let mut out = String::new();
        if let Some(node) = self.node.as_deref() {
            write(node, Form::Arithmetic, 0, false, &mut out);
        }
        out
    }
}

impl Add for Formula {
    type Output = Formula;
    fn add(self, other: Formula) -> Formula {
        let value = self.value + other.value;
        self.op(Op::Add, other, value)
    }
}

impl Sub for Formula {
    type Output = Formula;
    fn sub(self, other: Formula) -> Formula {
        let value = self.value - other.value;
        self.op(Op::Sub, other, value)
    }
}

impl Mul for Formula {
    type Output = Formula;
    fn mul(self, other: Formula) -> Formula {
        let value = self.value * other.value;
        self.op(Op::Mul, other, value)
    }
}

impl Div for Formula {
    type Output = Formula;
    fn div(self, other: Formula) -> Formula {
        let value = self.value / other.value;
        self.op(Op::Div, other, value)
    }
}

/// The node the text shows in this place: an operation (or `max`, `min`) with one term left out
/// shows the other.
fn shown(node: &Node) -> Option<&Node> {
    match node {
        Node::Hidden => None,
        Node::Remark(inner, _) => shown(inner),
        Node::Op(_, a, b) => either(node, a, b),
        Node::Call(Call::Max | Call::Min, args) if args.len() == 2 => {
            either(node, &args[0], &args[1])
        }
        Node::Leaf(_) | Node::Call(..) => Some(node),
    }
}

/// `node` when both its terms show, else the one that does.
fn either<'a>(node: &'a Node, a: &'a Node, b: &'a Node) -> Option<&'a Node> {
    match (shown(a), shown(b)) {
        (Some(_), Some(_)) => Some(node),
        (a, b) => a.or(b),
    }
}

fn has_symbol(node: &Node) -> bool {
    match shown(node) {
        Some(Node::Leaf(leaf)) => leaf.symbol.is_some(),
        Some(Node::Op(_, a, b)) => has_symbol(a) || has_symbol(b),
        Some(Node::Call(_, args)) => args.iter().any(has_symbol),
        _ => false,
    }
}

/// Writes `node`, in parentheses when it binds looser than `precedence` (or as loose, as the
/// right side of `−` or `÷`).
fn write(node: &Node, form: Form, precedence: u8, strict: bool, out: &mut String) {
    let Some(node) = shown(node) else {
        return;
    };
    match node {
        Node::Leaf(leaf) => write_leaf(leaf, form, out),
        Node::Op(op, a, b) => {
            let p = op.precedence();
            let paren = p < precedence || (p == precedence && strict);
            if paren {
                out.push('(');
            }
            write(a, form, p, false, out);
            out.push_str(op.sign());
            write(b, form, p, matches!(op, Op::Sub | Op::Div), out);
            if paren {
                out.push(')');
            }
        }
        Node::Call(call, args) => {
            let (open, close) = match (call, form) {
                (Call::Max, _) => ("max(", ")"),
                (Call::Min, _) => ("min(", ")"),
                (Call::Ceil, Form::Arithmetic) => ("ceil(", ")"),
                (Call::Ceil, _) => ("⌈", "⌉"),
            };
            out.push_str(open);
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(arg, form, 0, false, out);
            }
            out.push_str(close);
        }
        Node::Hidden | Node::Remark(..) => unreachable!("shown() passes through these"),
    }
}

fn write_leaf(leaf: &Leaf, form: Form, out: &mut String) {
    let number = || match leaf.style {
        Style::Num => num(leaf.value),
        Style::Percent => percent(leaf.value),
        Style::Size(units) => Bytes::from_f64(leaf.value).display(units),
        Style::ExactSize => format_size_exact(Bytes::from_f64(leaf.value)),
    };
    match (form, leaf.symbol) {
        (Form::Arithmetic, _) => out.push_str(&num(leaf.value)),
        (Form::Symbols, Some(symbol)) => out.push_str(symbol),
        (Form::Symbols, None) => out.push_str(&number()),
        (Form::Numbers, _) => {
            if let Some(words) = &leaf.words {
                let _ = write!(out, "{words} ");
            }
            out.push_str(&number());
            if let Some(unit) = &leaf.unit {
                let _ = write!(out, " {unit}");
            }
        }
    }
}

/// Appends each remark of the shown terms after `"; "`.
fn remarks(node: &Node, out: &mut String) {
    match node {
        Node::Hidden | Node::Leaf(_) => {}
        Node::Remark(inner, remark) => {
            remarks(inner, out);
            out.push_str("; ");
            out.push_str(remark);
        }
        Node::Op(_, a, b) => {
            remarks(a, out);
            remarks(b, out);
        }
        Node::Call(_, args) => args.iter().for_each(|arg| remarks(arg, out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_arithmetic_come_from_one_tree() {
        let fx = Fx::new(true);
        let f = fx.sym("L", 32.0) * fx.sym("b·s", 2048.0) * fx.num(2.0).unit("B (bf16)")
            / fx.sym("N", 1.0).shown_if(false);
        assert_eq!(f.value(), 131072.0);
        assert_eq!(f.text(), "L × b·s × 2 = 32 × 2048 × 2 B (bf16)");
        assert_eq!(f.arithmetic(), "32 × 2048 × 2");
    }

    #[test]
    fn parentheses_follow_precedence() {
        let fx = Fx::new(true);
        let f = (fx.num(1.0) + fx.num(2.0)) * fx.num(3.0) - (fx.num(4.0) - fx.num(5.0))
            + fx.num(6.0) / (fx.num(2.0) * fx.num(3.0));
        assert_eq!(f.arithmetic(), "(1 + 2) × 3 − (4 − 5) + 6 ÷ (2 × 3)");
        assert_eq!(f.value(), 11.0);
    }

    #[test]
    fn functions_remarks_and_styles() {
        let fx = Fx::new(true);
        let f = (fx.num(7.0) / fx.sym("N", 2.0))
            .ceil()
            .max(fx.num(0.0))
            .remark("offloaded")
            * fx.num(0.2).percent();
        assert_eq!(
            f.text(),
            "max(⌈7 ÷ N⌉, 0) × 20% = max(⌈7 ÷ 2⌉, 0) × 20%; offloaded"
        );
        assert_eq!(f.arithmetic(), "max(ceil(7 ÷ 2), 0) × 0.2");
    }

    #[test]
    fn without_text_nothing_is_built() {
        let fx = Fx::new(false);
        let f = fx.sym("L", 3.0).words("w") * fx.num(2.0).remark("r");
        assert!(f.node.is_none());
        assert_eq!(f.value(), 6.0);
        assert_eq!(f.text(), "");
    }
}
