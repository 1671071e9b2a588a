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

/// The maps' table for `catalog`.
fn table(catalog: &Arc<Catalog>) -> (maps::Table, usize) {
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
    let index = t
        .entries
        .iter()
        .filter_map(|e| {
            let kind = match e.kind {
                Kind::Exact => maps::Kind::Exact,
                Kind::Other => maps::Kind::Other,
                Kind::Below => maps::Kind::Below,
                Kind::BelowOther => maps::Kind::BelowOther,
            };
            let hit = maps::Hit {
                id: pick(e.plain),
                id_do: pick(e.dnssec),
                flags: if e.typed { maps::BELOW_TYPED } else { 0 },
            };
            Some((maps::Key::new(&e.name, e.qtype, kind)?, hit))
        })
        .collect();
    (maps::Table { index, answers }, answered)
}

impl Driver {
    pub fn new(rrl: Option<&dns_server::rrl::RrlSettings>) -> Arc<Driver> {
        Arc::new(Driver { maps: Mutex::new(None), rate: rrl.map(|r| (r.rate, r.ipv4_prefix, r.ipv6_prefix)) })
    }

    /// Takes the filter's maps and installs the table of `catalog`.
    pub fn attach(&self, mut m: DnsMaps, catalog: &Arc<Catalog>) {
        let (rate, v4, v6) = self.rate.unwrap_or((0, 32, 128));
        if let Err(e) = m.set_rate(rate, v4, v6) {
            tracing::warn!("answers in XDP off: {e}");
            return;
        }
        *self.maps.lock().unwrap() = Some(m);
        self.install(catalog);
    }

    /// Installs the table of `catalog` (a reload's); says how it went in the log.
    pub fn install(&self, catalog: &Arc<Catalog>) {
        let mut held = self.maps.lock().unwrap();
        let Some(m) = held.as_mut() else { return };
        let t = Instant::now();
        let (table, answered) = table(catalog);
        match m.install(&table) {
            Ok(()) => tracing::info!(
                "answers in XDP: {answered} of {} names and types answered at the driver, {} distinct answers (ready in {:.2} s)",
                table.index.len(),
                table.answers.len(),
                t.elapsed().as_secs_f64()
            ),
            Err(e) => tracing::warn!("answers in XDP off, every query goes to the engines: {e}"),
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
