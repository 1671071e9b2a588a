//! An application's own counters, published with the engine's a few times a second for the
//! metrics endpoint (`--metrics`): each a sample of a family named by Prometheus conventions
//! (`sirocco_<server>_<what>_total` for counters), with at most one label.

/// Counter (only goes up) or gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (Prometheus `counter`; its name ends in `_total`).
    Counter,
    /// Goes up and down.
    Gauge,
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The family's name.
    pub name: &'static str,
    /// What it counts (the `# HELP` line).
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// One label (name, value), if any.
    pub label: Option<(&'static str, &'static str)>,
    /// The value.
    pub value: u64,
}

/// The samples of one engine's application. Cleared and refilled at each publication; the
/// vector keeps its room, so publishing does not allocate once it has grown.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<Sample>);

impl Samples {
    /// A counter without labels.
    pub fn counter(&mut self, name: &'static str, help: &'static str, value: u64) {
        self.0.push(Sample { name, help, kind: Kind::Counter, label: None, value });
    }

    /// A counter with one label.
    pub fn counter_with(
        &mut self,
        name: &'static str,
        help: &'static str,
        label: (&'static str, &'static str),
        value: u64,
    ) {
        self.0.push(Sample { name, help, kind: Kind::Counter, label: Some(label), value });
    }

    /// A gauge without labels.
    pub fn gauge(&mut self, name: &'static str, help: &'static str, value: u64) {
        self.0.push(Sample { name, help, kind: Kind::Gauge, label: None, value });
    }

    /// The samples.
    pub fn iter(&self) -> impl Iterator<Item = &Sample> {
        self.0.iter()
    }

    /// Empties it, keeping its room.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}
