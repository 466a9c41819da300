//! Parameter counts as people write them: `8B`, `1.1B`, `135M`, `8e9`.

use crate::units::parse_f64;

/// Reads a parameter count: `8B`, `1.1B`, `135M`, `8e9`, `70b`, `500k`, `8000000000`.
pub fn parse_param_count(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let (number, scale) = match trimmed.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('t') => (&trimmed[..trimmed.len() - 1], 1e12),
        Some('b') => (&trimmed[..trimmed.len() - 1], 1e9),
        Some('m') => (&trimmed[..trimmed.len() - 1], 1e6),
        Some('k') => (&trimmed[..trimmed.len() - 1], 1e3),
        _ => (trimmed, 1.0),
    };
    let value = parse_f64(number.trim()).ok_or_else(|| {
        format!("`{trimmed}` is not a parameter count; write e.g. 8B, 1.1B, 135M or 8e9")
    })?;
    let params = value * scale;
    if !params.is_finite() || params < 1.0 {
        return Err(format!("`{trimmed}` must be at least 1 parameter"));
    }
    if params > 1e14 {
        return Err(format!(
            "`{trimmed}` is over 100T parameters, beyond what this planner models"
        ));
    }
    Ok(params.round())
}

/// A parameter count as a list shows it, rounded: `30.53B`, `1.03T`, `135M`.
pub fn params_label(params: f64) -> String {
    if params >= 1e12 {
        format!("{:.2}T", params / 1e12)
    } else if params >= 1e9 {
        format!("{:.2}B", params / 1e9)
    } else {
        format!("{:.0}M", params / 1e6)
    }
}

/// Writes a parameter count compactly, exactly as [`parse_param_count`] will read it back: in
/// the unit of its magnitude with at most three decimals (`8B`, `1.1B`, `135M`), else as the
/// whole number (`6750150656`, not `6750150.656K`).
pub fn format_param_count(params: f64) -> String {
    for (scale, suffix) in [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")] {
        let scaled = params / scale;
        if (1.0..1000.0).contains(&scaled)
            && (scaled * 1000.0).fract() == 0.0
            && (scaled * 1000.0).round() / 1000.0 * scale == params
        {
            return format!("{scaled}{suffix}");
        }
    }
    format!("{params}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_to_two_decimals_in_b_or_t_and_whole_m() {
        assert_eq!(params_label(30.532e9), "30.53B");
        assert_eq!(params_label(1.0265e12), "1.03T");
        assert_eq!(params_label(135.4e6), "135M");
    }

    #[test]
    fn param_counts_parse_like_people_write_them() {
        assert_eq!(parse_param_count("8B").unwrap(), 8e9);
        assert_eq!(parse_param_count("1.1B").unwrap(), 1.1e9);
        assert_eq!(parse_param_count("135M").unwrap(), 135e6);
        assert_eq!(parse_param_count("8e9").unwrap(), 8e9);
        for bad in ["", "B", "-3B", "NaNB", "1e30", "eight"] {
            assert!(parse_param_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn param_counts_format_in_their_magnitudes_unit_or_whole() {
        assert_eq!(format_param_count(8e9), "8B");
        assert_eq!(format_param_count(1.1e9), "1.1B");
        assert_eq!(format_param_count(500e3), "500K");
        assert_eq!(format_param_count(6_750_150_656.0), "6750150656");
    }

    #[test]
    fn param_counts_format_round_trip() {
        for p in [8e9, 1.1e9, 135e6, 8_030_261_248.0, 7.0, 1e12] {
            assert_eq!(
                parse_param_count(&format_param_count(p)).unwrap(),
                p,
                "{}",
                format_param_count(p)
            );
        }
    }
}
