//! What the delivery-rate estimator (draft-cheng-iccrg-delivery-rate-estimation) tells BBR
//! on each ACK.

use timer::Duration;

/// One rate sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Bytes per second delivered over the sample's interval.
    pub rate: f64,
    /// The round trip of the sampled segment.
    pub rtt: Duration,
    /// Delivered bytes when the sampled segment was sent (to count round trips).
    pub prior_delivered: u64,
    /// The sender had nothing to send when the sampled segment left: the rate is a lower
    /// bound on the path's, not a measure of it.
    pub app_limited: bool,
}
