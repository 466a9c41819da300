//! Byte counts and their honest labels: GB means 10^9 bytes, GiB means 2^30, MiB means 2^20.
//!
//! The one set of unit constants the engine, the nvidia-smi parsers and the CLI share, the one
//! size parser, the one decimal reader ([`parse_f64`]) and CSV line splitter ([`csv_fields`]) the
//! parsers share, and [`Bytes`]. The engine's formulas
//! compute in `f64` (so 10T parameters times a 1M-token sequence cannot overflow) and land in
//! [`Bytes`], whose conversion from `f64` saturates instead of wrapping.

mod csv;
mod decimal;

pub use csv::csv_fields;
pub use decimal::parse_f64;
use serde::{Deserialize, Serialize};
use std::fmt;

/// 10^3 bytes.
pub const KB: u64 = 1_000;
/// 10^6 bytes.
pub const MB: u64 = 1_000_000;
/// 10^9 bytes: what drive makers, the chapter-62 lesson and `max_memory_allocated()/1e9` call a GB.
pub const GB: u64 = 1_000_000_000;
/// 10^12 bytes.
pub const TB: u64 = 1_000_000_000_000;
/// 2^10 bytes.
pub const KIB: u64 = 1 << 10;
/// 2^20 bytes: the unit nvidia-smi prints.
pub const MIB: u64 = 1 << 20;
/// 2^30 bytes.
pub const GIB: u64 = 1 << 30;
/// 2^40 bytes.
pub const TIB: u64 = 1 << 40;

/// A non-negative whole number of bytes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);

    /// Rounds to the nearest byte. NaN and negatives become 0, and values past `u64::MAX` saturate:
    /// Rust's float-to-int `as` cast is saturating by definition, so this cannot panic.
    pub fn from_f64(bytes: f64) -> Bytes {
        if bytes.is_nan() || bytes <= 0.0 {
            Bytes(0)
        } else {
            Bytes(bytes.round() as u64)
        }
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }

    pub fn saturating_add(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(other.0))
    }

    pub fn saturating_sub(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(other.0))
    }

    pub fn gb(self) -> f64 {
        self.as_f64() / GB as f64
    }

    pub fn gib(self) -> f64 {
        self.as_f64() / GIB as f64
    }

    pub fn mib(self) -> f64 {
        self.as_f64() / MIB as f64
    }

    /// Formats in the chosen unit family with a label that says which one it is.
    pub fn display(self, units: Units) -> String {
        match units {
            Units::Gb => format_scaled(self.as_f64(), GB, "GB", MB, "MB"),
            Units::Gib => format_scaled(self.as_f64(), GIB, "GiB", MIB, "MiB"),
        }
    }
}

impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes::ZERO, Bytes::saturating_add)
    }
}

fn format_scaled(bytes: f64, big: u64, big_label: &str, small: u64, small_label: &str) -> String {
    let (big, small) = (big as f64, small as f64);
    if bytes >= big / 10.0 {
        format!("{:.2} {big_label}", bytes / big)
    } else {
        format!("{:.1} {small_label}", bytes / small)
    }
}

/// Which unit family the results are shown in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Units {
    /// Decimal: GB = 10^9 bytes (the lesson's unit).
    #[default]
    Gb,
    /// Binary: GiB = 2^30 bytes (what nvidia-smi and PyTorch's allocator count in).
    Gib,
}

/// Why a size could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeError(pub String);

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The rule shown next to every size field.
pub const SIZE_RULE: &str =
    "a bare number is GiB (a \"24 GB\" card is 24 GiB = 24576 MiB); or write 24GiB, 16376MiB, 512MB or 24GB (10^9 bytes)";

