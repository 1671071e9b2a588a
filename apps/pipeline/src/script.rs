//! The pipeline's script language, sans-IO: what modules exist, how their gates connect, the
//! traffic classes and the workers. Readable like a bessctl script:
//!
//! ```text
//! # a router between two interfaces
//! in0 :: PortInc(port="eth0")
//! out1 :: PortOut(port="eth1")
//! rt :: IPLookup(routes=["198.18.1.0/24 0", "0.0.0.0/0 1"])
//! in0 -> TTL() -> rt
//! rt:0 -> IPChecksum() -> out1          # ogate 0 of rt
//! rt:1 -> Sink()
//! tc fast(policy="rate_limit", resource="packet", limit=100000)
//! worker w0(cpu=1)
//! ```
//!
//! A line holds one statement; `#` starts a comment. `name :: Class(args)` declares a module;
//! a module may also be declared where a chain first uses it, or left unnamed (`Bypass()`).
//! A chain joins modules left to right: `a:N -> b` leaves by a's output gate N, `a -> M:b`
//! enters by b's input gate M (both 0 when not given). Arguments are `key=value` or bare
//! values: integers (decimal, 0x hex, or with a k/M/G suffix), decimals, "strings", identifiers
//! and [lists]. Every error names its line
//! and column.

use std::collections::HashMap;
use std::fmt;

/// Most gates a module may have on either side (BESS's limit).
pub const MAX_GATES: u32 = 8192;
/// Longest script accepted.
pub const MAX_SCRIPT: usize = 1 << 20;
/// Deepest nesting of lists.
const MAX_DEPTH: usize = 8;

/// An argument's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A decimal number.
    Float(f64),
    /// A quoted string.
    Str(String),
    /// A bare word (`true`, `weighted_fair`).
    Ident(String),
    /// A list.
    List(Vec<Value>),
}

/// One argument: `key=value`, or a bare value.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    /// Its key, if given.
    pub key: Option<String>,
    /// Its value.
    pub value: Value,
}

/// A declared module, traffic class or worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    /// Its name (generated for an unnamed module: `Class_N`).
    pub name: String,
    /// Its class (the module class; `tc` or `worker` for those).
    pub class: String,
    /// Its arguments.
    pub args: Vec<Arg>,
    /// Where it was declared.
    pub line: usize,
}

/// A connection from an output gate to an input gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The upstream module.
    pub from: String,
    /// Its output gate.
    pub ogate: u32,
    /// The downstream module.
    pub to: String,
    /// Its input gate.
    pub igate: u32,
    /// Where it was written.
    pub line: usize,
}

/// A parsed script.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script {
    /// Modules, in order of declaration.
    pub modules: Vec<Decl>,
    /// Connections, in order.
    pub links: Vec<Link>,
    /// Traffic classes.
    pub classes: Vec<Decl>,
    /// Workers.
    pub workers: Vec<Decl>,
}

/// A script error: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// Line (from 1).
    pub line: usize,
    /// Column (from 1).
    pub col: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}:{}: {}", self.line, self.col, self.msg)
    }
}

impl std::error::Error for ScriptError {}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Int(i64),
    Float(f64),
    Str(String),
    Colons,
    Colon,
    Arrow,
    Open,
    Close,
    LBracket,
    RBracket,
    Comma,
    Equals,
}

/// Splits one line into tokens with their columns.
fn lex(line: &str, ln: usize) -> Result<Vec<(Tok, usize)>, ScriptError> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |col: usize, msg: String| ScriptError { line: ln, col: col + 1, msg };
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => break,
            b':' if b.get(i + 1) == Some(&b':') => {
                out.push((Tok::Colons, start));
                i += 2;
            }
            b':' => {
                out.push((Tok::Colon, start));
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'>') => {
                out.push((Tok::Arrow, start));
                i += 2;
            }
            b'(' | b')' | b'[' | b']' | b',' | b'=' => {
                out.push((
                    match c {
                        b'(' => Tok::Open,
                        b')' => Tok::Close,
                        b'[' => Tok::LBracket,
                        b']' => Tok::RBracket,
                        b',' => Tok::Comma,
                        _ => Tok::Equals,
                    },
                    start,
                ));
                i += 1;
            }
            b'"' => {
                i += 1;
                let mut s = String::new();
                loop {
                    match b.get(i) {
                        None => return Err(err(start, "unterminated string".into())),
                        Some(b'"') => break,
                        Some(b'\\') => {
                            match b.get(i + 1) {
                                Some(b'"') => s.push('"'),
                                Some(b'\\') => s.push('\\'),
                                Some(b'n') => s.push('\n'),
                                Some(b't') => s.push('\t'),
                                _ => return Err(err(i, "unknown escape in string (use \\\" \\\\ \\n \\t)".into())),
                            }
                            i += 2;
                        }
                        Some(_) => {
                            // Whole UTF-8 characters.
                            let ch = line[i..].chars().next().unwrap_or('\u{fffd}');
                            s.push(ch);
                            i += ch.len_utf8();
                        }
                    }
                }
                i += 1;
                out.push((Tok::Str(s), start));
            }
            b'0'..=b'9' | b'-' => {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
                    i += 1;
                }
                let text = line[start..i].replace('_', "");
                let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"));
                let tok = if let Ok(v) = text.parse::<i64>() {
                    Tok::Int(v)
                } else if let Some(v) = hex.and_then(|h| i64::from_str_radix(h, 16).ok()) {
                    Tok::Int(v)
                } else if let Some(v) = suffixed(&text) {
                    Tok::Int(v)
                } else if let Ok(v) = text.parse::<f64>() {
                    if !v.is_finite() {
                        return Err(err(start, format!("'{}' is not a finite number", &line[start..i])));
                    }
                    Tok::Float(v)
                } else {
                    return Err(err(start, format!("'{}' is not a number", &line[start..i])));
                };
                out.push((tok, start));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                    i += 1;
                }
                out.push((Tok::Word(line[start..i].to_string()), start));
            }
            _ => {
                let ch = line[i..].chars().next().unwrap_or('?');
                return Err(err(start, format!("unexpected character '{ch}'")));
            }
        }
    }
    Ok(out)
}

