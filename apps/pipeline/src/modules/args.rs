//! A declaration's arguments as a module reads them, checked and each used once.

use crate::module::Out;
use crate::packet::{Batch, BATCH};
use crate::script::{Arg, Value};

/// A declaration's arguments, as a module reads them.
pub struct Args<'a> {
    pub(super) args: &'a [Arg],
    pub(super) ports: &'a [String],
    pub(super) used: std::cell::RefCell<Vec<bool>>,
}

impl Args<'_> {
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        let i = self.args.iter().position(|a| a.key.as_deref() == Some(key))?;
        self.used.borrow_mut()[i] = true;
        Some(&self.args[i].value)
    }

    /// An integer argument within `range`, or `default`.
    pub fn int(&self, key: &str, default: i64, range: std::ops::RangeInclusive<i64>) -> Result<i64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Int(v)) if range.contains(v) => Ok(*v),
            Some(_) => Err(format!("{key} must be an integer from {} to {}", range.start(), range.end())),
        }
    }

    /// A number argument within `range`, or `default`.
    pub fn float(&self, key: &str, default: f64, range: std::ops::RangeInclusive<f64>) -> Result<f64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Int(v)) if range.contains(&(*v as f64)) => Ok(*v as f64),
            Some(Value::Float(v)) if range.contains(v) => Ok(*v),
            Some(_) => Err(format!("{key} must be a number from {} to {}", range.start(), range.end())),
        }
    }

    /// A string (or bare word) argument.
    pub fn string(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Str(s) | Value::Ident(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{key} must be a string")),
        }
    }

    /// The index of the port argument `key` names (required).
    pub fn port(&self, key: &str) -> Result<usize, String> {
        let name = self.string(key)?.ok_or_else(|| format!("{key}=\"name\" is required"))?;
        self.ports.iter().position(|p| *p == name).ok_or_else(|| {
            if self.ports.is_empty() {
                format!("no port '{name}': this pipeline has no ports")
            } else {
                format!("no port '{name}' (ports: {})", self.ports.join(", "))
            }
        })
    }

    /// A list argument (empty if not given; a single value is a list of one), each item
    /// read by `item`; `what` names the items for the error.
    fn list<T>(&self, key: &str, what: &str, item: impl Fn(&Value) -> Option<T>) -> Result<Vec<T>, String> {
        let bad = || format!("{key} must be a list of {what}");
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::List(l)) => l.iter().map(|v| item(v).ok_or_else(bad)).collect(),
            Some(v) => item(v).map(|x| vec![x]).ok_or_else(bad),
        }
    }

    /// A list of strings argument (empty if not given).
    pub fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        self.list(key, "strings", |v| match v {
            Value::Str(s) | Value::Ident(s) => Some(s.clone()),
            _ => None,
        })
    }

    /// A list of numbers argument (empty if not given).
    pub fn floats(&self, key: &str) -> Result<Vec<f64>, String> {
        self.list(key, "numbers", |v| match v {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        })
    }

    /// A true/false argument, or `default`.
    pub fn flag(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.string(key) {
            Ok(None) => Ok(default),
            Ok(Some(s)) if s == "true" => Ok(true),
            Ok(Some(s)) if s == "false" => Ok(false),
            _ => Err(format!("{key} must be true or false")),
        }
    }

    /// `gates=N` (1 to 64; 2 by default).
    pub fn gates(&self) -> Result<u32, String> {
        Ok(self.int("gates", 2, 1..=BATCH as i64)? as u32)
    }

    pub(super) fn all_used(&self) -> Result<(), String> {
        let used = self.used.borrow();
        match self.args.iter().zip(used.iter()).find(|(_, &u)| !u) {
            Some((a, _)) => Err(match &a.key {
                Some(k) => format!("unknown argument '{k}'"),
                None => "arguments are given as key=value".to_string(),
            }),
            None => Ok(()),
        }
    }
}

/// For modules without input gates: whatever is handed to them anyway is dropped.
pub(crate) fn drop_all(batch: &Batch, out: &mut Out) {
    for &p in batch.pkts() {
        out.drop(p);
    }
}
