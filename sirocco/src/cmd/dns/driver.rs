//! Answers at the driver, the command's side: each catalog published becomes a table of
//! prepared answers (`dns_server::driver`), installed in the XDP filter's maps whole before
//! queries switch to it; the program's counters are read for the exit summary.

use dns_server::compile::Catalog;
use dns_server::driver::{self, Kind, Pick};
use io::dns_answers::{self as maps, DnsMaps};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The filter's answer maps once attached, and the rate they answer at.
pub struct Driver {
    maps: Mutex<Option<DnsMaps>>,
    /// The first table, built before the filter is loaded (to size its maps).
    first: Mutex<Option<Built>>,
    /// RRL's (rate, IPv4 prefix, IPv6 prefix), if it is on.
    rate: Option<(u32, u8, u8)>,
}

fn pick(p: Pick) -> u32 {
    match p {
        Pick::Id(i) => i,
        Pick::Pass => maps::PASS,
        Pick::Same => maps::SAME,
    }
}

/// A table with how many of its keys are answered here and how long it took.
struct Built {
    table: maps::Table,
    answered: usize,
    secs: f64,
}

/// The maps' table for `catalog`.
fn table(catalog: &Arc<Catalog>) -> Built {
    let t0 = Instant::now();
    let limits = driver::Limits { name_max: maps::NAME_MAX, body_max: maps::BODY_MAX, patches: maps::PATCHES };
    let t = driver::build(catalog, limits);
    let answered = t.answered();
    let answers = t
        .answers
        .iter()
        .map(|a| {
            maps::Answer::new(a.flags, a.counts, &a.body, a.base_len, &a.patches).expect("built within the limits")
        })
        .collect();
    // The program finds a name's record once, with its types in it.
    let mut nodes: std::collections::HashMap<maps::Key, maps::Node> = std::collections::HashMap::new();
    for e in &t.entries {
        let Some(k) = maps::Key::new(&e.name) else { continue };
        let n = nodes.entry(k).or_insert_with(|| maps::Node {
            other: (maps::PASS, maps::PASS),
            below: (maps::PASS, maps::PASS),
            ..maps::Node::default()
        });
        let p = (pick(e.plain), pick(e.dnssec));
        match e.kind {
            Kind::Exact => n.own.push((e.qtype, p)),
            Kind::Other => n.other = p,
            Kind::Below => n.wild.push((e.qtype, p)),
            Kind::BelowOther => n.below = p,
        }
    }
    let index = nodes.into_iter().collect();
    Built { table: maps::Table { index, answers }, answered, secs: t0.elapsed().as_secs_f64() }
}

impl Driver {
    pub fn new(rrl: Option<&dns_server::rrl::RrlSettings>) -> Arc<Driver> {
        Arc::new(Driver {
            maps: Mutex::new(None),
            first: Mutex::new(None),
            rate: rrl.map(|r| (r.rate, r.ipv4_prefix, r.ipv6_prefix)),
        })
    }

    /// Builds the table of `catalog` for the filter to come; the room its maps need.
    pub fn prepare(&self, catalog: &Arc<Catalog>) -> maps::Capacity {
        let built = table(catalog);
        let cap = built.table.capacity();
        *self.first.lock().unwrap() = Some(built);
        cap
    }

    /// Takes the filter's maps and installs the prepared table.
    pub fn attach(&self, mut m: DnsMaps) {
        let (rate, v4, v6) = self.rate.unwrap_or((0, 32, 128));
        if let Err(e) = m.set_rate(rate, v4, v6) {
            tracing::warn!("answers in XDP off: {e}");
            return;
        }
        let first = self.first.lock().unwrap().take();
        *self.maps.lock().unwrap() = Some(m);
        if let Some(b) = first {
            self.put(b);
        }
    }

    /// Installs the table of `catalog` (a reload's).
    pub fn install(&self, catalog: &Arc<Catalog>) {
        if self.maps.lock().unwrap().is_some() {
            self.put(table(catalog));
        }
    }

    /// Installs `b`; says how it went in the log.
    fn put(&self, b: Built) {
        let mut held = self.maps.lock().unwrap();
        let Some(m) = held.as_mut() else { return };
        let t = Instant::now();
        match m.install(&b.table) {
            Ok(()) => tracing::info!(
                "answers in XDP: {} answers to names and types ready at the driver for {} names, {} distinct (built in {:.2} s, installed in {:.2} s)",
                b.answered,
                b.table.index.len(),
                b.table.answers.len(),
                b.secs,
                t.elapsed().as_secs_f64()
            ),
            Err(e) => tracing::warn!(
                "answers in XDP off, every query goes to the engines: {e} (a table past the room made at start needs a restart)"
            ),
        }
    }

    /// The exit summary's line, if answers were given at the driver.
    pub fn summary(&self) -> Option<String> {
        let held = self.maps.lock().unwrap();
        let c = held.as_ref()?.counts();
        let passed: Vec<String> = maps::REASONS
            .iter()
            .zip(c)
            .skip(2)
            .filter(|(_, v)| *v > 0)
            .map(|(r, v)| format!("{} {v}", r.replace('_', " ")))
            .collect();
        Some(format!(
            "dns in xdp: answered {} | passed to the engines {}{}",
            c[0],
            c[2..].iter().sum::<u64>(),
            if passed.is_empty() { String::new() } else { format!(" ({})", passed.join(", ")) }
        ))
    }
}
