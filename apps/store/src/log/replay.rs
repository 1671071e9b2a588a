//! Recovery at start: the snapshot, then every log of its generation or later, merged in
//! sequence order and applied up to the first missing number.
//!
//! Each log is walked commit by commit. A commit that is not whole is a torn write if
//! nothing good follows it in its log — a crash in the middle of the last write, whose
//! changes no client was told of — and the replay of that log ends before it. If a whole
//! commit follows it, the damaged one had once been complete and acknowledged: the start
//! stops with an error rather than drop acknowledged changes. The same holds for zeros where
//! a commit should be with commits after them.
//!
//! Numbers are taken by all engines from one counter and a reply waits until every number up
//! to its own is durable in every log, so what survives a crash is a prefix of the order,
//! plus possibly changes beyond a hole that no client saw; those are dropped.

use super::record::{commit_at, db_of, read, Change, Read, BLOCK, COMMIT_SIZE};
use super::{dir, snapshot};
use crate::hash::Hash;
use crate::keyspace::{Databases, Entry, Keyspace, Value};
use crate::list::{self, List};
use crate::set::Set;
use crate::zset::ZSet;
use std::collections::BTreeMap;
use std::path::Path;

/// Longest record the replay accepts (a 512 MB value and its key, with room).
const MAX_RECORD: usize = (512 << 20) + (64 << 20);

/// What recovery found and did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recovery {
    /// The last change replayed (new changes follow it).
    pub last: u64,
    /// The generation new logs belong to.
    pub gen: u64,
    /// Keys after recovery.
    pub keys: usize,
    /// Changes replayed from the logs.
    pub replayed: u64,
    /// Keys dropped because they expired while the store was down.
    pub expired: usize,
    /// One line per torn tail or dropped change, for the operator.
    pub notes: Vec<String>,
    /// Changes to databases beyond those configured, left out.
    pub beyond: u64,
}

/// Where a record is: segment index and byte offset within the log's segments.
pub type At = (usize, usize);

/// The records of one log, in order, and where its good part ends.
pub struct Walked {
    /// Sequence number and place of each good record.
    pub records: Vec<(u64, At)>,
}

/// A place in a log, for messages.
fn place(names: &[String], (seg, off): At) -> String {
    format!("{} at byte {off}", names[seg])
}

/// Is there a whole commit header of generation `gen` at any block boundary after `from`?
fn commit_after(segs: &[Vec<u8>], (seg, off): At, gen: u64) -> Option<At> {
    for (si, b) in segs.iter().enumerate().skip(seg) {
        let start = if si == seg { off } else { 0 };
        let mut o = start.next_multiple_of(BLOCK);
        while o + COMMIT_SIZE <= b.len() {
            if commit_at(&b[o..], gen).is_some() {
                return Some((si, o));
            }
            o += BLOCK;
        }
    }
    None
}

/// The records of the commit at `b[o..]` (whose header is there), if it is whole.
fn commit_records(
    b: &[u8],
    o: usize,
    gen: u64,
    last_seq: u64,
    out: &mut Vec<(u64, usize)>,
) -> Result<usize, &'static str> {
    let head = commit_at(&b[o..], gen).ok_or("no commit header")?;
    let first = head.first;
    let len = usize::try_from(head.len).map_err(|_| "commit length")?;
    if len < BLOCK || !len.is_multiple_of(BLOCK) || o + len > b.len() {
        return Err("commit length");
    }
    let body = &b[o..o + len];
    let mut at = COMMIT_SIZE;
    let mut prev = last_seq;
    let mark = out.len();
    let bad = |out: &mut Vec<(u64, usize)>, why| {
        out.truncate(mark);
        Err(why)
    };
    while at < len {
        match read(&body[at..], MAX_RECORD) {
            Read::Record { seq, change, size } => {
                if matches!(change, Change::Commit { .. }) || seq <= prev || (out.len() == mark && seq != first) {
                    return bad(out, "records out of order");
                }
                prev = seq;
                out.push((seq, o + at));
                at += size;
            }
            Read::Pad => break,
            Read::Bad(why) => return bad(out, why),
            Read::Short { .. } => return bad(out, "record cut short"),
        }
    }
    if out.len() == mark {
        return bad(out, "empty commit");
    }
    Ok(len)
}

