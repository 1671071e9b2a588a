//! A pipeline's counters: as JSON for the control socket and `--counters`, as a table at exit.

use super::client::print_stats;
use crate::dataplane::report::write_json;
use pipeline::pipeline::Pipeline;
use serde_json::{json, Map, Value as Json};

/// Every module's, port's and class's counters, as the control socket and `--counters` give
/// them.
pub(crate) fn stats_json(p: &Pipeline) -> Json {
    let mut modules = Map::new();
    let own: Vec<Vec<(&'static str, u64)>> = p.module_counters().map(|(_, c)| c).collect();
    for ((name, class, st), c) in p.stats().zip(own) {
        let mut m = Map::new();
        m.insert("class".into(), json!(class));
        m.insert("rx".into(), json!(st.rx));
        m.insert("tx".into(), json!(st.tx));
        m.insert("dropped".into(), json!(st.dropped));
        m.insert("batches".into(), json!(st.batches));
        m.insert("cycles".into(), json!(st.cycles));
        for (k, v) in c {
            m.insert(k.into(), json!(v));
        }
        modules.insert(name.to_string(), Json::Object(m));
    }
    let mut ports = Map::new();
    for np in p.ports() {
        ports.insert(
            np.name.clone(),
            Json::Object(np.port.counters().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect()),
        );
    }
    let mut classes = Map::new();
    for c in p.class_stats() {
        classes.insert(
            c.name.clone(),
            json!({ "policy": c.policy, "runs": c.used.count, "packets": c.used.packets, "bits": c.used.bits, "cycles": c.used.cycles }),
        );
    }
    json!({ "modules": modules, "ports": ports, "classes": classes, "paused": p.paused })
}

/// Prints every module's counters and writes them as JSON if asked (the workers' merged:
/// module and port names are the script's own; classes are prefixed with their worker's
/// name when there are several).
pub(super) fn report(
    workers: &[(String, Pipeline, Vec<String>)],
    path: Option<&std::path::Path>,
) -> Result<(), String> {
    let mut v = json!({ "modules": {}, "ports": {}, "classes": {}, "paused": 0 });
    for (w, p, _) in workers {
        let one = stats_json(p);
        for key in ["modules", "ports"] {
            if let (Some(all), Some(mine)) = (v[key].as_object_mut(), one[key].as_object()) {
                all.extend(mine.clone());
            }
        }
        if let (Some(all), Some(mine)) = (v["classes"].as_object_mut(), one["classes"].as_object()) {
            for (k, c) in mine {
                let name = if workers.len() > 1 { format!("{w}/{k}") } else { k.clone() };
                all.insert(name, c.clone());
            }
        }
        v["paused"] = json!(v["paused"].as_u64().unwrap_or(0) + p.paused);
    }
    print_stats(&v);
    println!("backpressure pauses: {}", v["paused"]);
    match path {
        Some(path) => write_json(path, &v),
        None => Ok(()),
    }
}
