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

    /// Adds `other` to these samples: a counter to the one of the same family and label
    /// (the sum over engines that an exit summary prints), a gauge or a sample not here yet
    /// appended as it is.
    pub fn add(&mut self, other: &Samples) {
        for s in other.iter() {
            let same = self.0.iter_mut().find(|t| t.kind == Kind::Counter && t.name == s.name && t.label == s.label);
            match same {
                Some(t) if s.kind == Kind::Counter => t.value += s.value,
                _ => self.0.push(*s),
            }
        }
    }

    /// The value of family `name` with label value `label` (None: the sample without a
    /// label), if there is one.
    pub fn get(&self, name: &str, label: Option<&str>) -> Option<u64> {
        self.iter().find(|s| s.name == name && s.label.map(|l| l.1) == label).map(|s| s.value)
    }

    /// As [`get`](Self::get), 0 when absent.
    pub fn value(&self, name: &str, label: Option<&str>) -> u64 {
        self.get(name, label).unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_add_up_by_family_and_label() {
        let (mut a, mut b) = (Samples::default(), Samples::default());
        a.counter_with("x_total", "x", ("k", "one"), 2);
        a.counter("y_total", "y", 5);
        b.counter_with("x_total", "x", ("k", "one"), 3);
        b.counter_with("x_total", "x", ("k", "two"), 7);
        b.gauge("g", "g", 4);
        let mut sum = Samples::default();
        sum.add(&a);
        sum.add(&b);
        assert_eq!(sum.get("x_total", Some("one")), Some(5));
        assert_eq!(sum.get("x_total", Some("two")), Some(7));
        assert_eq!(sum.get("y_total", None), Some(5));
        assert_eq!(sum.get("x_total", None), None, "only labelled samples of x");
        assert_eq!(sum.value("nothing", None), 0);
        assert_eq!(sum.get("g", None), Some(4));
    }
}
