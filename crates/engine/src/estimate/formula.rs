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
//! identity of its operation (a split over one GPU, a `max` with 0). Remarks
//! ([`Formula::remark`]) follow the arithmetic, each after `"; "`. [`Formula::arithmetic`] renders
//! the same tree as numbers and operators only; `estimate::arithmetic` puts it in each component's
//! `formula`, so a test can evaluate it and compare it with the bytes.

use super::stack::{percent, write_num};
use crate::units::{format_size_exact, Bytes, Units};
use std::borrow::Cow;
use std::fmt::Arguments;
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
    #[inline]
    pub fn num(self, value: f64) -> Formula {
        self.leaf(value, None)
    }

    /// A number that the formula's symbolic side names: `L`, `b·s`.
    #[inline]
    pub fn sym(self, symbol: &'static str, value: f64) -> Formula {
        self.leaf(value, Some(symbol))
    }

    #[inline(always)]
    fn leaf(self, value: f64, symbol: Option<&'static str>) -> Formula {
        Formula {
            value,
            node: if self.explain {
                Some(leaf(value, symbol))
            } else {
                None
            },
        }
    }
}

// The tree is built out of line, so that without text a formula's arithmetic inlines to bare
// `f64` operations.
#[inline(never)]
fn leaf(value: f64, symbol: Option<&'static str>) -> Box<Node> {
    Box::new(Node::Leaf(Leaf {
        value,
        symbol,
        words: None,
        unit: None,
        style: Style::Num,
    }))
}

/// Both trees, or none when a formula without text meets one with it.
#[inline(never)]
fn both(a: Option<Box<Node>>, b: Option<Box<Node>>) -> Option<(Box<Node>, Box<Node>)> {
    a.zip(b)
}

/// `a op b`, or the one term shown when the other is left out, so that no operation or function
/// holds a hidden term and the text is written in one pass.
#[inline(never)]
fn join(op: Op, a: Box<Node>, b: Box<Node>) -> Box<Node> {
    match (&*a, &*b) {
        (Node::Hidden, _) => b,
        (_, Node::Hidden) => a,
        _ => Box::new(Node::Op(op, a, b)),
    }
}

#[inline(never)]
fn hidden(mut node: Box<Node>) -> Box<Node> {
    *node = Node::Hidden;
    node
}

#[inline(never)]
fn remarked(node: Box<Node>, remark: Cow<'static, str>) -> Box<Node> {
    match *node {
        Node::Hidden => node,
        _ => Box::new(Node::Remark(node, remark)),
    }
}

#[inline(never)]
fn call(call: Call, args: Vec<Node>) -> Box<Node> {
    Box::new(Node::Call(call, args))
}

/// Text a leaf or remark carries: a literal, or `format_args!`, formatted only when explaining.
pub(super) trait Label {
    fn label(self) -> Cow<'static, str>;
}

impl Label for &'static str {
    fn label(self) -> Cow<'static, str> {
        Cow::Borrowed(self)
    }
}

/// Text built by a closure when a label is formatted, so that a formula without text never
/// builds it: `format_args!("{}", Lazy(|| num(x)))`.
pub(super) struct Lazy<F>(pub F);

impl<F: Fn() -> String> std::fmt::Display for Lazy<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&(self.0)())
    }
}

