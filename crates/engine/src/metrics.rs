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

/// One TCP connection, for `sirocco ss`.
#[derive(Debug, Clone, Copy)]
pub struct ConnInfo {
    /// Our address and port.
    pub local: (wire::IpAddr, u16),
    /// The peer's.
    pub remote: (wire::IpAddr, u16),
    /// Its state, windows, RTT, bytes.
    pub info: tcp::Info,
}

/// A request for an engine's connections, from the control socket's thread: set `wanted`,
/// and the engine fills `answer` at its next publication and bumps its generation.
#[derive(Debug, Default)]
pub struct ConnsRequest {
    /// Asked for.
    pub wanted: std::sync::atomic::AtomicBool,
    /// The generation (answers given so far) and the connections of the last.
    pub answer: std::sync::Mutex<(u64, Vec<ConnInfo>)>,
}

/// The connections of a TCP endpoint, into `out`.
pub fn endpoint_connections<A: tcp::App>(ep: &tcp::Endpoint<A>, out: &mut Vec<ConnInfo>) {
    for h in ep.handles() {
        if let Some(t) = ep.tcb(h) {
            let tu = t.tuple();
            out.push(ConnInfo {
                local: (tu.local, tu.local_port),
                remote: (tu.remote, tu.remote_port),
                info: t.info(),
            });
        }
    }
}