/// `10k`, `2M`, `1G` (powers of 1000, as rates are written).
fn suffixed(t: &str) -> Option<i64> {
    let (num, mul) = match t.as_bytes().last()? {
        b'k' | b'K' => (&t[..t.len() - 1], 1_000),
        b'M' => (&t[..t.len() - 1], 1_000_000),
        b'G' => (&t[..t.len() - 1], 1_000_000_000),
        _ => return None,
    };
    num.parse::<i64>().ok()?.checked_mul(mul)
}

struct Parser<'a> {
    toks: &'a [(Tok, usize)],
    at: usize,
    line: usize,
    end_col: usize,
}

impl Parser<'_> {
    fn err(&self, msg: impl Into<String>) -> ScriptError {
        let col = self.toks.get(self.at).map_or(self.end_col, |t| t.1) + 1;
        ScriptError { line: self.line, col, msg: msg.into() }
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|t| &t.0)
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self, what: &str) -> Result<String, ScriptError> {
        match self.peek() {
            Some(Tok::Word(w)) => {
                let w = w.clone();
                self.at += 1;
                Ok(w)
            }
            _ => Err(self.err(format!("expected {what}"))),
        }
    }

    fn gate(&mut self) -> Result<u32, ScriptError> {
        match self.peek() {
            Some(&Tok::Int(n)) if (0..i64::from(MAX_GATES)).contains(&n) => {
                self.at += 1;
                Ok(n as u32)
            }
            Some(Tok::Int(_)) => Err(self.err(format!("a gate is 0 to {}", MAX_GATES - 1))),
            _ => Err(self.err("expected a gate number")),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ScriptError> {
        if depth > MAX_DEPTH {
            return Err(self.err("lists nested too deeply"));
        }
        let v = match self.peek().cloned() {
            Some(Tok::Int(n)) => Value::Int(n),
            Some(Tok::Float(x)) => Value::Float(x),
            Some(Tok::Str(s)) => Value::Str(s),
            Some(Tok::Word(w)) => Value::Ident(w),
            Some(Tok::LBracket) => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.eat(&Tok::RBracket) {
                    loop {
                        items.push(self.value(depth + 1)?);
                        if self.eat(&Tok::RBracket) {
                            break;
                        }
                        if !self.eat(&Tok::Comma) {
                            return Err(self.err("expected ',' or ']'"));
                        }
                    }
                }
                return Ok(Value::List(items));
            }
            _ => return Err(self.err("expected a value")),
        };
        self.at += 1;
        Ok(v)
    }

    /// `( args )`, the opening parenthesis already seen.
    fn args(&mut self) -> Result<Vec<Arg>, ScriptError> {
        let mut args = Vec::new();
        if self.eat(&Tok::Close) {
            return Ok(args);
        }
        loop {
            let key = match (self.peek(), self.toks.get(self.at + 1).map(|t| &t.0)) {
                (Some(Tok::Word(w)), Some(Tok::Equals)) => {
                    let w = w.clone();
                    self.at += 2;
                    if args.iter().any(|a: &Arg| a.key.as_deref() == Some(&w)) {
                        self.at -= 2;
                        return Err(self.err(format!("argument '{w}' given twice")));
                    }
                    Some(w)
                }
                _ => None,
            };
            let value = self.value(0)?;
            args.push(Arg { key, value });
            if self.eat(&Tok::Close) {
                return Ok(args);
            }
            if !self.eat(&Tok::Comma) {
                return Err(self.err("expected ',' or ')'"));
            }
        }
    }
}

