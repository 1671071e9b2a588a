//! The store's directory: a lock, the snapshot, and log segments.
//!
//! ```text
//! DIR/lock                          flock()ed while a store runs on DIR
//! DIR/snapshot                      every key at one sequence number (see `snapshot`)
//! DIR/log-GGGGGG-EEE-SSSSSS         generation G, engine E's log, segment S
//! ```
//!
//! A generation starts at every start (after the replay and a new snapshot), so a log is
//! only ever appended to by the run that created it, and the logs of earlier generations are
//! covered by the snapshot and removed. Segments are filled with zeros and made durable
//! before they are used: a write into them then changes no file size and no extent, so the
//! O_DSYNC write that carries a commit costs the device one write (FUA) and no journal
//! commit of the file system.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A segment's name.
pub fn segment_name(gen: u64, engine: usize, seg: u32) -> String {
    format!("log-{gen:06}-{engine:03}-{seg:06}")
}

/// `(gen, engine, seg)` of a segment's file name.
pub fn parse_segment(name: &str) -> Option<(u64, usize, u32)> {
    let rest = name.strip_prefix("log-")?;
    let mut it = rest.split('-');
    let (g, e, s) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || [g, e, s].iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some((g.parse().ok()?, e.parse().ok()?, s.parse().ok()?))
}

/// A segment's (generation, engine, number).
pub type SegmentId = (u64, usize, u32);

/// Every segment in `dir`, sorted by (gen, engine, seg).
pub fn segments(dir: &Path) -> io::Result<Vec<(SegmentId, PathBuf)>> {
    let mut v = Vec::new();
    for ent in fs::read_dir(dir)? {
        let ent = ent?;
        if let Some(id) = ent.file_name().to_str().and_then(parse_segment) {
            v.push((id, ent.path()));
        }
    }
    v.sort();
    Ok(v)
}

/// Makes the directory's entries (new, renamed, removed files) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Takes the directory's lock for this process, or says who has it.
pub fn lock(dir: &Path) -> Result<File, String> {
    let path = dir.join("lock");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(format!("{}: another sirocco store is using this directory", dir.display()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(format!("{}: {e}", path.display())),
    }
}

/// Creates a segment of `size` bytes of zeros at `path` and makes it and its name durable.
pub fn prepare_segment(path: &Path, size: u64) -> io::Result<()> {
    let mut f = OpenOptions::new().create(true).truncate(true).write(true).open(path)?;
    let zeros = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(parse_segment(&segment_name(3, 1, 12)), Some((3, 1, 12)));
        assert_eq!(parse_segment("log-1-2"), None);
        assert_eq!(parse_segment("log-1-2-x"), None);
        assert_eq!(parse_segment("log-1-2-3-4"), None);
        assert_eq!(parse_segment("snapshot"), None);
    }
}
