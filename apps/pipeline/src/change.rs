//! Changes to a running pipeline's script, sans-IO: the text of a script (for `show`, and to
//! parse additions in the context of what exists), additions, and removals.

use crate::script::{parse, Arg, Decl, Link, Script, ScriptError, Value};
use std::fmt::Write;

fn value(v: &Value, out: &mut String) {
    match v {
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => {
            // Display never writes an exponent (the lexer reads none); a whole number keeps
            // its ".0", so it parses back as a decimal, not an integer.
            let t = f.to_string();
            out.push_str(&t);
            if !t.contains('.') {
                out.push_str(".0");
            }
        }
        Value::Str(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Ident(s) => out.push_str(s),
        Value::List(l) => {
            out.push('[');
            for (i, v) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                value(v, out);
            }
            out.push(']');
        }
    }
}

fn args(a: &[Arg], out: &mut String) {
    out.push('(');
    for (i, a) in a.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if let Some(k) = &a.key {
            out.push_str(k);
            out.push('=');
        }
        value(&a.value, out);
    }
    out.push(')');
}

fn decl(keyword: Option<&str>, d: &Decl, out: &mut String) {
    match keyword {
        Some(k) => {
            let _ = write!(out, "{k} {}", d.name);
        }
        None => {
            let _ = write!(out, "{} :: {}", d.name, d.class);
        }
    }
    args(&d.args, out);
    out.push('\n');
}

/// The script as text that parses back to the same modules, links, classes and workers.
pub fn render(s: &Script) -> String {
    let mut out = String::new();
    for d in &s.modules {
        decl(None, d, &mut out);
    }
    for l in &s.links {
        let _ = writeln!(out, "{}:{} -> {}:{}", l.from, l.ogate, l.igate, l.to);
    }
    for d in &s.classes {
        decl(Some("tc"), d, &mut out);
    }
    for d in &s.workers {
        decl(Some("worker"), d, &mut out);
    }
    out
}

/// `s` with the statements of `text` added: new modules, links (a link from an output gate
/// that is connected already replaces the old one: that is how a module is put into a
/// path), classes and workers. Errors name the line of `text`.
pub fn add(s: &Script, text: &str) -> Result<Script, ScriptError> {
    let base = render(s);
    let skip = base.lines().count();
    let mut merged = parse(&format!("{base}{text}")).map_err(|e| {
        if e.line > skip {
            ScriptError { line: e.line - skip, ..e }
        } else {
            e
        }
    })?;
    // Lines of what was added count from the start of `text`, as its author wrote them.
    for d in merged.modules.iter_mut().chain(merged.classes.iter_mut()).chain(merged.workers.iter_mut()) {
        d.line = d.line.saturating_sub(skip).max(1);
    }
    let mut links: Vec<Link> = Vec::new();
    for l in merged.links {
        links.retain(|o| !(o.from == l.from && o.ogate == l.ogate));
        links.push(Link { line: l.line.saturating_sub(skip).max(1), ..l });
    }
    merged.links = links;
    Ok(merged)
}

/// `s` without module `name`. Where it sat in a path (its input links, and one output link),
/// its upstream is joined to its downstream, so traffic keeps flowing; it also leaves the
/// task lists of the traffic classes.
pub fn remove(s: &Script, name: &str) -> Result<Script, String> {
    if !s.modules.iter().any(|d| d.name == name) {
        return Err(format!("no module '{name}'"));
    }
    let mut out = s.clone();
    out.modules.retain(|d| d.name != name);
    let ins: Vec<Link> = s.links.iter().filter(|l| l.to == name && l.from != name).cloned().collect();
    let outs: Vec<Link> = s.links.iter().filter(|l| l.from == name && l.to != name).cloned().collect();
    out.links.retain(|l| l.from != name && l.to != name);
    if let [o] = outs.as_slice() {
        for i in ins {
            out.links.push(Link { from: i.from, ogate: i.ogate, to: o.to.clone(), igate: o.igate, line: i.line });
        }
    }
    for c in &mut out.classes {
        for a in &mut c.args {
            if a.key.as_deref() == Some("tasks") {
                if let Value::List(l) = &mut a.value {
                    l.retain(|v| !matches!(v, Value::Str(x) | Value::Ident(x) if x == name));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
