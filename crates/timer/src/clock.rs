//! Time as the data path sees it: an [`Instant`] on an engine's monotonic clock and a
//! [`Duration`] between two, both whole nanoseconds in a `u64` (584 years), so arithmetic on
//! the hot path is one integer operation and units are converted only where a protocol asks
//! for one (TCP timestamps in milliseconds, the timer wheel's millisecond ticks).
//!
//! The clock's epoch is the caller's: the engine uses `CLOCK_MONOTONIC`, the simulator and the
//! scripted tests start at zero. Nothing here reads a clock, so sans-IO code stays sans-IO.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

/// A point in time, in nanoseconds since the clock's epoch.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of time, in nanoseconds.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;

/// The unit conversions both types share: whole steps, saturating at the extremes.
macro_rules! units {
    ($t:ident, $what:literal) => {
        impl $t {
            #[doc = concat!("`ns` nanoseconds", $what, ".")]
            pub const fn from_nanos(ns: u64) -> $t {
                $t(ns)
            }

            #[doc = concat!("`us` microseconds", $what, ".")]
            pub const fn from_micros(us: u64) -> $t {
                $t(us.saturating_mul(NS_PER_US))
            }

            #[doc = concat!("`ms` milliseconds", $what, ".")]
            pub const fn from_millis(ms: u64) -> $t {
                $t(ms.saturating_mul(NS_PER_MS))
            }

            #[doc = concat!("Nanoseconds", $what, ".")]
            pub const fn as_nanos(self) -> u64 {
                self.0
            }

            #[doc = concat!("Whole microseconds", $what, ".")]
            pub const fn as_micros(self) -> u64 {
                self.0 / NS_PER_US
            }

            #[doc = concat!("Whole milliseconds", $what, ".")]
            pub const fn as_millis(self) -> u64 {
                self.0 / NS_PER_MS
            }
        }
    };
}

units!(Instant, " after the epoch");
units!(Duration, "");

impl Instant {
    /// The clock's epoch.
    pub const ZERO: Instant = Instant(0);

    /// The time from `earlier` to this instant, zero if `earlier` is later.
    pub const fn since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// This instant moved back by `d`, stopping at the epoch.
    pub const fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
}

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest span: a deadline this far away never comes.
    pub const MAX: Duration = Duration(u64::MAX);

    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s.saturating_mul(NS_PER_S))
    }

    /// Seconds, with the fraction.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }

    /// The difference, zero if `other` is longer.
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }

    /// `n` times this span, at most [`Duration::MAX`].
    pub const fn saturating_mul(self, n: u64) -> Duration {
        Duration(self.0.saturating_mul(n))
    }

    /// How far apart two spans are.
    pub const fn abs_diff(self, other: Duration) -> Duration {
        Duration(self.0.abs_diff(other.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        // Saturating: a deadline "never" (Duration::MAX) must not wrap into the past.
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0 - d.0)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        Duration(self.0 - earlier.0)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0 - d.0)
    }
}

impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, n: u64) -> Duration {
        Duration(self.0 * n)
    }
}

impl Div<u64> for Duration {
    type Output = Duration;
    fn div(self, n: u64) -> Duration {
        Duration(self.0 / n)
    }
}

impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Duration {
        Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> std::time::Duration {
        std::time::Duration::from_nanos(d.0)
    }
}

impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&std::time::Duration::from(*self), f)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{:?}", Duration(self.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_by_whole_steps() {
        let t = Instant::from_nanos(3_999_999_999);
        assert_eq!((t.as_micros(), t.as_millis()), (3_999_999, 3_999));
        assert_eq!(Duration::from_secs(2), Duration::from_millis(2_000));
        assert_eq!(Duration::from_millis(3).as_micros(), 3_000);
        assert_eq!(Instant::from_millis(5) + Duration::from_micros(250), Instant::from_micros(5_250));
    }

    #[test]
    fn never_wraps_into_the_past() {
        let t = Instant::ZERO + Duration::from_secs(10);
        assert_eq!(t + Duration::MAX, Instant::from_nanos(u64::MAX));
        assert_eq!(Instant::ZERO.since(t), Duration::ZERO);
        assert_eq!(t.since(Instant::ZERO), Duration::from_secs(10));
        assert_eq!(Instant::from_millis(1).saturating_sub(Duration::from_secs(1)), Instant::ZERO);
    }

    #[test]
    fn converts_with_std() {
        let d: Duration = std::time::Duration::from_millis(1500).into();
        assert_eq!(d, Duration::from_millis(1500));
        assert_eq!(std::time::Duration::from(d), std::time::Duration::from_millis(1500));
        assert_eq!(format!("{d}"), "1.5s");
    }
}
