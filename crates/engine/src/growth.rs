//! Steady growth of a GPU's used memory across samples: what the OOM guide ("If usage growing
//! linearly, check for memory leaks"; "VRAM usage should stabilize by step 100. If
//! still growing, investigate memory leak") calls a leak, and how long the memory lasts at that
//! rate. `vramfit watch` and `vramfit run` feed it their last readings; it does no IO.
//!
//! The rate is the ordinary least-squares slope of used bytes over sample time (every reading
//! counts, and uneven spacing is weighed by time), not the last reading minus the first, which one
//! noisy end would swing.
//!
//! **When growth is steady.** All of:
//! - at least [`MIN_SAMPLES`] readings spanning at least [`MIN_SPAN_MS`]: a shorter stretch is one
//!   allocation burst (weights loading, the first step's workspaces, a cache warming), whose rate
//!   says nothing about where memory is heading, while 10 s holds several steps of any usual
//!   training or decoding loop;
//! - in *each half* of the window on its own, the slope is positive and at least [`MIN_T`]
//!   standard errors above zero (the t statistic of the slope, from the residuals of that half's
//!   fit). A leak keeps growing, so both halves grow. A single allocation (one step up) lies in
//!   one half, or between them, and leaves at least one half flat; a flat, noisy series passes one
//!   half's test by chance about once in 500 (one-sided, t ≥ 3 with tens of degrees of freedom)
//!   and both far more rarely, though NVML readings are not independent samples, which is why
//!   the rule asks both halves rather than trusting one fit's significance over the whole window;
//!   and growth that has stopped (a plateau filling the second half) is not reported as going on.
//!
//! The rate reported is the whole window's slope.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// The fewest readings a window is judged on: 8 per half, so each half's slope has 6 degrees
/// of freedom for its standard error.
pub const MIN_SAMPLES: usize = 16;

/// The shortest time a window must span, in milliseconds.
pub const MIN_SPAN_MS: u64 = 10_000;

/// How many standard errors above zero each half's slope must be.
pub const MIN_T: f64 = 3.0;

/// The window `watch` and `run` keep when not told otherwise: a minute at `watch`'s 500 ms,
/// 24 s at `run`'s 200 ms.
pub const DEFAULT_WINDOW: usize = 120;

/// The largest window taken: a day of readings at one a second, 16 bytes each.
pub const MAX_WINDOW: usize = 86_400;

const MS_PER_MINUTE: f64 = 60_000.0;

/// One reading of a GPU's used memory, at a time since the start of watching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub elapsed_ms: u64,
    pub used_bytes: u64,
}

/// Steady growth found over a window of readings.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Growth {
    /// The least-squares slope of used memory over time, in bytes per minute.
    pub bytes_per_minute: f64,
    /// How many readings the slope was fitted to.
    pub samples: u64,
    /// The time from the window's first reading to its last.
    pub span_ms: u64,
    /// Used memory on the fitted line at the window's last reading.
    pub fitted_used_bytes: u64,
    /// The critical level on this GPU, when known.
    pub critical_bytes: Option<u64>,
    /// How long from the last reading until the fitted line reaches `critical_bytes` at this
    /// rate; 0 when it is there already, `None` when the level is unknown.
    pub time_to_critical_ms: Option<u64>,
}

/// The least-squares line through `(x, y)` points and its slope's standard error.
struct Fit {
    slope: f64,
    /// The slope's standard error; 0 when every point lies on the line.
    standard_error: f64,
    mean_x: f64,
    mean_y: f64,
}

fn fit(points: &[(f64, f64)]) -> Option<Fit> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = sxy / sxx;
    let residuals: f64 = points
        .iter()
        .map(|p| (p.1 - mean_y - slope * (p.0 - mean_x)).powi(2))
        .sum();
    let standard_error = (residuals / (n - 2.0) / sxx).sqrt();
    Some(Fit {
        slope,
        standard_error,
        mean_x,
        mean_y,
    })
}

impl Fit {
    /// Positive and at least [`MIN_T`] standard errors above zero.
    fn grows_significantly(&self) -> bool {
        self.slope > 0.0 && self.slope >= MIN_T * self.standard_error
    }
}