/// Walks one log of generation `gen` (its segments in order), sans-IO: its good records, a
/// note for a torn last commit, or an error for damage before good commits.
///
/// Where a segment holds no commit of this log (zeros, or what a recycled segment held
/// before) its data has ended; the log goes on in the next segment if a commit of this log
/// is there. A commit of this log that is not whole is the torn last write if no commit of
/// this log follows it anywhere; if one does, acknowledged data was damaged.
pub fn walk(segs: &[Vec<u8>], names: &[String], gen: u64, notes: &mut Vec<String>) -> Result<Walked, String> {
    let mut records = Vec::new();
    let mut last = 0;
    let damaged = |at: At, why: &str, good: At| {
        format!(
            "{}: damaged ({why}), and a good commit follows at {}: this is not a torn last write but damage to \
             acknowledged data; refusing to start. Move the log away to start without it.",
            place(names, at),
            place(names, good)
        )
    };
    for (si, b) in segs.iter().enumerate() {
        let mut o = 0;
        while o + BLOCK <= b.len() {
            let later = || commit_after(segs, (si, o + BLOCK), gen);
            let Some(head) = commit_at(&b[o..], gen) else {
                match later() {
                    Some((ls, _)) if ls > si => break,
                    Some(good) => return Err(damaged((si, o), "no commit where one should be", good)),
                    None => return Ok(Walked { records }),
                }
            };
            if head.prev != last {
                return Err(format!(
                    "{}: this commit follows change {}, but the log's last good change is {last}: a commit before it \
                     is missing or damaged; refusing to start. Move the log away to start without it.",
                    place(names, (si, o)),
                    head.prev
                ));
            }
            let mut found = Vec::new();
            match commit_records(b, o, gen, last, &mut found) {
                Ok(len) => {
                    last = found.last().map_or(last, |r| r.0);
                    records.extend(found.into_iter().map(|(seq, off)| (seq, (si, off))));
                    o += len;
                }
                Err(why) => {
                    if let Some(good) = later() {
                        return Err(damaged((si, o), why, good));
                    }
                    notes.push(format!(
                        "{}: torn write ({why}) after the last good commit (a crash in mid-write); the replay of \
                         this log ends there (last change {last}), and the unfinished commit, never acknowledged, is \
                         dropped",
                        place(names, (si, o))
                    ));
                    return Ok(Walked { records });
                }
            }
        }
    }
    Ok(Walked { records })
}

/// True if the key's entry already carries change `seq` (or a later one): a snapshot copied
/// while changes went on holds some of the changes the replay then meets again.
fn carried(s: &crate::keyspace::Shard, key: &[u8], seq: u64) -> bool {
    s.map.get(key).is_some_and(|e| e.seq >= seq)
}

/// The entry a list's or set's change applies to: None if the key carries it already or the
/// change removes the key (`gone`); else the key's entry, made anew (`made()`, expiring at
/// `expire_ms`) where the change starts the value or the key holds another type.
fn collection<'s>(
    s: &'s mut crate::keyspace::Shard,
    key: &[u8],
    seq: u64,
    fresh: bool,
    gone: bool,
    expire_ms: i64,
    made: impl Fn() -> Value,
) -> Option<&'s mut Entry> {
    if carried(s, key, seq) {
        return None;
    }
    if gone {
        s.map.remove(key);
        s.removed_seq = s.removed_seq.max(seq);
        return None;
    }
    if fresh {
        s.note_expiry(key, expire_ms);
    }
    let e = s.map.entry(key.into()).or_insert(Entry { value: made(), expire_ms: 0, seq });
    if fresh || std::mem::discriminant(&e.value) != std::mem::discriminant(&made()) {
        *e = Entry { value: made(), expire_ms, seq };
    }
    Some(e)
}

/// Applies one change of database `db`, as the command that made it did (FLUSHALL's clears
/// every database). A change of a database beyond those configured is left out (returns
/// false): the store was started with fewer `databases` than before.
pub(crate) fn apply_in(dbs: &Databases, db: usize, seq: u64, change: Change<'_>) -> bool {
    match (change, dbs.db(db)) {
        (Change::Flush, _) => {
            for ks in dbs.iter() {
                for i in 0..ks.shards() {
                    ks.lock(i).clear(seq);
                }
            }
            true
        }
        (Change::SwapDb(a, b), _) => {
            dbs.swap(a as usize, b as usize, || seq);
            true
        }
        (Change::FlushDb, Some(ks)) => {
            for i in 0..ks.shards() {
                ks.lock(i).clear(seq);
            }
            true
        }
        (change, Some(ks)) => {
            apply(ks, seq, change);
            true
        }
        (_, None) => false,
    }
}

