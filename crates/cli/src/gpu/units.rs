//! The quantities the GPU commands take on the command line and print: durations (`500ms`,
//! `10m`), sizes (`14000MiB`, `10GiB`), thresholds (`85%` or a size), MiB figures and RFC 3339
//! UTC timestamps.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use vramfit_engine::units::MIB;

/// The longest `--duration` or `--interval` taken: a year. Anything longer is a typo, and refusing
/// it here keeps every `Instant + Duration` in the commands far from overflowing.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// Reads `500ms`, `2s`, `1.5s`, `10m`, `1h`, up to [`MAX_DURATION`].
///
/// A bare number is refused rather than guessed: `--interval 500` could mean either unit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{text}` has no unit; write e.g. 500ms, 2s or 10m"))?;
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. 500ms, 2s or 10m"))?;
    let seconds_per_unit = match unit.trim() {
        "ms" => 0.001,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "`{other}` in `{text}` is not a time unit; use ms, s, m or h"
            ))
        }
    };
    let seconds = value * seconds_per_unit;
    if seconds <= 0.0 {
        return Err(format!("`{text}` must be longer than zero"));
    }
    let too_long = || format!("`{text}` is too long: at most 8784h (a year)");
    let duration = Duration::try_from_secs_f64(seconds).map_err(|_| too_long())?;
    if duration > MAX_DURATION {
        return Err(too_long());
    }
    Ok(duration)
}

/// Reads a memory size with its unit (`14000MiB`, `10GiB`, `16GB`) through the engine's one size
/// parser. A bare number is refused here: next to percentages it would be ambiguous.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if !t.chars().any(|c| c.is_ascii_alphabetic()) {
        return Err(format!(
            "`{text}` has no unit; write e.g. 14000MiB or 10GiB"
        ));
    }
    let bytes = vramfit_engine::units::parse_size(t).map_err(|e| e.0)?;
    if bytes.0 == 0 {
        return Err(format!("`{text}` must be more than 0"));
    }
    Ok(bytes.0)
}

/// A memory level to warn at: a share of the GPU's total, or a fixed size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Percent(f64),
    Bytes(u64),
}

impl Threshold {
    /// Reads `85%`, `85.5%`, `14000MiB` or `10GiB`.
    pub fn parse(text: &str) -> Result<Threshold, String> {
        let t = text.trim();
        match t.strip_suffix('%') {
            Some(number) => {
                let pct: f64 = number
                    .trim()
                    .parse()
                    .map_err(|_| format!("`{text}` is not a percentage; write e.g. 85%"))?;
                if pct > 0.0 && pct <= 100.0 {
                    Ok(Threshold::Percent(pct))
                } else {
                    Err(format!("`{text}` must be above 0% and at most 100%"))
                }
            }
            None => parse_size(t).map(Threshold::Bytes).map_err(|e| {
                format!(
                    "{e} (a threshold is a percentage of the GPU's memory, e.g. 85%, or a size)"
                )
            }),
        }
    }

    /// The used-memory figure at and above which a GPU of `total` bytes is over this threshold.
    pub fn limit_bytes(&self, total: Option<u64>) -> Option<u64> {
        match *self {
            Threshold::Bytes(bytes) => Some(bytes),
            Threshold::Percent(pct) => total.map(|t| (t as f64 * pct / 100.0).ceil() as u64),
        }
    }

    /// `85% (13920 MiB)` for a share with its `limit` on a GPU, `14000 MiB` for a size.
    pub fn describe(&self, limit: Option<u64>) -> String {
        match (self, limit) {
            (Threshold::Percent(_), Some(limit)) => format!("{self} ({})", mib(limit)),
            _ => self.to_string(),
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Percent(pct) => write!(f, "{pct}%"),
            Threshold::Bytes(bytes) => write!(f, "{}", mib(*bytes)),
        }
    }
}

/// `8192 MiB`, rounded to the nearest MiB as nvidia-smi does.
pub fn mib(bytes: u64) -> String {
    format!("{} MiB", mib_number(bytes))
}

/// Bytes as whole MiB, rounded to the nearest.
pub fn mib_number(bytes: u64) -> u64 {
    bytes / MIB + u64::from(bytes % MIB >= MIB / 2)
}

/// `used` as a whole percentage of `total`, for status lines.
pub fn percent(used: u64, total: u64) -> Option<u64> {
    (total > 0).then(|| ((used as f64 / total as f64) * 100.0).round() as u64)
}

/// ` (50%)`: `used` as a share of `total`, or nothing when the total is unknown.
pub fn share(used: u64, total: Option<u64>) -> String {
    total
        .and_then(|total| percent(used, total))
        .map(|p| format!(" ({p}%)"))
        .unwrap_or_default()
}