/// The steady growth over `window` (oldest reading first), or `None` when there is none by the
/// rule in the module's documentation. `critical_bytes` is the level to time.
pub fn steady_growth(window: &[Reading], critical_bytes: Option<u64>) -> Option<Growth> {
    let (first, last) = (window.first()?, window.last()?);
    let span_ms = last.elapsed_ms.checked_sub(first.elapsed_ms)?;
    if window.len() < MIN_SAMPLES || span_ms < MIN_SPAN_MS {
        return None;
    }
    // Minutes since the first reading and bytes above it keep the sums' magnitudes small.
    let points: Vec<(f64, f64)> = window
        .iter()
        .map(|r| {
            (
                r.elapsed_ms.saturating_sub(first.elapsed_ms) as f64 / MS_PER_MINUTE,
                r.used_bytes as f64 - first.used_bytes as f64,
            )
        })
        .collect();
    let (early, late) = points.split_at(points.len() / 2);
    if !(fit(early)?.grows_significantly() && fit(late)?.grows_significantly()) {
        return None;
    }
    let whole = fit(&points)?;
    let end_minutes = span_ms as f64 / MS_PER_MINUTE;
    let fitted_end =
        first.used_bytes as f64 + whole.mean_y + whole.slope * (end_minutes - whole.mean_x);
    let fitted_used_bytes = fitted_end.max(0.0).round() as u64;
    let time_to_critical_ms = critical_bytes.map(|limit| {
        let minutes = (limit as f64 - fitted_end).max(0.0) / whole.slope;
        // `as` saturates: a rate that would take longer than u64 milliseconds reads as that.
        (minutes * MS_PER_MINUTE).round() as u64
    });
    Some(Growth {
        bytes_per_minute: whole.slope,
        samples: window.len() as u64,
        span_ms,
        fitted_used_bytes,
        critical_bytes,
        time_to_critical_ms,
    })
}

/// The last `capacity` readings of one GPU, oldest first.
#[derive(Debug, Clone)]
pub struct Window {
    capacity: usize,
    readings: VecDeque<Reading>,
}

impl Window {
    /// A window of at most `capacity` readings (at least [`MIN_SAMPLES`], at most [`MAX_WINDOW`]).
    pub fn new(capacity: usize) -> Window {
        let capacity = capacity.clamp(MIN_SAMPLES, MAX_WINDOW);
        Window {
            capacity,
            readings: VecDeque::with_capacity(capacity),
        }
    }

    pub fn push(&mut self, reading: Reading) {
        if self.readings.len() == self.capacity {
            self.readings.pop_front();
        }
        self.readings.push_back(reading);
    }

    /// [`steady_growth`] over the readings held.
    pub fn growth(&mut self, critical_bytes: Option<u64>) -> Option<Growth> {
        steady_growth(self.readings.make_contiguous(), critical_bytes)
    }
}

#[cfg(test)]
mod tests {
    //! Every series here is a synthetic test input, made up to have a known shape; none is a
    //! measurement.

    use super::*;
    use crate::units::MIB;