/// Counts of unnamed modules per class, for their generated names.
#[derive(Default)]
struct Names {
    index: HashMap<String, usize>,
    anon: HashMap<String, usize>,
}

/// Parses a script.
pub fn parse(text: &str) -> Result<Script, ScriptError> {
    if text.len() > MAX_SCRIPT {
        return Err(ScriptError { line: 1, col: 1, msg: format!("script longer than {MAX_SCRIPT} bytes") });
    }
    let mut s = Script::default();
    let mut names = Names::default();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let toks = lex(raw, ln)?;
        if toks.is_empty() {
            continue;
        }
        let mut p = Parser { toks: &toks, at: 0, line: ln, end_col: raw.len() };
        match &toks[0].0 {
            Tok::Word(w)
                if (w == "tc" || w == "worker")
                    && !matches!(toks.get(1).map(|t| &t.0), Some(Tok::Colons | Tok::Arrow | Tok::Colon)) =>
            {
                p.at = 1;
                let name = p.word(&format!("the {w}'s name"))?;
                if !p.eat(&Tok::Open) {
                    return Err(p.err("expected '(' and arguments"));
                }
                let args = p.args()?;
                let list = if w == "tc" { &mut s.classes } else { &mut s.workers };
                if list.iter().any(|d| d.name == name) {
                    return Err(ScriptError {
                        line: ln,
                        col: toks[1].1 + 1,
                        msg: format!("{w} '{name}' is declared twice"),
                    });
                }
                list.push(Decl { name, class: w.clone(), args, line: ln });
            }
            _ => chain(&mut p, &mut s, &mut names)?,
        }
        if p.at < toks.len() {
            return Err(p.err("unexpected text after the statement"));
        }
    }
    Ok(s)
}

/// One chain (a lone declaration is a chain of one).
fn chain(p: &mut Parser<'_>, s: &mut Script, names: &mut Names) -> Result<(), ScriptError> {
    let mut prev: Option<(String, u32)> = None;
    loop {
        // An input gate: `N:` before the module.
        let igate = if matches!(p.peek(), Some(Tok::Int(_))) {
            if prev.is_none() {
                return Err(p.err("an input gate ('N:') only after '->'"));
            }
            let g = p.gate()?;
            if !p.eat(&Tok::Colon) {
                return Err(p.err("expected ':' after the input gate"));
            }
            g
        } else {
            0
        };
        let name = node(p, s, names)?;
        if let Some((from, ogate)) = prev.take() {
            s.links.push(Link { from, ogate, to: name.clone(), igate, line: p.line });
        }
        let named_ogate = p.eat(&Tok::Colon);
        let ogate = if named_ogate { p.gate()? } else { 0 };
        if p.eat(&Tok::Arrow) {
            prev = Some((name, ogate));
            continue;
        }
        if named_ogate {
            return Err(p.err("an output gate (':N') only before '->'"));
        }
        return Ok(());
    }
}

/// A module in a chain: a name already declared, or a declaration (named or not). Returns
/// its name.
fn node(p: &mut Parser<'_>, s: &mut Script, names: &mut Names) -> Result<String, ScriptError> {
    let col = p.toks.get(p.at).map_or(p.end_col, |t| t.1) + 1;
    let first = p.word("a module")?;
    let (name, class, class_col) = if p.eat(&Tok::Colons) {
        let class_col = p.toks.get(p.at).map_or(p.end_col, |t| t.1) + 1;
        (Some(first), p.word("the module's class")?, class_col)
    } else if p.peek() == Some(&Tok::Open) {
        (None, first, col)
    } else {
        if !names.index.contains_key(&first) {
            return Err(ScriptError {
                line: p.line,
                col,
                msg: format!("no module '{first}' (declare it first: {first} :: Class(...))"),
            });
        }
        return Ok(first);
    };
    if !class.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Err(ScriptError {
            line: p.line,
            col: class_col,
            msg: format!("'{class}' is not a module class (classes start with a capital letter)"),
        });
    }
    if !p.eat(&Tok::Open) {
        return Err(p.err("expected '(' and the module's arguments"));
    }
    let args = p.args()?;
    let name = match name {
        Some(n) => {
            if names.index.contains_key(&n) {
                return Err(ScriptError { line: p.line, col, msg: format!("module '{n}' is declared twice") });
            }
            n
        }
        None => loop {
            let k = names.anon.entry(class.clone()).or_insert(0);
            *k += 1;
            let n = format!("{class}_{k}");
            if !names.index.contains_key(&n) {
                break n;
            }
        },
    };
    names.index.insert(name.clone(), s.modules.len());
    s.modules.push(Decl { name: name.clone(), class, args, line: p.line });
    Ok(name)
}

#[cfg(test)]
mod tests;