/// Whole milliseconds, as the logs and documents count time; a duration past `u64` (which the
/// parser's cap on durations rules out) saturates instead of wrapping.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `1h 2m 3.4s`, `12.5s`: short enough for a summary line.
pub fn human_duration(d: Duration) -> String {
    let total = d.as_secs_f64();
    let hours = (total / 3600.0).floor();
    let minutes = ((total - hours * 3600.0) / 60.0).floor();
    let seconds = total - hours * 3600.0 - minutes * 60.0;
    match (hours > 0.0, minutes > 0.0) {
        (true, _) => format!("{hours}h {minutes}m {seconds:.1}s"),
        (false, true) => format!("{minutes}m {seconds:.1}s"),
        (false, false) => format!("{seconds:.1}s"),
    }
}

/// `2026-07-14T08:12:53.500Z`.
///
/// Computed from the Unix time so the CLI needs no date crate; a clock before 1970 prints as the
/// epoch rather than failing a measurement.
pub fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration(" 1h "), Ok(Duration::from_secs(3600)));
        for bad in ["500", "", "ms", "0s", "1.2.3s", "5 parsecs", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse_duration("500").unwrap_err().contains("no unit"));
    }

    #[test]
    fn absurd_durations_are_refused_not_overflowed() {
        // 1e19 s fits a Duration (u64 seconds) but not `Instant::now() + d`: it used to panic.
        for absurd in ["10000000000000000000s", "1e300s", "8785h", "367d"] {
            assert!(
                parse_duration(absurd).is_err(),
                "{absurd:?} should be refused"
            );
        }
        assert!(parse_duration("10000000000000000000s")
            .unwrap_err()
            .contains("too long"));
        assert_eq!(parse_duration("8784h"), Ok(MAX_DURATION));
        assert!(std::time::Instant::now()
            .checked_add(MAX_DURATION)
            .is_some());
    }

    #[test]
    fn sizes_binary_and_decimal() {
        assert_eq!(parse_size("14000MiB"), Ok(14000 * MIB));
        assert_eq!(parse_size("10GiB"), Ok(10 << 30));
        assert_eq!(parse_size("10gib"), Ok(10 << 30));
        assert_eq!(parse_size("512M"), Ok(512 * MIB));
        assert_eq!(parse_size("16GB"), Ok(16_000_000_000));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        for bad in ["14000", "10 parsecs", "0MiB", "GiB"] {
            assert!(parse_size(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn thresholds_percent_or_size() {
        assert_eq!(Threshold::parse("85%"), Ok(Threshold::Percent(85.0)));
        assert_eq!(
            Threshold::parse("14000MiB"),
            Ok(Threshold::Bytes(14000 * MIB))
        );
        assert_eq!(Threshold::parse("10GiB"), Ok(Threshold::Bytes(10 << 30)));
        assert!(Threshold::parse("0%").is_err());
        assert!(Threshold::parse("101%").is_err());
        assert!(Threshold::parse("85").unwrap_err().contains("percentage"));
        let total = Some(16376 * MIB);
        assert_eq!(
            Threshold::Percent(50.0).limit_bytes(total),
            Some(8188 * MIB)
        );
        assert_eq!(Threshold::Percent(100.0).limit_bytes(total), total);
        assert_eq!(Threshold::Percent(50.0).limit_bytes(None), None);
        assert_eq!(Threshold::Bytes(7).limit_bytes(None), Some(7));
        assert_eq!(Threshold::Percent(85.0).to_string(), "85%");
        assert_eq!(Threshold::Bytes(14000 * MIB).to_string(), "14000 MiB");
    }

    #[test]
    fn mib_rounds_to_nearest() {
        assert_eq!(mib(8192 * MIB), "8192 MiB");
        assert_eq!(mib(MIB / 2), "1 MiB");
        assert_eq!(mib(MIB / 2 - 1), "0 MiB");
        assert_eq!(percent(8192, 16384), Some(50));
        assert_eq!(percent(1, 0), None);
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(Duration::from_millis(12_500)), "12.5s");
        assert_eq!(human_duration(Duration::from_secs(600)), "10m 0.0s");
        assert_eq!(human_duration(Duration::from_secs(3723)), "1h 2m 3.0s");
    }

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_millis(951_782_400_123);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.123Z");
        let later = UNIX_EPOCH + Duration::from_secs(1_784_017_973);
        assert_eq!(rfc3339(later), "2026-07-14T08:32:53.000Z");
        let before = UNIX_EPOCH - Duration::from_secs(10);
        assert_eq!(rfc3339(before), "1970-01-01T00:00:00.000Z");
    }
}
