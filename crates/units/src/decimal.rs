//! Reading a decimal number into an `f64`, with exactly the result and the syntax of
//! `str::parse::<f64>`, but without the standard library's table of 128-bit powers of five: that
//! table is a large share of the page's wasm, and the page reads a few numbers per edit.
//!
//! Short numbers take the exact fast path (at most 15 digits, times or over a power of ten up to
//! 10^22: one correctly rounded operation). Longer ones start from an estimate and are settled by
//! exact big-integer comparisons with the midpoints between neighbouring floats, rounding a tie to
//! the even neighbour, as IEEE 754 and the standard library do.

use std::cmp::Ordering;

/// Significant digits kept. A midpoint between two adjacent `f64`s has at most 767, so whether
/// any digit past these is non-zero is all the rounding needs to know of them.
const MAX_DIGITS: usize = 800;

/// Every power of ten an `f64` holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Reads `text` as `str::parse::<f64>` would, giving the same value (bit for bit, NaN's sign
/// included) or, where it fails, `None`: an optional sign, then `inf`, `infinity` or `nan` in any
/// letter case, or digits with an optional point and an optional exponent (`e` or `E`, an
/// optional sign, digits). No spaces, no `_`.
pub fn parse_f64(text: &str) -> Option<f64> {
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        f64::INFINITY
    } else if rest.eq_ignore_ascii_case("nan") {
        f64::NAN
    } else {
        Decimal::read(rest)?.nearest()
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `digits × 10^exponent`, plus something smaller than one unit of the last digit when
/// `truncated`. `digits` has no leading or trailing zeros.
struct Decimal {
    digits: Vec<u8>,
    exponent: i64,
    truncated: bool,
}

impl Decimal {
    fn read(text: &str) -> Option<Decimal> {
        let bytes = text.as_bytes();
        let mut d = Decimal {
            digits: Vec::new(),
            exponent: 0,
            truncated: false,
        };
        let mut at = 0;
        let mut any_digit = false;
        while let Some(digit) = bytes.get(at).filter(|b| b.is_ascii_digit()) {
            d.push(digit - b'0', false);
            any_digit = true;
            at += 1;
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            while let Some(digit) = bytes.get(at).filter(|b| b.is_ascii_digit()) {
                d.push(digit - b'0', true);
                any_digit = true;
                at += 1;
            }
        }
        if !any_digit {
            return None;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            let negative = bytes.get(at) == Some(&b'-');
            if matches!(bytes.get(at), Some(b'-' | b'+')) {
                at += 1;
            }
            let start = at;
            let mut exponent: i64 = 0;
            while let Some(digit) = bytes.get(at).filter(|b| b.is_ascii_digit()) {
                // The standard library stops accumulating here, so a longer exponent means what
                // it means there.
                if exponent < 0x10000 {
                    exponent = 10 * exponent + i64::from(digit - b'0');
                }
                at += 1;
            }
            if at == start {
                return None;
            }
            d.exponent += if negative { -exponent } else { exponent };
        }
        if at != bytes.len() {
            return None;
        }
        while d.digits.last() == Some(&0) {
            d.digits.pop();
            d.exponent += 1;
        }
        Some(d)
    }

    /// One more digit, before or after the point.
    fn push(&mut self, digit: u8, after_point: bool) {
        if self.digits.is_empty() && digit == 0 {
            // A leading zero: only its place after the point counts.
            self.exponent -= i64::from(after_point);
        } else if self.digits.len() < MAX_DIGITS {
            self.digits.push(digit);
            self.exponent -= i64::from(after_point);
        } else {
            self.truncated |= digit != 0;
            self.exponent += i64::from(!after_point);
        }
    }

    /// The nearest `f64`, ties to even.
    fn nearest(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        // The value lies in [10^(order − 1), 10^order).
        let order = self.digits.len() as i64 + self.exponent;
        if order > 309 {
            return f64::INFINITY;
        }
        if order < -323 {
            // Below 10^-324, under half the smallest subnormal (2^-1075).
            return 0.0;
        }
        if !self.truncated && self.digits.len() <= 15 && self.exponent.abs() <= 22 {
            // Exact operands, one rounding: the correctly rounded result.
            let whole = self.digits.iter().fold(0u64, |n, &d| n * 10 + u64::from(d)) as f64;
            let scale = EXACT_POWERS_OF_TEN[self.exponent.unsigned_abs() as usize];
            return if self.exponent < 0 {
                whole / scale
            } else {
                whole * scale
            };
        }
        self.settle(self.estimate().min(f64::MAX))
    }

    /// Within a few units in the last place: the first 19 digits, scaled in steps that keep the
    /// intermediate value finite and normal.
    fn estimate(&self) -> f64 {
        let head = self.digits.len().min(19);
        let mut x = self.digits[..head]
            .iter()
            .fold(0u64, |n, &d| n * 10 + u64::from(d)) as f64;
        let mut power = self.exponent + (self.digits.len() - head) as i64;
        while power != 0 {
            let step = power.clamp(-300, 300);
            let scale = 10f64.powi(step.unsigned_abs() as i32);
            x = if step < 0 { x / scale } else { x * scale };
            power -= step;
        }
        x
    }

    /// Moves `x` one float at a time until the value lies between its two midpoints.
    fn settle(&self, mut x: f64) -> f64 {
        let odd = |x: f64| x.to_bits() & 1 == 1;
        let exact = Exact::new(self);
        loop {
            let up = (x < f64::MAX).then(|| f64::from_bits(x.to_bits() + 1));
            match (exact.cmp_midpoint(x, up), up) {
                (Ordering::Greater, Some(up)) => {
                    x = up;
                    continue;
                }
                (Ordering::Greater, None) => return f64::INFINITY,
                (Ordering::Equal, _) if odd(x) => return up.unwrap_or(f64::INFINITY),
                _ => {}
            }
            if x > 0.0 {
                let down = f64::from_bits(x.to_bits() - 1);
                match exact.cmp_midpoint(down, Some(x)) {
                    Ordering::Less => {
                        x = down;
                        continue;
                    }
                    Ordering::Equal if odd(x) => return down,
                    _ => {}
                }
            }
            return x;
        }
    }
}

/// The value as big integers, for exact comparisons: `digits × 5^e` (`e ≥ 0`) on one side, and
/// `5^-e` to scale the other side by (`e < 0`); the powers of two are shifts.
struct Exact {
    scaled_digits: Big,
    fives_other_side: Big,
    exponent: i64,
    truncated: bool,
}

impl Exact {
    fn new(d: &Decimal) -> Exact {
        let mut scaled_digits = Big::default();
        for &digit in &d.digits {
            scaled_digits.mul_add(10, u32::from(digit));
        }
        let mut fives_other_side = Big::from_u64(1);
        if d.exponent >= 0 {
            scaled_digits.mul_pow5(d.exponent as u32);
        } else {
            fives_other_side.mul_pow5(d.exponent.unsigned_abs() as u32);
        }
        Exact {
            scaled_digits,
            fives_other_side,
            exponent: d.exponent,
            truncated: d.truncated,
        }
    }

    /// The value against the midpoint of `low` and the float above it (`None`: 2^1024, where
    /// rounding up overflows).
    fn cmp_midpoint(&self, low: f64, high: Option<f64>) -> Ordering {
        let (low_m, low_e) = parts(low);
        let (high_m, high_e) = high.map_or((1 << 52, 972), parts);
        let e = low_e.min(high_e);
        let sum = (low_m << (low_e - e)) + (high_m << (high_e - e));
        // midpoint = sum × 2^(e − 1); value = digits × 5^exponent × 2^exponent.
        let mut left = self.scaled_digits.clone();
        let mut right = self.fives_other_side.clone();
        right.mul_u64(sum);
        let twos = self.exponent - (i64::from(e) - 1);
        if twos >= 0 {
            left.shl(twos as u32);
        } else {
            right.shl(twos.unsigned_abs() as u32);
        }
        match left.cmp(&right) {
            Ordering::Equal if self.truncated => Ordering::Greater,
            order => order,
        }
    }
}

/// `x` (finite, not negative) as `m × 2^e`.
fn parts(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let fraction = bits & ((1 << 52) - 1);
    match (bits >> 52) as i32 {
        0 => (fraction, -1074),
        biased => (fraction | 1 << 52, biased - 1075),
    }
}

/// An unsigned big integer, little-endian 32-bit limbs, without high zero limbs.
#[derive(Clone, Default)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(n: u64) -> Big {
        let mut big = Big(vec![n as u32, (n >> 32) as u32]);
        big.trim();
        big
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    /// `self × factor + add`.
    fn mul_add(&mut self, factor: u32, add: u32) {
        let mut carry = u64::from(add);
        for limb in &mut self.0 {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    fn mul_u64(&mut self, factor: u64) {
        let high = self.clone();
        self.mul_add(factor as u32, 0);
        let mut high_part = high;
        high_part.mul_add((factor >> 32) as u32, 0);
        high_part.shl(32);
        self.add(&high_part);
    }

    fn add(&mut self, other: &Big) {
        let mut carry = 0u64;
        for i in 0..self.0.len().max(other.0.len()) {
            let sum = u64::from(self.0.get(i).copied().unwrap_or(0))
                + u64::from(other.0.get(i).copied().unwrap_or(0))
                + carry;
            match self.0.get_mut(i) {
                Some(limb) => *limb = sum as u32,
                None => self.0.push(sum as u32),
            }
            carry = sum >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow5(&mut self, mut power: u32) {
        // 5^13 is the largest power of five that fits in a limb.
        while power >= 13 {
            self.mul_add(1_220_703_125, 0);
            power -= 13;
        }
        self.mul_add(5u32.pow(power), 0);
    }

    fn shl(&mut self, bits: u32) {
        if self.0.is_empty() {
            return;
        }
        let (limbs, bits) = ((bits / 32) as usize, bits % 32);
        if bits > 0 {
            let mut carry = 0u32;
            for limb in &mut self.0 {
                let shifted = (u64::from(*limb) << bits) | u64::from(carry);
                *limb = shifted as u32;
                carry = (shifted >> 32) as u32;
            }
            if carry > 0 {
                self.0.push(carry);
            }
        }
        self.0.splice(0..0, std::iter::repeat_n(0, limbs));
    }

    fn cmp(&self, other: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(text: &str) {
        let ours = parse_f64(text).map(f64::to_bits);
        let std = text.parse::<f64>().ok().map(f64::to_bits);
        assert_eq!(ours, std, "{text:?}");
    }

    #[test]
    fn syntax_is_the_standard_librarys() {
        for text in [
            "",
            "+",
            "-",
            ".",
            "e5",
            ".e5",
            "1e",
            "1e+",
            "1e-",
            "1.5e",
            "1_000",
            " 1",
            "1 ",
            "0x10",
            "1.2.3",
            "1e5.5",
            "--1",
            "+-1",
            "in",
            "infinit",
            "infinityy",
            "nana",
            "Infinity",
            "INF",
            "-inf",
            "+NaN",
            "-nan",
            "nAn",
            "1",
            "-0",
            "+0",
            "0",
            "00",
            "0.",
            ".0",
            "1.",
            ".5",
            "-.5",
            "1e5",
            "1E+05",
            "1e-5",
            "١",
            "1e٣",
            "12e0003",
            "0e999999999999",
            "1e-999999999999",
            "1e999999999999",
        ] {
            same(text);
        }
    }

    #[test]
    fn hard_cases_round_as_the_standard_library_does() {
        for text in [
            "9007199254740993",
            "9007199254740992.5",
            "9007199254740993.0000000000000000000000000000001",
            "2.2250738585072011e-308",
            "2.2250738585072012e-308",
            "2.2250738585072014e-308",
            "4.9406564584124654e-324",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "2.47032822920623272088284396434110686182529901307162382212792841250337753635104375932649918180817996189898282347722858865463328355177969898199387398005390939063150356595155702263922908583924491051844359318028499365361525003193704576782492193656236698636584807570015857692699037063119282795585513329278343384093519780155312465972635795746227664652728272200563740064854999770965994704540208281662262378573934507363390079677619305775067401763246736009689513405355374585166611342237666786041621596804619144672918403005300575308490487653917113865916462395249126236538818796362393732804238910186723484976682350898633885879256283027559956575244555072551893136908362547791869486679949683240497058210285131854513962138377228261454376934125320985913276672363281255e-324",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792",
            "1e23",
            "8.533e-309",
            "0.1",
            "0.3",
            "123456789012345678901234567890",
            "1.00000000000000011102230246251565404236316680908203125",
            "1.00000000000000011102230246251565404236316680908203124",
            "1.00000000000000011102230246251565404236316680908203126",
            "7.2057594037927933e16",
            "5e-324",
            "1e-400",
            "1e310",
        ] {
            same(text);
            same(&format!("-{text}"));
        }
    }

    #[test]
    fn exact_midpoints_round_to_even() {
        // (2m + 1) × 2^(k − 1) for 53-bit m: halfway between m × 2^k and (m + 1) × 2^k, written
        // out exactly: as an integer for k ≥ 1, as (2m + 1) × 5^j / 10^j for k = 1 − j ≤ 0.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let m = (1u128 << 52) | u128::from(seed >> 12);
            let odd = 2 * m + 1;
            let up = (seed % 60) as u32;
            same(&(odd << up).to_string());
            let j = (seed % 26) as u32;
            let digits = (odd * 5u128.pow(j)).to_string();
            same(&format!("{digits}e-{j}"));
        }
    }

    #[test]
    fn random_text_reads_as_the_standard_library_reads_it() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..100_000 {
            let digits = match next() % 10 {
                0 => 800 + next() % 200,
                1..=3 => 17 + next() % 30,
                _ => 1 + next() % 18,
            };
            let mut text = String::new();
            if next() % 4 == 0 {
                text.push(if next() % 2 == 0 { '-' } else { '+' });
            }
            let point = next() % (digits + 2);
            for i in 0..digits {
                if i == point {
                    text.push('.');
                }
                let digit = if next() % 5 == 0 { 0 } else { next() % 10 };
                text.push(char::from(b'0' + digit as u8));
            }
            if next() % 2 == 0 {
                text.push('e');
                text.push_str(&(next() % 800).to_string());
                if next() % 2 == 0 {
                    text.insert(text.len() - 1, '-');
                }
            }
            if next() % 20 == 0 {
                let junk = ['.', 'e', '-', '+', ' ', '_', 'x', '0'];
                let at = (next() as usize) % (text.len() + 1);
                text.insert(at, junk[(next() % 8) as usize]);
            }
            same(&text);
        }
    }
}