/// Applies one change, as the command that made it did. Records follow each other in the
/// order the changes were made, so a record finds the key as its command left it — except
/// that an expired key a command found gone may still be here (expiry is not logged): a
/// fresh hash or list replaces whatever the key holds for that reason. A change a key
/// already carries is skipped, so replaying changes onto a snapshot that holds some of them
/// ends where the commands did (a property test checks it for every kind of change).
pub(crate) fn apply(ks: &Keyspace, seq: u64, change: Change<'_>) {
    match change {
        Change::Sets(items) => {
            for (k, v, exp) in items {
                let mut s = ks.lock_key(k);
                if carried(&s, k, seq) {
                    continue;
                }
                s.note_expiry(k, exp);
                s.map.insert(k.into(), Entry { value: Value::Str(v.to_vec()), expire_ms: exp, seq });
            }
        }
        Change::HashSet { key, fresh, expire_ms, fields } => {
            let mut s = ks.lock_key(key);
            if carried(&s, key, seq) {
                return;
            }
            let e = s.map.entry(key.into()).or_insert(Entry { value: Value::Hash(Hash::default()), expire_ms: 0, seq });
            let made = fresh || !matches!(e.value, Value::Hash(_));
            if made {
                *e = Entry { value: Value::Hash(Hash::default()), expire_ms, seq };
            }
            let Value::Hash(h) = &mut e.value else { unreachable!("made a hash above") };
            for (f, v) in fields {
                h.set(f, v);
            }
            // Never lower: a list's later change carried by a snapshot is told by it.
            e.seq = e.seq.max(seq);
            if made {
                s.note_expiry(key, expire_ms);
            }
        }
        Change::List { key, fresh, gone, expire_ms, op } => {
            let mut s = ks.lock_key(key);
            let made = || Value::List(List::new());
            if let Some(Entry { value: Value::List(l), seq: at, .. }) =
                collection(&mut s, key, seq, fresh, gone, expire_ms, made)
            {
                list::apply(l, &op);
                *at = seq;
            }
        }
        Change::Members { key, fresh, gone, expire_ms, add, members } => {
            let mut s = ks.lock_key(key);
            let made = || Value::Set(Set::default());
            if let Some(Entry { value: Value::Set(set), seq: at, .. }) =
                collection(&mut s, key, seq, fresh, gone, expire_ms, made)
            {
                for m in members {
                    if add {
                        set.add(m);
                    } else {
                        set.remove(m);
                    }
                }
                *at = seq;
            }
        }
        Change::Scores { key, fresh, gone, expire_ms, set, removed } => {
            let mut s = ks.lock_key(key);
            let made = || Value::ZSet(ZSet::default());
            if let Some(Entry { value: Value::ZSet(z), seq: at, .. }) =
                collection(&mut s, key, seq, fresh, gone, expire_ms, made)
            {
                for (m, bits) in set {
                    let score = f64::from_bits(bits);
                    // A record's scores were never NaN; a damaged one's are not let in.
                    if !score.is_nan() {
                        z.insert(m, score);
                    }
                }
                for m in removed {
                    z.remove(m);
                }
                *at = seq;
            }
        }
        Change::HashDel { key, fields } => {
            let mut s = ks.lock_key(key);
            if carried(&s, key, seq) {
                return;
            }
            let emptied = match s.map.get_mut(key) {
                Some(Entry { value: Value::Hash(h), seq: at, .. }) => {
                    for f in fields {
                        h.remove(f);
                    }
                    *at = (*at).max(seq);
                    h.is_empty()
                }
                _ => false,
            };
            if emptied {
                s.map.remove(key);
                s.removed_seq = seq;
            }
        }
        Change::Del(keys) => {
            for k in keys {
                let mut s = ks.lock_key(k);
                if carried(&s, k, seq) {
                    continue;
                }
                s.map.remove(k);
                s.removed_seq = seq;
            }
        }
        Change::Expire(k, at) => {
            let mut s = ks.lock_key(k);
            if carried(&s, k, seq) {
                return;
            }
            if let Some(e) = s.map.get_mut(k) {
                e.expire_ms = at;
                e.seq = e.seq.max(seq);
                s.note_expiry(k, at);
            }
        }
        Change::Flush | Change::FlushDb => {
            for i in 0..ks.shards() {
                ks.lock(i).clear(seq);
            }
        }
        // Needs every database: [`apply_in`] does it.
        Change::SwapDb(..) => {}
        Change::Commit { .. } => {}
    }
}

