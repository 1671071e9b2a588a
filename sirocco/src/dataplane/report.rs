//! The dataplane's counters at exit: as text on stdout, and as JSON for `--counters FILE`
//! (`{"engines":[{..}],"total":{..},"filter":{"redirected":..,"passed":..}}`).

use super::Outcome;
use engine::Counters;
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::Path;

fn counters_map(c: &Counters) -> Map<String, Value> {
    c.pairs().into_iter().map(|(k, v)| (k, Value::from(v))).collect()
}

#[derive(Serialize)]
struct Filter {
    redirected: u64,
    passed: u64,
}

#[derive(Serialize)]
struct CountersFile {
    engines: Vec<Map<String, Value>>,
    total: Map<String, Value>,
    filter: Filter,
}

/// Writes the counters as JSON: each engine's with its socket's kernel statistics, the total,
/// and the filter's verdicts.
pub fn write_counters_json<A>(out: &Outcome<A>, path: &Path) -> Result<(), String> {
    let engines = out
        .engines
        .iter()
        .zip(&out.xsk)
        .map(|((c, _), x)| {
            let mut m = counters_map(c);
            for (k, v) in [
                ("xsk_rx_dropped", x.kernel.rx_dropped),
                ("xsk_rx_ring_full", x.kernel.rx_ring_full),
                ("xsk_fill_ring_empty", x.kernel.rx_fill_ring_empty_descs),
                ("xsk_tx_invalid", x.kernel.tx_invalid_descs),
                ("tx_kicks", x.port.tx_kicks),
            ] {
                m.insert(k.into(), Value::from(v));
            }
            m
        })
        .collect();
    let file = CountersFile {
        engines,
        total: counters_map(&out.total()),
        filter: Filter { redirected: out.filter_verdicts.0, passed: out.filter_verdicts.1 },
    };
    write_json(path, &file)
}

/// Writes `value` as one line of JSON to `path`.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
    let mut text = serde_json::to_string(value).map_err(|e| format!("{}: {e}", path.display()))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Prints the per-engine and total counters.
pub fn print_counters<A>(out: &Outcome<A>) {
    for (q, (c, _)) in out.engines.iter().enumerate() {
        println!("engine q{q}:\n{c}");
        if let Some(x) = out.xsk.get(q) {
            println!("  {x}");
        }
    }
    if out.engines.len() > 1 {
        println!("total:\n{}", out.total());
    }
    println!(
        "xdp filter: {} redirected to sirocco, {} passed to the kernel",
        out.filter_verdicts.0, out.filter_verdicts.1
    );
    if let Some(n) = out.captured {
        println!("capture: {n} frames written");
    }
}
