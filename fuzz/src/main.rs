//! A small mutational fuzzer on stable Rust: starts from each target's seeds, mutates (bit
//! flips, byte sets, interesting values, truncation, extension, splicing), and runs the target
//! under catch_unwind. On a panic it prints the input as hex and exits non-zero; that input
//! becomes a regression test.
//!
//! Usage: sirocco-fuzz [TARGET|all] [--iters N] [--seed S] [--input HEX]

use sirocco_fuzz::{seeds, TARGETS};
use std::panic;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, pool: &[Vec<u8>]) {
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(8) {
            0 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] ^= 1 << rng.below(8);
            }
            1 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] = rng.next() as u8;
            }
            2 if !input.is_empty() => {
                let i = rng.below(input.len());
                let v = [0u8, 1, 0x7f, 0x80, 0xff, 4, 5, 0x45, 0x40, 0x20][rng.below(10)];
                input[i] = v;
            }
            3 if input.len() > 1 => {
                let i = rng.below(input.len() - 1);
                let v = [0u16, 1, 0xffff, 0x7fff, 8, 20, 60, 1500][rng.below(8)];
                input[i..i + 2].copy_from_slice(&v.to_be_bytes());
            }
            4 => {
                let n = rng.below(input.len() + 1);
                input.truncate(n);
            }
            5 => {
                for _ in 0..1 + rng.below(16) {
                    input.push(rng.next() as u8);
                }
            }
            6 if !pool.is_empty() => {
                let other = &pool[rng.below(pool.len())];
                if !other.is_empty() && !input.is_empty() {
                    let at = rng.below(input.len());
                    let from = rng.below(other.len());
                    let n = (other.len() - from).min(input.len() - at).min(1 + rng.below(32));
                    input[at..at + n].copy_from_slice(&other[from..from + n]);
                }
            }
            _ => {
                if input.len() > 1 {
                    let i = rng.below(input.len());
                    input.remove(i);
                }
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut which = "all".to_string();
    let mut iters: u64 = 100_000;
    let mut seed: u64 = 0x5eed;
    let mut input: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--iters" => {
                iters = val(i).parse().unwrap_or_else(|_| die("--iters needs a number"));
                i += 1;
            }
            "--seed" => {
                seed = val(i).parse().unwrap_or_else(|_| die("--seed needs a number"));
                i += 1;
            }
            "--input" => {
                input = Some(unhex(&val(i)).unwrap_or_else(|| die("--input needs hex")));
                i += 1;
            }
            "-h" | "--help" => {
                let names: Vec<&str> = TARGETS.iter().map(|t| t.0).collect();
                println!(
                    "sirocco-fuzz [TARGET|all] [--iters N] [--seed S] [--input HEX]\ntargets: {}",
                    names.join(" ")
                );
                return;
            }
            t => which = t.to_string(),
        }
        i += 1;
    }
    let targets: Vec<_> = TARGETS.iter().filter(|(n, _)| which == "all" || *n == which).collect();
    if targets.is_empty() {
        die(&format!("unknown target {which}"));
    }
    if std::env::var_os("FUZZ_SHOW_PANICS").is_none() {
        panic::set_hook(Box::new(|_| {}));
    }
    let mut failed = false;
    for (name, f) in targets {
        if let Some(inp) = &input {
            let ok = panic::catch_unwind(|| f(inp)).is_ok();
            println!("{name}: {}", if ok { "ok" } else { "PANIC" });
            failed |= !ok;
            continue;
        }
        let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
        let mut pool = seeds(name);
        for s in pool.clone() {
            if panic::catch_unwind(|| f(&s)).is_err() {
                println!("{name}: PANIC on seed {}", hex(&s));
                std::process::exit(1);
            }
        }
        let mut run = 0;
        let mut bad = None;
        for _ in 0..iters {
            let mut x = pool[rng.below(pool.len())].clone();
            mutate(&mut rng, &mut x, &pool);
            run += 1;
            if panic::catch_unwind(|| f(&x)).is_err() {
                bad = Some(x);
                break;
            }
            // Keep a few mutants as new starting points (bounded pool).
            if rng.below(64) == 0 {
                if pool.len() < 256 {
                    pool.push(x);
                } else {
                    let i = rng.below(pool.len());
                    pool[i] = x;
                }
            }
        }
        match bad {
            Some(x) => {
                println!("{name}: PANIC after {run} inputs; reproduce with: sirocco-fuzz {name} --input {}", hex(&x));
                failed = true;
            }
            None => println!("{name}: {run} inputs, no failure"),
        }
    }
    if failed {
        std::process::exit(1);
    }
}

fn die(msg: &str) -> ! {
    eprintln!("sirocco-fuzz: error: {msg}");
    std::process::exit(2)
}