/// Recovers `dir` into `dbs` (empty), at `now_ms`; then writes a new snapshot if logs were
/// replayed and removes the logs it covers, so the new run starts a generation of its own.
pub fn recover(dir_path: &Path, dbs: &Databases, now_ms: i64) -> Result<Recovery, String> {
    let shown = dir_path.display().to_string();
    let _ = std::fs::remove_file(dir_path.join("snapshot.tmp"));
    let snap = snapshot::load(dir_path, dbs)?;
    let (base, snap_gen) = snap.as_ref().map_or((0, 0), |s| (s.base, s.gen));
    let segs = dir::segments(dir_path).map_err(|e| format!("{shown}: {e}"))?;
    let mut logs: BTreeMap<(u64, usize), Vec<std::path::PathBuf>> = BTreeMap::new();
    let mut max_gen = snap_gen;
    for ((g, e, _), p) in &segs {
        max_gen = max_gen.max(*g);
        if *g >= snap_gen {
            logs.entry((*g, *e)).or_default().push(p.clone());
        }
    }
    let mut r = Recovery { beyond: snap.map_or(0, |s| s.beyond), ..Recovery::default() };
    let mut all: Vec<(u64, usize, At)> = Vec::new();
    let mut data: Vec<Vec<Vec<u8>>> = Vec::new();
    for (&(gen, _), paths) in &logs {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let mut segs = Vec::new();
        for p in paths {
            segs.push(std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?);
        }
        let w = walk(&segs, &names, gen, &mut r.notes)?;
        let li = data.len();
        all.extend(w.records.into_iter().map(|(seq, at)| (seq, li, at)));
        data.push(segs);
    }
    all.sort_unstable_by_key(|x| x.0);
    let mut expect = base + 1;
    let mut dropped = 0u64;
    for (i, &(seq, li, (si, off))) in all.iter().enumerate() {
        if i > 0 && all[i - 1].0 == seq {
            return Err(format!("{shown}: change {seq} is in two logs; the directory mixes two stores' files"));
        }
        if seq < expect {
            continue;
        }
        if seq > expect {
            dropped = (all.len() - i) as u64;
            break;
        }
        let rec = &data[li][si][off..];
        let Read::Record { change, .. } = read(rec, MAX_RECORD) else {
            return Err(format!("{shown}: a record read once did not read again"));
        };
        if !apply_in(dbs, db_of(rec), seq, change) {
            r.beyond += 1;
        }
        r.replayed += 1;
        expect += 1;
    }
    if dropped > 0 {
        r.notes.push(format!(
            "{shown}: change {expect} never reached the disk (a crash while it was written); the {dropped} changes \
             after it were not acknowledged and are dropped"
        ));
    }
    if r.beyond > 0 {
        r.notes.push(format!(
            "{shown}: {} changes were to databases beyond the {} configured (`databases` was larger before) and \
             are left out (start it with as many `--databases` as before to keep them)",
            r.beyond,
            dbs.len()
        ));
    }
    r.last = expect - 1;
    r.expired = dbs.iter().map(|ks| ks.drop_expired(now_ms)).sum();
    r.keys = dbs.keys();
    if segs.is_empty() {
        r.gen = snap_gen.max(1);
        return Ok(r);
    }
    r.gen = max_gen + 1;
    snapshot::write(dir_path, dbs, r.last, r.gen, || Ok(()))?;
    for ((g, ..), p) in &segs {
        if *g < r.gen {
            dir::recycle(p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    dir::sync_dir(dir_path).map_err(|e| format!("{shown}: {e}"))?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Journal;
    use crate::log::order::Order;
    use crate::log::stage::Stage;
    use std::sync::Arc;

    /// A scratch directory, removed on drop.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let p = std::env::temp_dir().join(format!("sirocco-store-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Scratch(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A log of generation 1, engine `e`: one commit per element of `commits`, each setting
    /// `key{n}` to `v{n}` for its numbers; segments of `seg` bytes.
    fn write_log(dir: &Path, order: &Arc<Order>, e: usize, commits: &[usize], seg: usize) -> Vec<(usize, usize)> {
        let mut st = Stage::new(order.clone(), e);
        let mut segs: Vec<Vec<u8>> = vec![Vec::new()];
        let mut places = Vec::new();
        let mut out = Vec::new();
        let mut prev = 0;
        for &n in commits {
            for _ in 0..n {
                let seq = order.last() + 1;
                let (k, v) = (format!("key{seq}"), format!("v{seq}"));
                st.sets(&[(k.as_bytes(), v.as_bytes(), 0)]);
            }
            prev = st.take_commit(&mut out, 1, prev).map_or(prev, |t| t.last);
            st.settled(None);
            if segs.last().unwrap().len() + out.len() > seg {
                segs.push(Vec::new());
            }
            let last = segs.len() - 1;
            places.push((last, segs[last].len()));
            segs[last].extend_from_slice(&out);
        }
        for (i, mut s) in segs.into_iter().enumerate() {
            s.resize(seg, 0);
            std::fs::write(dir.join(dir::segment_name(1, e, i as u32)), s).unwrap();
        }
        places
    }

    fn damage(dir: &Path, e: usize, seg: usize, at: usize) {
        let p = dir.join(dir::segment_name(1, e, seg as u32));
        let mut b = std::fs::read(&p).unwrap();
        b[at] ^= 0x40;
        std::fs::write(&p, b).unwrap();
    }

    #[test]
    fn replays_across_segments_and_engines_then_starts_a_generation() {
        let d = Scratch::new("replay");
        let order = Arc::new(Order::new(2, 0));
        // Engine 0 took 1-3, engine 1 took 4-5.
        write_log(&d.0, &order, 0, &[3], 8192);
        write_log(&d.0, &order, 1, &[2], 8192);
        let ks_dbs = Databases::new(1, 4);
        let ks = ks_dbs.first();
        let r = recover(&d.0, &ks_dbs, 0).unwrap();
        assert_eq!((r.last, r.replayed, r.keys, r.gen), (5, 5, 5, 2), "{:?}", r.notes);
        assert_eq!(
            ks.lock_key(b"key4").map.get(&b"key4"[..]).map(|e| e.value.clone()),
            Some(Value::Str(b"v4".to_vec()))
        );
        // The snapshot now holds it all and the old logs are gone.
        assert!(dir::segments(&d.0).unwrap().is_empty());
        let again_dbs = Databases::new(1, 1);
        let r2 = recover(&d.0, &again_dbs, 0).unwrap();
        assert_eq!((r2.last, r2.keys, r2.gen), (5, 5, 2));
    }

    #[test]
    fn a_torn_last_commit_is_cut_off_with_a_note() {
        let d = Scratch::new("torn");
        let order = Arc::new(Order::new(1, 0));
        let places = write_log(&d.0, &order, 0, &[2, 3, 2], 3 * BLOCK);
        // Damage the last commit (numbers 6-7): a torn write.
        let (seg, off) = places[2];
        damage(&d.0, 0, seg, off + COMMIT_SIZE + 30);
        let ks_dbs = Databases::new(1, 1);
        let r = recover(&d.0, &ks_dbs, 0).unwrap();
        assert_eq!((r.last, r.keys), (5, 5));
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("torn write"), "{}", r.notes[0]);
    }

    #[test]
    fn damage_before_a_good_commit_stops_the_start() {
        for (name, which) in [("mid", 1), ("head", 0)] {
            let d = Scratch::new(name);
            let order = Arc::new(Order::new(1, 0));
            // Two segments: the damaged commit in the first, good ones after it.
            let places = write_log(&d.0, &order, 0, &[2, 3, 2, 1], 2 * BLOCK);
            let (seg, off) = places[which];
            damage(&d.0, 0, seg, off + if which == 0 { 3 } else { COMMIT_SIZE + 40 });
            let ks_dbs = Databases::new(1, 1);
            let e = recover(&d.0, &ks_dbs, 0).unwrap_err();
            assert!(e.contains("refusing to start") && e.contains("a good commit follows"), "{e}");
            // Nothing was removed: the operator decides.
            assert_eq!(dir::segments(&d.0).unwrap().len(), 2);
        }
    }

    #[test]
    fn a_lost_commit_at_a_segments_end_is_damage_not_an_end() {
        let d = Scratch::new("chain");
        let order = Arc::new(Order::new(1, 0));
        // One commit per segment: the header of the second is zeroed (the segment then looks
        // ended), and the third, in the next segment, follows it.
        let places = write_log(&d.0, &order, 0, &[1, 1, 1], BLOCK);
        let (seg, _) = places[1];
        std::fs::write(d.0.join(dir::segment_name(1, 0, seg as u32)), vec![0u8; BLOCK]).unwrap();
        let ks_dbs = Databases::new(1, 1);
        let e = recover(&d.0, &ks_dbs, 0).unwrap_err();
        assert!(e.contains("a commit before it is missing"), "{e}");
    }

    #[test]
    fn a_recycled_segments_old_commits_are_not_this_logs() {
        let d = Scratch::new("recycled");
        let order = Arc::new(Order::new(1, 0));
        // Generation 1 wrote a full segment; it is reused by generation 2, which wrote one
        // commit at its start over the old data.
        write_log(&d.0, &order, 0, &[1, 1, 1, 1], 4 * BLOCK);
        let old = d.0.join(dir::segment_name(1, 0, 0));
        let mut b = std::fs::read(&old).unwrap();
        std::fs::remove_file(&old).unwrap();
        let mut st = Stage::new(order.clone(), 0);
        st.sets(&[(b"new", b"1", 0)]);
        let mut out = Vec::new();
        st.take_commit(&mut out, 2, 0);
        b[..out.len()].copy_from_slice(&out);
        std::fs::write(d.0.join(dir::segment_name(2, 0, 0)), &b).unwrap();
        // A snapshot of generation 2 at change 4 stands for what generation 1 held.
        let ks_dbs = Databases::new(1, 1);
        crate::log::snapshot::write(&d.0, &ks_dbs, 4, 2, || Ok(())).unwrap();
        let r = recover(&d.0, &ks_dbs, 0).unwrap();
        assert_eq!((r.last, r.keys, r.replayed), (5, 1, 1), "{:?}", r.notes);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn a_hole_in_the_order_ends_the_replay() {
        let d = Scratch::new("hole");
        let order = Arc::new(Order::new(2, 0));
        write_log(&d.0, &order, 0, &[2], 4096); // 1-2
        write_log(&d.0, &order, 1, &[1], 4096); // 3: lost below
        std::fs::write(d.0.join(dir::segment_name(1, 1, 0)), vec![0u8; 4096]).unwrap();
        // Engine 0 went on with 4-5 in a second segment of its own.
        let mut st = Stage::new(order.clone(), 0);
        st.sets(&[(b"key4", b"v4", 0)]);
        st.sets(&[(b"key5", b"v5", 0)]);
        let mut out = Vec::new();
        st.take_commit(&mut out, 1, 2);
        std::fs::write(d.0.join(dir::segment_name(1, 0, 1)), &out).unwrap();
        let ks_dbs = Databases::new(1, 1);
        let r = recover(&d.0, &ks_dbs, 0).unwrap();
        assert_eq!((r.last, r.keys), (2, 2));
        assert!(r.notes.iter().any(|n| n.contains("change 3 never reached the disk")), "{:?}", r.notes);
    }

    #[test]
    fn keys_that_expired_while_down_are_dropped() {
        let d = Scratch::new("expiry");
        let order = Arc::new(Order::new(1, 0));
        let mut st = Stage::new(order.clone(), 0);
        st.sets(&[(b"gone", b"1", 1_000), (b"kept", b"2", 5_000), (b"always", b"3", 0)]);
        st.expire(b"always", 1_500);
        st.expire(b"always", 0);
        let mut out = Vec::new();
        st.take_commit(&mut out, 1, 0);
        std::fs::write(d.0.join(dir::segment_name(1, 0, 0)), &out).unwrap();
        let ks_dbs = Databases::new(1, 1);
        let ks = ks_dbs.first();
        let r = recover(&d.0, &ks_dbs, 2_000).unwrap();
        assert_eq!((r.keys, r.expired), (2, 1));
        let s = ks.lock(0);
        assert_eq!(s.map.get(&b"kept"[..]).map(|e| e.expire_ms), Some(5_000));
        assert_eq!(s.map.get(&b"always"[..]).map(|e| e.expire_ms), Some(0));
    }
}