impl Label for Arguments<'_> {
    fn label(self) -> Cow<'static, str> {
        match self.as_str() {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(self.to_string()),
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
    Remark(Box<Node>, Cow<'static, str>),
}

#[derive(Clone)]
struct Leaf {
    value: f64,
    symbol: Option<&'static str>,
    words: Option<Cow<'static, str>>,
    unit: Option<Cow<'static, str>>,
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
    #[inline]
    pub fn value(&self) -> f64 {
        self.value
    }

    /// Whether text is built: the same as the leaves' [`Fx`].
    #[inline]
    pub fn fx(&self) -> Fx {
        Fx::new(self.node.is_some())
    }

    /// Words shown before a leaf's number: "all-linear".
    #[inline]
    pub fn words(mut self, words: impl Label) -> Formula {
        if let Some(leaf) = self.leaf_mut() {
            leaf.words = Some(words.label());
        }
        self
    }

    /// A unit shown after a leaf's number: "B (bf16)".
    #[inline]
    pub fn unit(mut self, unit: impl Label) -> Formula {
        if let Some(leaf) = self.leaf_mut() {
            leaf.unit = Some(unit.label());
        }
        self
    }

    /// Shows a leaf's fraction as a percentage: 0.2 reads "20%".
    #[inline]
    pub fn percent(self) -> Formula {
        self.styled(Style::Percent)
    }

    /// Shows a leaf's bytes in `units`: "12.61 GB".
    #[inline]
    pub fn size(self, units: Units) -> Formula {
        self.styled(Style::Size(units))
    }

    /// Shows a leaf's bytes in the largest unit that divides them: "512MiB".
    #[inline]
    pub fn exact_size(self) -> Formula {
        self.styled(Style::ExactSize)
    }

    #[inline]
    fn styled(mut self, style: Style) -> Formula {
        if let Some(leaf) = self.leaf_mut() {
            leaf.style = style;
        }
        self
    }

    #[inline]
    fn leaf_mut(&mut self) -> Option<&mut Leaf> {
        match self.node.as_deref_mut() {
            Some(Node::Leaf(leaf)) => Some(leaf),
            _ => None,
        }
    }

    /// Leaves this term out of the text unless `shown`; it must then be its operation's identity
    /// (a factor or divisor of 1, a term of 0), which the arithmetic test checks.
    #[inline]
    pub fn shown_if(self, shown: bool) -> Formula {
        Formula {
            value: self.value,
            node: match self.node {
                Some(node) if !shown => Some(hidden(node)),
                node => node,
            },
        }
    }

    /// Words after the arithmetic that do not change it: "offloaded to CPU".
    #[inline]
    pub fn remark(self, remark: impl Label) -> Formula {
        Formula {
            value: self.value,
            node: self.node.map(|node| remarked(node, remark.label())),
        }
    }

    #[inline]
    pub fn max(self, other: Formula) -> Formula {
        self.call2(Call::Max, other, f64::max)
    }

    #[inline]
    pub fn min(self, other: Formula) -> Formula {
        self.call2(Call::Min, other, f64::min)
    }

    #[inline]
    pub fn ceil(self) -> Formula {
        Formula {
            value: self.value.ceil(),
            node: self.node.map(|n| call(Call::Ceil, vec![*n])),
        }
    }

    #[inline(always)]
    fn call2(self, name: Call, other: Formula, f: fn(f64, f64) -> f64) -> Formula {
        let value = f(self.value, other.value);
        Formula {
            value,
            node: match (self.node, other.node) {
                (None, None) => None,
                (a, b) => both(a, b).map(|(a, b)| match (&*a, &*b) {
                    (Node::Hidden, _) => b,
                    (_, Node::Hidden) => a,
                    _ => call(name, vec![*a, *b]),
                }),
            },
        }
    }

    #[inline(always)]
    fn op(self, op: Op, other: Formula, value: f64) -> Formula {
        Formula {
            value,
            node: match (self.node, other.node) {
                (None, None) => None,
                (a, b) => both(a, b).map(|(a, b)| join(op, a, b)),
            },
        }
    }

    /// The text users read: `symbols = numbers`, then any remarks; empty when not explaining.
    #[inline(never)]
    pub fn text(&self) -> String {
        let Some(node) = self.node.as_deref() else {
            return String::new();
        };
        let mut out = String::with_capacity(128);
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
    #[inline(never)]
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
    #[inline(always)]
    fn add(self, other: Formula) -> Formula {
        let value = self.value + other.value;
        self.op(Op::Add, other, value)
    }
}

impl Sub for Formula {
    type Output = Formula;
    #[inline(always)]
    fn sub(self, other: Formula) -> Formula {
        let value = self.value - other.value;
        self.op(Op::Sub, other, value)
    }
}

impl Mul for Formula {
    type Output = Formula;
    #[inline(always)]
    fn mul(self, other: Formula) -> Formula {
        let value = self.value * other.value;
        self.op(Op::Mul, other, value)
    }
}

impl Div for Formula {
    type Output = Formula;
    #[inline(always)]
    fn div(self, other: Formula) -> Formula {
        let value = self.value / other.value;
        self.op(Op::Div, other, value)
    }
}

/// The node the text shows in this place, past any remark; none for a hidden formula (only a
/// whole formula can be: [`join`] drops a hidden term from an operation, and `max` and `min` do
/// too).
fn shown(node: &Node) -> Option<&Node> {
    match node {
        Node::Hidden => None,
        Node::Remark(inner, _) => shown(inner),
        _ => Some(node),
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
    let number = |out: &mut String| match leaf.style {
        Style::Num => write_num(out, leaf.value),
        Style::Percent => out.push_str(&percent(leaf.value)),
        Style::Size(units) => out.push_str(&Bytes::from_f64(leaf.value).display(units)),
        Style::ExactSize => out.push_str(&format_size_exact(Bytes::from_f64(leaf.value))),
    };
    match (form, leaf.symbol) {
        (Form::Arithmetic, _) => write_num(out, leaf.value),
        (Form::Symbols, Some(symbol)) => out.push_str(symbol),
        (Form::Symbols, None) => number(out),
        (Form::Numbers, _) => {
            if let Some(words) = &leaf.words {
                out.push_str(words);
                out.push(' ');
            }
            number(out);
            if let Some(unit) = &leaf.unit {
                out.push(' ');
                out.push_str(unit);
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