/// Reads a memory size: `24`, `20.5`, `24GiB`, `16376MiB`, `24GB`, `512 MB`, `1.5TiB`, `0`.
///
/// A bare number means GiB because GPU makers' "24 GB" is 24576 MiB, which is how the VRAM auto-config guide reads
/// `--vram 24`. `GB`/`MB`/`TB` are decimal; `GiB`/`MiB`/`KiB`/`TiB` are binary; `B` is bytes.
pub fn parse_size(text: &str) -> Result<Bytes, SizeError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(SizeError("empty size; ".to_string() + SIZE_RULE));
    }
    let split = trimmed
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(trimmed.len());
    let (number_text, unit_text) = trimmed.split_at(split);
    let number = parse_f64(number_text.trim())
        .ok_or_else(|| SizeError(format!("`{trimmed}` is not a size; {SIZE_RULE}")))?;
    if !number.is_finite() || number < 0.0 {
        return Err(SizeError(format!(
            "`{trimmed}` must be a finite, non-negative size"
        )));
    }
    let scale = match unit_text.trim().to_ascii_lowercase().as_str() {
        "" | "g" | "gib" => GIB,
        "gb" => GB,
        "m" | "mib" => MIB,
        "mb" => MB,
        "k" | "kib" => KIB,
        "kb" => KB,
        "t" | "tib" => TIB,
        "tb" => TB,
        "b" => 1,
        other => {
            return Err(SizeError(format!(
                "unknown unit `{other}` in `{trimmed}`; {SIZE_RULE}"
            )))
        }
    };
    // A whole number of bytes is read as an integer: above 2^53 an f64 rounds it, and
    // `format_size_exact` writes such counts as `<n>B`, which must read back exactly.
    let exact = (scale == 1)
        .then(|| number_text.trim().parse::<u64>().ok())
        .flatten();
    let bytes = number * scale as f64;
    if bytes > 1e18 || exact.is_some_and(|n| n > 1_000_000_000_000_000_000) {
        return Err(SizeError(format!(
            "`{trimmed}` is larger than any GPU memory this planner handles (1 EB)"
        )));
    }
    Ok(exact.map_or_else(|| Bytes::from_f64(bytes), Bytes))
}

/// A count with its thousands grouped for people: 16384 → "16,384".
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Writes a size so that [`parse_size`] reads back exactly the same byte count.
pub fn format_size_exact(bytes: Bytes) -> String {
    let value = bytes.0;
    if value == 0 {
        "0".to_string()
    } else if value.is_multiple_of(GIB) {
        format!("{}GiB", value / GIB)
    } else if value.is_multiple_of(MIB) {
        format!("{}MiB", value / MIB)
    } else if value.is_multiple_of(MB) {
        format!("{}MB", value / MB)
    } else {
        format!("{value}B")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_grouped() {
        use super::group_thousands;
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1_000), "1,000");
        assert_eq!(group_thousands(16_384), "16,384");
        assert_eq!(group_thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    use super::*;

    #[test]
    fn bare_number_is_gib_as_the_auto_config_guide_reads_vram_24() {
        assert_eq!(parse_size("24").unwrap(), Bytes(24 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("20.5").unwrap(), Bytes(22_011_707_392));
    }

    #[test]
    fn units_are_honest() {
        assert_eq!(parse_size("24GB").unwrap(), Bytes(24_000_000_000));
        assert_eq!(parse_size("16376MiB").unwrap(), Bytes(16376 * 1_048_576));
        assert_eq!(parse_size("24 GiB").unwrap(), Bytes(24 << 30));
        assert_eq!(parse_size("512mb").unwrap(), Bytes(512_000_000));
        assert_eq!(parse_size("0").unwrap(), Bytes(0));
    }

    #[test]
    fn bad_sizes_explain_themselves() {
        for bad in ["", "abc", "-1", "NaN", "inf", "12 parsecs", "1e30", "1e400"] {
            let err = parse_size(bad).unwrap_err();
            assert!(!err.0.is_empty(), "{bad}");
        }
    }

    #[test]
    fn exact_format_round_trips() {
        for bytes in [
            0,
            1,
            1 << 20,
            24 << 30,
            16376 * 1_048_576,
            512_000_000,
            123_456_789,
        ] {
            let text = format_size_exact(Bytes(bytes));
            assert_eq!(parse_size(&text).unwrap(), Bytes(bytes), "{text}");
        }
    }

    #[test]
    fn from_f64_saturates_and_clamps() {
        assert_eq!(Bytes::from_f64(f64::NAN), Bytes(0));
        assert_eq!(Bytes::from_f64(-5.0), Bytes(0));
        assert_eq!(Bytes::from_f64(1e30), Bytes(u64::MAX));
        assert_eq!(Bytes::from_f64(f64::INFINITY), Bytes(u64::MAX));
    }

    #[test]
    fn display_labels_match_the_divisor() {
        assert_eq!(Bytes(16_000_000_000).display(Units::Gb), "16.00 GB");
        assert_eq!(Bytes(16 << 30).display(Units::Gib), "16.00 GiB");
        assert_eq!(Bytes(16_777_216).display(Units::Gb), "16.8 MB");
        assert_eq!(Bytes(16_777_216).display(Units::Gib), "16.0 MiB");
    }
}
