//! What sharing the cache between engines costs: the same stream of gets and sets (USR-like:
//! 99 % gets of 2-byte values over 100 000 keys) run against the cache by one thread, then by
//! two threads at once (one per CPU, as two engines would), with one shard (every command
//! takes the same lock) and with two (the default for two engines). Prints ns per operation.
//! `bench/kv/sharing` runs it and writes bench/results/kv-sharing.md.

use sirocco_kv::cache::{Cache, CacheConfig, Mode};
use std::sync::Arc;
use std::time::Instant;

const KEYS: u32 = 100_000;
const OPS: u32 = 4_000_000;

fn key(i: u32, buf: &mut [u8; 16]) -> &[u8] {
    let mut n = 0;
    for (j, b) in b"key:".iter().enumerate() {
        buf[j] = *b;
        n = j + 1;
    }
    let mut v = i;
    let start = n;
    loop {
        buf[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf[start..n].reverse();
    &buf[..n]
}

fn work(cache: &Cache, seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut buf = [0u8; 16];
    let mut hits = 0u64;
    for _ in 0..OPS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = key((x % u64::from(KEYS)) as u32, &mut buf);
        let mut l = cache.lock(k);
        if x.is_multiple_of(100) {
            l.store(k, Mode::Set, 0, 0, b"vv", 0, 100);
        } else if l.get(k, 100, None).is_some() {
            hits += 1;
        }
    }
    hits
}

fn cache(shards: usize) -> Arc<Cache> {
    let c = Cache::new(CacheConfig { memory: 256 << 20, shards, ..CacheConfig::default() }, 1_800_000_000).unwrap();
    let mut buf = [0u8; 16];
    for i in 0..KEYS {
        let k = key(i, &mut buf);
        c.lock(k).store(k, Mode::Set, 0, 0, b"vv", 0, 100);
    }
    Arc::new(c)
}

fn main() {
    let one = cache(1);
    let t = Instant::now();
    let hits = work(&one, 7);
    let single = t.elapsed().as_nanos() as f64 / f64::from(OPS);
    assert!(hits > u64::from(OPS) / 2);
    println!("one thread, one shard: {single:.1} ns/op");
    for shards in [1, 2, 8] {
        let c = cache(shards);
        let t = Instant::now();
        let threads: Vec<_> = (0..2u64)
            .map(|i| {
                let c = c.clone();
                std::thread::spawn(move || work(&c, 11 + i * 1000))
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        // Each thread did OPS operations in the elapsed time: ns per operation per thread.
        let per = t.elapsed().as_nanos() as f64 / f64::from(OPS);
        println!("two threads, {shards} shard(s): {per:.1} ns/op per thread ({:.2}x one thread)", per / single);
    }
}
