//! The snapshot: every key at one sequence number, written whole to a temporary file, made
//! durable and renamed into place, so there is always one complete snapshot or the previous.
//!
//! ```text
//! 0   "SIRSNAP1"
//! 8   u64 base: every change up to it is in the snapshot
//! 16  u64 gen: logs of earlier generations are covered by it
//! 24  u64 count of records that follow
//! 32  u32 CRC-32C of bytes 0..32; 4 bytes zero
//! 40  count × a record of one key (seq: the change that last wrote the key): Sets for a
//!     string, a fresh HashSet for a hash
//! ```

use super::dir::sync_dir;
use super::record::{db_of, encode, read, set_db, with_whole, Change, Read};
use super::replay;
use crate::keyspace::Databases;
use std::fs::{self, File};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"SIRSNAP1";
const HEAD: usize = 40;

/// What a snapshot held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    /// Its base sequence number.
    pub base: u64,
    /// Its generation.
    pub gen: u64,
    /// Keys in it.
    pub keys: u64,
    /// Keys of databases beyond those configured, left out.
    pub beyond: u64,
}

/// Writes every key of `ks` as the snapshot of `dir` at `base`, covering generations before
/// `gen`; calls `ready` once all is written (the caller may wait there for what the snapshot
/// shows to be durable), then makes it durable and puts it in place. Returns the keys
/// written. The keyspace may change meanwhile: it is copied one shard at a time.
pub fn write(
    dir: &Path,
    dbs: &Databases,
    base: u64,
    gen: u64,
    ready: impl FnOnce() -> Result<(), String>,
) -> Result<u64, String> {
    let tmp = dir.join("snapshot.tmp");
    let fail = |e: std::io::Error| format!("{}: {e}", tmp.display());
    let mut f = File::create(&tmp).map_err(fail)?;
    f.write_all(&[0; HEAD]).map_err(fail)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let mut rec = Vec::new();
    let mut count = 0u64;
    let swaps = dbs.swaps();
    for ks in dbs.iter() {
        for i in 0..ks.shards() {
            rec.clear();
            {
                let s = ks.lock(i);
                for (k, e) in &s.map {
                    let at = rec.len();
                    with_whole(k, &e.value, e.expire_ms, |c| encode(&mut rec, e.seq.max(1), c));
                    if ks.index() != 0 {
                        set_db(&mut rec[at..], ks.index() as u8);
                    }
                    count += 1;
                }
            }
            w.write_all(&rec).map_err(fail)?;
        }
    }
    if dbs.swaps() != swaps {
        let _ = fs::remove_file(&tmp);
        return Err("a SWAPDB ran while the snapshot was copied; it is taken again later".into());
    }
    let mut f = w.into_inner().map_err(|e| fail(e.into_error()))?;
    let mut head = Vec::with_capacity(HEAD);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&base.to_le_bytes());
    head.extend_from_slice(&gen.to_le_bytes());
    head.extend_from_slice(&count.to_le_bytes());
    let crc = crc32c::crc32c(&head);
    head.extend_from_slice(&crc.to_le_bytes());
    head.extend_from_slice(&[0; 4]);
    f.seek(SeekFrom::Start(0)).map_err(fail)?;
    f.write_all(&head).map_err(fail)?;
    let r = ready().and_then(|()| f.sync_all().map_err(fail));
    if let Err(e) = r {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, dir.join("snapshot")).map_err(fail)?;
    sync_dir(dir).map_err(fail)?;
    Ok(count)
}

/// Loads `dir`'s snapshot into `ks`, if there is one.
pub fn load(dir: &Path, dbs: &Databases) -> Result<Option<Loaded>, String> {
    let path = dir.join("snapshot");
    let b = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let bad = |at: usize, why: &str| {
        format!(
            "{}: damaged at byte {at} ({why}); it was complete when written, so the disk or another program changed it",
            path.display()
        )
    };
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    if b.len() < HEAD || &b[..8] != MAGIC {
        return Err(bad(0, "not a sirocco store snapshot"));
    }
    if crc32c::crc32c(&b[..32]) != u32::from_le_bytes(b[32..36].try_into().unwrap_or_default()) {
        return Err(bad(0, "header checksum mismatch"));
    }
    let (base, gen, count) = (u64_at(8), u64_at(16), u64_at(24));
    let mut at = HEAD;
    let mut beyond = 0;
    for _ in 0..count {
        match read(&b[at..], b.len()) {
            Read::Record { seq, change, size }
                if matches!(&change, Change::Sets(items) if items.len() == 1)
                    || matches!(
                        change,
                        Change::HashSet { fresh: true, .. }
                            | Change::List { fresh: true, .. }
                            | Change::Members { fresh: true, .. }
                            | Change::Scores { fresh: true, .. }
                    ) =>
            {
                // A key of a database beyond those configured now is left out.
                if !replay::apply_in(dbs, db_of(&b[at..]), seq, change) {
                    beyond += 1;
                }
                at += size;
            }
            Read::Record { .. } => return Err(bad(at, "unexpected record")),
            Read::Bad(why) => return Err(bad(at, why)),
            Read::Short { .. } | Read::Pad => return Err(bad(at, "cut short")),
        }
    }
    if at != b.len() {
        return Err(bad(at, "bytes after the last record"));
    }
    Ok(Some(Loaded { base, gen, keys: count, beyond }))
}
