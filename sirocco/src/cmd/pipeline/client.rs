//! `sirocco pipeline show|stats|add|remove`: a running pipeline, through its control socket.

use super::{control, Action};
use serde_json::{json, Value as Json};

pub(super) fn client(a: Action) -> Result<(), String> {
    match a {
        Action::Show(ctl) => {
            let v = control::request(&ctl.control, &json!({ "cmd": "show" }))?;
            print!("{}", v["script"].as_str().unwrap_or(""));
            print_warnings(&v);
        }
        Action::Stats { ctl, json } => {
            let v = control::request(&ctl.control, &json!({ "cmd": "stats" }))?;
            if json {
                println!("{v}");
            } else {
                print_stats(&v);
            }
        }
        Action::Add { ctl, statements, file } => {
            let mut text = statements.join("\n");
            if let Some(f) = file {
                let t = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
                text = if text.is_empty() { t } else { format!("{text}\n{t}") };
            }
            if text.trim().is_empty() {
                return Err("add: give the statements as arguments or --file".into());
            }
            let v = control::request(&ctl.control, &json!({ "cmd": "add", "text": text }))?;
            println!("added");
            print_warnings(&v);
        }
        Action::Remove { ctl, module } => {
            control::request(&ctl.control, &json!({ "cmd": "remove", "module": module }))?;
            println!("removed {module}");
        }
    }
    Ok(())
}

fn print_warnings(v: &Json) {
    for w in v["warnings"].as_array().into_iter().flatten() {
        tracing::warn!("{}", w.as_str().unwrap_or(""));
    }
}

/// The stats reply as a table.
pub(super) fn print_stats(v: &Json) {
    println!(
        "{:<20} {:<16} {:>12} {:>12} {:>10} {:>10}  other",
        "module", "class", "rx", "tx", "dropped", "cycles/pkt"
    );
    for (name, m) in v["modules"].as_object().into_iter().flatten() {
        let n = |k: &str| m[k].as_u64().unwrap_or(0);
        let other: Vec<String> = m
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !["class", "rx", "tx", "dropped", "batches", "cycles"].contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let cpp = if n("rx") > 0 { format!("{:.1}", n("cycles") as f64 / n("rx") as f64) } else { "-".into() };
        println!(
            "{name:<20} {:<16} {:>12} {:>12} {:>10} {cpp:>10}  {}",
            m["class"].as_str().unwrap_or(""),
            n("rx"),
            n("tx"),
            n("dropped"),
            other.join(" ")
        );
    }
    for (name, p) in v["ports"].as_object().into_iter().flatten() {
        println!("port {name}: {p}");
    }
    for (name, c) in v["classes"].as_object().into_iter().flatten() {
        println!("class {name}: {c}");
    }
}