    /// A deterministic noise source (a 64-bit linear congruential generator, Knuth's MMIX
    /// constants) giving values in ±`amplitude`.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self, amplitude: f64) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
            (unit * 2.0 - 1.0) * amplitude
        }
    }

    /// `n` readings every `interval_ms`, used memory given by `shape` (in MiB) at each time in
    /// minutes, plus `noise_mib` of noise.
    fn series(
        n: u64,
        interval_ms: u64,
        noise_mib: f64,
        shape: impl Fn(f64) -> f64,
    ) -> Vec<Reading> {
        let mut noise = Noise(42);
        (0..n)
            .map(|i| {
                let elapsed_ms = i * interval_ms;
                let mib = shape(elapsed_ms as f64 / MS_PER_MINUTE) + noise.next(noise_mib);
                Reading {
                    elapsed_ms,
                    used_bytes: (mib * MIB as f64).round() as u64,
                }
            })
            .collect()
    }

    fn mib_per_minute(g: &Growth) -> f64 {
        g.bytes_per_minute / MIB as f64
    }

    #[test]
    fn a_flat_noisy_series_says_nothing() {
        for seed_shift in 0..20u64 {
            let mut noise = Noise(seed_shift);
            let flat: Vec<Reading> = (0..120)
                .map(|i| Reading {
                    elapsed_ms: i * 500,
                    used_bytes: ((30_000.0 + noise.next(200.0)) * MIB as f64) as u64,
                })
                .collect();
            assert_eq!(steady_growth(&flat, None), None, "seed {seed_shift}");
        }
        let constant = series(120, 500, 0.0, |_| 30_000.0);
        assert_eq!(steady_growth(&constant, None), None);
    }

    #[test]
    fn a_linear_ramp_gives_its_slope() {
        let exact = series(120, 500, 0.0, |t| 10_000.0 + 600.0 * t);
        let g = steady_growth(&exact, Some(20_000 * MIB)).expect("a ramp grows");
        assert!((mib_per_minute(&g) - 600.0).abs() < 1e-6, "{g:?}");
        assert_eq!(g.samples, 120);
        assert_eq!(g.span_ms, 59_500);
        // 10000 MiB + 600 MiB/min × 59.5 s = 10595 MiB; 9405 MiB more at 600 MiB/min.
        assert_eq!(g.fitted_used_bytes, 10_595 * MIB);
        assert_eq!(g.time_to_critical_ms, Some(940_500));

        let noisy = series(120, 500, 150.0, |t| 10_000.0 + 600.0 * t);
        let g = steady_growth(&noisy, None).expect("a noisy ramp grows");
        // Uniform noise of ±150 MiB has σ = 87 MiB; over 120 readings in 59.5 s the slope's
        // standard error is 87 / √Σ(t − t̄)² ≈ 28 MiB/min, so three of them is 83 MiB/min.
        assert!((mib_per_minute(&g) - 600.0).abs() < 83.0, "{g:?}");
        assert_eq!(g.time_to_critical_ms, None);
    }

    #[test]
    fn uneven_sampling_is_weighed_by_time() {
        // Readings bunched at the start and sparse later, as after a stall, on a line of
        // 600 MiB/min: weighed by index rather than time, the fit would bend.
        let times = (0..40)
            .map(|i| i * 100)
            .chain((1..=30).map(|i| 4_000 + i * 1_000));
        let readings: Vec<Reading> = times
            .map(|ms| Reading {
                elapsed_ms: ms,
                used_bytes: 5_000 * MIB + ms * MIB / 100,
            })
            .collect();
        let g = steady_growth(&readings, None).expect("grows");
        assert!((mib_per_minute(&g) - 600.0).abs() < 1e-6, "{g:?}");
        assert_eq!(g.span_ms, 34_000);
    }

    #[test]
    fn a_single_step_is_not_a_leak() {
        for step_at in [0.1, 0.25, 0.5, 0.6, 0.75, 0.9] {
            let step = series(120, 500, 20.0, |t| {
                if t >= step_at {
                    12_000.0
                } else {
                    10_000.0
                }
            });
            assert_eq!(steady_growth(&step, None), None, "step at {step_at} min");
        }
    }

    #[test]
    fn growth_that_stopped_is_not_going_on() {
        let plateau = series(120, 500, 20.0, |t| 10_000.0 + 2_000.0 * t.min(0.45));
        assert_eq!(steady_growth(&plateau, None), None);
    }

    #[test]
    fn many_small_steps_are_growth() {
        // 100 MiB every 5 s: a leak per step or per batch.
        let stairs = series(120, 500, 0.0, |t| 10_000.0 + 100.0 * (t * 12.0).floor());
        let g = steady_growth(&stairs, None).expect("stairs grow");
        assert!((mib_per_minute(&g) - 1_200.0).abs() < 60.0, "{g:?}");
    }

    #[test]
    fn shrinking_memory_is_not_growth() {
        let falling = series(120, 500, 0.0, |t| 20_000.0 - 600.0 * t);
        assert_eq!(steady_growth(&falling, None), None);
    }

    #[test]
    fn too_short_or_too_few_says_nothing() {
        // A ramp over 120 readings 50 ms apart spans 6 s: a burst, not a trend.
        let fast = series(120, 50, 0.0, |t| 10_000.0 + 6_000.0 * t);
        assert_eq!(steady_growth(&fast, None), None);
        let few = series(15, 1_000, 0.0, |t| 10_000.0 + 600.0 * t);
        assert_eq!(steady_growth(&few, None), None);
        assert_eq!(steady_growth(&few[..0], None), None);
        let enough = series(16, 1_000, 0.0, |t| 10_000.0 + 600.0 * t);
        assert!(steady_growth(&enough, None).is_some());
    }

    #[test]
    fn already_past_the_critical_level_is_zero_time() {
        let exact = series(120, 500, 0.0, |t| 10_000.0 + 600.0 * t);
        let g = steady_growth(&exact, Some(9_000 * MIB)).expect("grows");
        assert_eq!(g.time_to_critical_ms, Some(0));
    }

    #[test]
    fn the_window_keeps_the_last_readings() {
        let mut window = Window::new(20);
        // A step long ago, then a steady ramp: only the ramp is in the window.
        for reading in series(100, 1_000, 0.0, |t| {
            if t < 1.0 {
                1_000.0
            } else {
                40_000.0 + 60.0 * t
            }
        }) {
            window.push(reading);
        }
        let g = window.growth(None).expect("the ramp grows");
        assert_eq!(g.samples, 20);
        assert!((mib_per_minute(&g) - 60.0).abs() < 1e-6, "{g:?}");
        assert_eq!(Window::new(1).capacity, MIN_SAMPLES);
        assert_eq!(Window::new(usize::MAX).capacity, MAX_WINDOW);
    }
}
