//! Reading RDB files, sans-IO: what a Redis 7.0 or 7.2 primary sends a replica at a full sync
//! (RDB 10 and 11) — its compact encodings (listpacks, intsets, quicklists, 7.2's listpack
//! sets), integer and LZF-compressed strings, expiries, auxiliary fields — as keys and values. Every length is checked against the bytes
//! there are: a damaged or hostile file is an error, never a panic or a huge allocation.

use crate::hash::Hash;
use crate::keyspace::Value;
use crate::list::List;
use crate::set::Set;
use crate::zset::ZSet;

/// A key read from the file.
pub struct Loaded {
    /// Its database.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
    /// Its value.
    pub value: Value,
    /// When it expires, Unix ms (0: never).
    pub expire_ms: i64,
}

/// What a file held.
#[derive(Debug, Default)]
pub struct Summary {
    /// Keys read.
    pub keys: u64,
}

struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

type R<T> = Result<T, String>;

fn bad<T>(what: &str, at: usize) -> R<T> {
    Err(format!("RDB: {what} at byte {at}"))
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        match self.at.checked_add(n).filter(|&e| e <= self.b.len()) {
            Some(end) => {
                let s = &self.b[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => bad("cut short", self.at),
        }
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    /// A length; `Err(enc)` in the Ok: a special string encoding instead.
    fn len_or_enc(&mut self) -> R<Result<u64, u8>> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Ok(u64::from(b & 0x3f)),
            1 => Ok(u64::from(b & 0x3f) << 8 | u64::from(self.u8()?)),
            2 if b == 0x80 => Ok(u64::from(u32::from_be_bytes(self.take(4)?.try_into().unwrap_or_default()))),
            2 if b == 0x81 => Ok(u64::from_be_bytes(self.take(8)?.try_into().unwrap_or_default())),
            2 => return bad("unknown length encoding", self.at - 1),
            _ => Err(b & 0x3f),
        })
    }

    fn len(&mut self) -> R<u64> {
        match self.len_or_enc()? {
            Ok(n) => Ok(n),
            Err(_) => bad("a string encoding where a length belongs", self.at - 1),
        }
    }

    /// A count of things each at least `min` bytes long: no more than the bytes left allow.
    fn count(&mut self, min: usize) -> R<usize> {
        let n = self.len()?;
        if n > ((self.b.len() - self.at) / min.max(1)) as u64 {
            return bad("a count beyond the file", self.at);
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> R<Vec<u8>> {
        match self.len_or_enc()? {
            Ok(n) => Ok(self.take(usize::try_from(n).unwrap_or(usize::MAX))?.to_vec()),
            Err(0) => Ok((self.u8()? as i8).to_string().into_bytes()),
            Err(1) => Ok(i16::from_le_bytes(self.take(2)?.try_into().unwrap_or_default()).to_string().into_bytes()),
            Err(2) => Ok(i32::from_le_bytes(self.take(4)?.try_into().unwrap_or_default()).to_string().into_bytes()),
            Err(3) => {
                let clen = self.len()?;
                let ulen = self.len()?;
                let packed = self.take(usize::try_from(clen).unwrap_or(usize::MAX))?;
                lzf(packed, ulen).ok_or_else(|| format!("RDB: damaged compressed string at byte {}", self.at))
            }
            Err(_) => bad("unknown string encoding", self.at - 1),
        }
    }
}

/// LZF decompression (Redis's `lzf_decompress`) of `inp` into exactly `ulen` bytes.
fn lzf(inp: &[u8], ulen: u64) -> Option<Vec<u8>> {
    // An LZF back-reference makes at most 264 bytes of 2: a longer claim is damage.
    if ulen > (inp.len() as u64).saturating_mul(132) + 64 {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(ulen as usize);
    let mut i = 0;
    while i < inp.len() {
        let ctrl = usize::from(inp[i]);
        i += 1;
        if ctrl < 32 {
            let lit = inp.get(i..i + ctrl + 1)?;
            out.extend_from_slice(lit);
            i += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*inp.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*inp.get(i)?) + 1;
            i += 1;
            let from = out.len().checked_sub(back)?;
            for k in 0..len + 2 {
                let c = out[from + k];
                out.push(c);
            }
        }
        if out.len() as u64 > ulen {
            return None;
        }
    }
    (out.len() as u64 == ulen).then_some(out)
}

/// The elements of a listpack (integers as their decimal text).
fn listpack(lp: &[u8]) -> Option<Vec<Vec<u8>>> {
    let total = u32::from_le_bytes(lp.get(..4)?.try_into().ok()?) as usize;
    if total != lp.len() || total < 7 {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 6;
    loop {
        let b = *lp.get(i)?;
        if b == 0xff {
            return (i + 1 == lp.len()).then_some(out);
        }
        let (value, size): (Vec<u8>, usize) = if b & 0x80 == 0 {
            ((b & 0x7f).to_string().into_bytes(), 1)
        } else if b & 0xc0 == 0x80 {
            let n = usize::from(b & 0x3f);
            (lp.get(i + 1..i + 1 + n)?.to_vec(), 1 + n)
        } else if b & 0xe0 == 0xc0 {
            let v = (i32::from(b & 0x1f) << 8) | i32::from(*lp.get(i + 1)?);
            let v = if v >= 1 << 12 { v - (1 << 13) } else { v };
            (v.to_string().into_bytes(), 2)
        } else if b & 0xf0 == 0xe0 {
            let n = (usize::from(b & 0x0f) << 8) | usize::from(*lp.get(i + 1)?);
            (lp.get(i + 2..i + 2 + n)?.to_vec(), 2 + n)
        } else {
            let int = |w: usize| -> Option<i64> {
                let mut v = [0u8; 8];
                v[..w].copy_from_slice(lp.get(i + 1..i + 1 + w)?);
                let x = i64::from_le_bytes(v);
                let shift = 64 - 8 * w as u32;
                Some((x << shift) >> shift)
            };
            match b {
                0xf0 => {
                    let n = u32::from_le_bytes(lp.get(i + 1..i + 5)?.try_into().ok()?) as usize;
                    (lp.get(i + 5..(i + 5).checked_add(n)?)?.to_vec(), 5 + n)
                }
                0xf1 => (int(2)?.to_string().into_bytes(), 3),
                0xf2 => (int(3)?.to_string().into_bytes(), 4),
                0xf3 => (int(4)?.to_string().into_bytes(), 5),
                0xf4 => (int(8)?.to_string().into_bytes(), 9),
                _ => return None,
            }
        };
        let backlen = match size {
            0..=127 => 1,
            128..=16382 => 2,
            16383..=2097150 => 3,
            2097151..=268435454 => 4,
            _ => 5,
        };
        out.push(value);
        i = i.checked_add(size + backlen)?;
    }
}

/// The members of an intset, as decimal text.
fn intset(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let width = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let n = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as usize;
    if ![2, 4, 8].contains(&width) || b.len() != 8 + n.checked_mul(width)? {
        return None;
    }
    Some(
        b[8..]
            .chunks(width)
            .map(|c| {
                let mut v = [0u8; 8];
                v[..width].copy_from_slice(c);
                let shift = 64 - 8 * width as u32;
                ((i64::from_le_bytes(v) << shift) >> shift).to_string().into_bytes()
            })
            .collect(),
    )
}

fn score_of(text: &[u8]) -> Option<f64> {
    resp::float::parse_f64_lenient(text).filter(|s| !s.is_nan())
}

fn zset_of(pairs: Vec<Vec<u8>>) -> Option<Value> {
    if !pairs.len().is_multiple_of(2) {
        return None;
    }
    let mut z = ZSet::default();
    for p in pairs.chunks(2) {
        z.insert(&p[0], score_of(&p[1])?);
    }
    Some(Value::ZSet(z))
}

fn hash_of(pairs: Vec<Vec<u8>>) -> Option<Value> {
    if !pairs.len().is_multiple_of(2) {
        return None;
    }
    let mut h = Hash::default();
    for p in pairs.chunks(2) {
        h.set(&p[0], &p[1]);
    }
    Some(Value::Hash(h))
}

fn set_of(members: Vec<Vec<u8>>) -> Value {
    let mut s = Set::default();
    for m in &members {
        s.add(m);
    }
    Value::Set(s)
}

/// A value of RDB type `t`.
fn value(c: &mut Cur<'_>, t: u8) -> R<Value> {
    let at = c.at;
    let damaged = || format!("RDB: damaged value of type {t} at byte {at}");
    Ok(match t {
        0 => Value::Str(c.string()?),
        1 | 2 => {
            let n = c.count(1)?;
            let items = (0..n).map(|_| c.string()).collect::<R<Vec<_>>>()?;
            if t == 1 {
                Value::List(items.into_iter().map(Vec::into_boxed_slice).collect::<List>())
            } else {
                set_of(items)
            }
        }
        3 | 5 => {
            let n = c.count(2)?;
            let mut z = ZSet::default();
            for _ in 0..n {
                let m = c.string()?;
                let s = if t == 5 {
                    f64::from_le_bytes(c.take(8)?.try_into().unwrap_or_default())
                } else {
                    match c.u8()? {
                        253 => f64::NAN,
                        254 => f64::INFINITY,
                        255 => f64::NEG_INFINITY,
                        n => score_of(c.take(usize::from(n))?).ok_or_else(damaged)?,
                    }
                };
                if s.is_nan() {
                    return Err(damaged());
                }
                z.insert(&m, s);
            }
            Value::ZSet(z)
        }
        4 => {
            let n = c.count(2)?;
            let mut h = Hash::default();
            for _ in 0..n {
                let f = c.string()?;
                let v = c.string()?;
                h.set(&f, &v);
            }
            Value::Hash(h)
        }
        11 => set_of(intset(&c.string()?).ok_or_else(damaged)?),
        16 => hash_of(listpack(&c.string()?).ok_or_else(damaged)?).ok_or_else(damaged)?,
        17 => zset_of(listpack(&c.string()?).ok_or_else(damaged)?).ok_or_else(damaged)?,
        // Redis 7.2 (RDB 11): a small set of any members as a listpack.
        20 => set_of(listpack(&c.string()?).ok_or_else(damaged)?),
        18 => {
            let nodes = c.count(2)?;
            let mut l = List::new();
            for _ in 0..nodes {
                let container = c.len()?;
                let data = c.string()?;
                match container {
                    1 => l.push_back(data.into_boxed_slice()),
                    2 => l.extend(listpack(&data).ok_or_else(damaged)?.into_iter().map(Vec::into_boxed_slice)),
                    _ => return Err(damaged()),
                }
            }
            Value::List(l)
        }
        9 | 10 | 12 | 13 | 14 => {
            return Err(format!(
                "RDB: a value in an encoding of Redis before 7.0 (type {t}) at byte {at}: load the file into Redis 7 \
                 and let it write it again"
            ))
        }
        15 | 19 => return Err(format!("RDB: a stream (type {t}) at byte {at}: streams are not served")),
        6 | 7 => return Err(format!("RDB: a module's value (type {t}) at byte {at}: modules are not served")),
        _ => return bad("unknown value type", at),
    })
}

/// Reads a whole RDB file, calling `key` for each key that is live at `now_ms`.
pub fn load(b: &[u8], now_ms: i64, mut key: impl FnMut(Loaded)) -> R<Summary> {
    if b.len() < 9 || &b[..5] != b"REDIS" {
        return Err("RDB: not an RDB file (no REDIS signature)".into());
    }
    let version: u32 = std::str::from_utf8(&b[5..9]).ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    if !(1..=11).contains(&version) {
        return Err(format!("RDB: version {version} is not read (Redis 7.0 writes 10, 7.2 writes 11)"));
    }
    let mut c = Cur { b, at: 9 };
    let mut sum = Summary::default();
    let (mut db, mut expire_ms) = (0u64, 0i64);
    loop {
        let op = c.u8()?;
        match op {
            0xff => break,
            0xfe => db = c.len()?,
            0xfb => {
                c.len()?;
                c.len()?;
            }
            0xfa => {
                c.string()?;
                c.string()?;
            }
            0xfc => expire_ms = i64::from_le_bytes(c.take(8)?.try_into().unwrap_or_default()),
            0xfd => expire_ms = i64::from(u32::from_le_bytes(c.take(4)?.try_into().unwrap_or_default())) * 1000,
            0xf8 => {
                c.len()?;
            }
            0xf9 => {
                c.u8()?;
            }
            0xf5 => {
                // A function library: its code, which the store does not run.
                c.string()?;
            }
            0xf7 | 0xf6 => return bad("module or function data the store cannot read", c.at - 1),
            t => {
                let k = c.string()?;
                let v = value(&mut c, t)?;
                let exp = std::mem::take(&mut expire_ms);
                if exp == 0 || exp > now_ms {
                    sum.keys += 1;
                    key(Loaded { db: usize::try_from(db).unwrap_or(usize::MAX), key: k, value: v, expire_ms: exp });
                }
            }
        }
    }
    if version >= 5 {
        let sum_at = c.at;
        let want = u64::from_le_bytes(c.take(8)?.try_into().unwrap_or_default());
        if want != 0 && super::rdb::crc64(0, &b[..sum_at]) != want {
            return Err("RDB: checksum mismatch (the file was damaged)".into());
        }
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::{Entry, Keyspace};

    #[test]
    fn what_the_writer_writes_reads_back() {
        let ks = Keyspace::new(4);
        let mut z = ZSet::default();
        z.insert(b"a", 1.5);
        z.insert(b"b", f64::NEG_INFINITY);
        let mut h = Hash::default();
        h.set(b"f", b"v");
        let values = [
            (&b"s"[..], Value::Str(b"x".repeat(300)), 0),
            (b"z", Value::ZSet(z), 0),
            (b"h", Value::Hash(h), 4_000_000_000_000),
            (b"l", Value::List([b"1", b"2"].iter().map(|v| Box::from(&v[..])).collect()), 0),
            (b"set", set_of(vec![b"3".to_vec(), b"1".to_vec()]), 0),
        ];
        for (k, v, e) in &values {
            ks.lock_key(k).map.insert(Box::from(*k), Entry { value: v.clone(), expire_ms: *e, seq: 1 });
        }
        let file = super::super::rdb::write([&ks], 1000, true);
        let mut got = Vec::new();
        let sum = load(&file, 1000, |l| got.push((l.key, l.value, l.expire_ms))).unwrap();
        assert_eq!(sum.keys, 5);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want: Vec<_> = values.iter().map(|(k, v, e)| (k.to_vec(), v.clone(), *e)).collect();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert!(got == want);
        let mut broken = file.clone();
        let mid = broken.len() / 2;
        broken[mid] ^= 1;
        assert!(load(&broken, 1000, |_| {}).is_err());
    }

    #[test]
    fn a_file_of_redis_encodings() {
        let lp: &[u8] = &[13, 0, 0, 0, 2, 0, 0x81, b'f', 2, 0x81, b'v', 2, 0xff];
        let mut enc = b"REDIS0010".to_vec();
        enc.extend_from_slice(&[0xfe, 0, 16, 1, b'h', lp.len() as u8]);
        enc.extend_from_slice(lp);
        enc.extend_from_slice(&[11, 1, b'i', 12, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 2, 0]);
        enc.extend_from_slice(&[18, 1, b'q', 1, 2, lp.len() as u8]);
        enc.extend_from_slice(lp);
        enc.extend_from_slice(&[0, 1, b'c', 0xc3, 5, 10, 0, b'a', 7 << 5, 0, 0]);
        enc.push(0xff);
        enc.extend_from_slice(&[0; 8]);
        let mut got = Vec::new();
        load(&enc, 0, |k| got.push((k.key, k.value))).unwrap();
        assert_eq!(got.len(), 4);
        assert!(matches!(&got[0].1, Value::Hash(h) if h.get(b"f") == Some(&b"v"[..])));
        assert!(matches!(&got[1].1, Value::Set(s) if s.contains(b"1") && s.contains(b"2")));
        assert!(matches!(&got[2].1, Value::List(l) if l.len() == 2));
        assert_eq!(got[3].1, Value::Str(b"aaaaaaaaaa".to_vec()));
        // RDB 11 (Redis 7.2): a set as a listpack (type 20).
        let mut v11 = b"REDIS0011".to_vec();
        v11.extend_from_slice(&[0xfe, 0, 20, 1, b's', lp.len() as u8]);
        v11.extend_from_slice(lp);
        v11.push(0xff);
        v11.extend_from_slice(&[0; 8]);
        let mut got = Vec::new();
        load(&v11, 0, |k| got.push(k.value)).unwrap();
        assert!(matches!(&got[..], [Value::Set(s)] if s.contains(b"f") && s.contains(b"v") && s.len() == 2));
        assert!(load(b"REDIS0012\xff", 0, |_| {}).is_err(), "a version after 11 is refused");
    }

    #[test]
    fn compact_encodings() {
        // A listpack of "a", 5, -300, "hello" (as Redis writes it).
        let mut lp = vec![0, 0, 0, 0, 4, 0];
        lp.extend_from_slice(&[0x81, b'a', 2]);
        lp.extend_from_slice(&[5, 1]);
        let v = (-300i32 + (1 << 13)) as u16;
        lp.extend_from_slice(&[0xc0 | (v >> 8) as u8, v as u8, 2]);
        lp.extend_from_slice(&[0x85, b'h', b'e', b'l', b'l', b'o', 6]);
        lp.push(0xff);
        let n = lp.len() as u32;
        lp[..4].copy_from_slice(&n.to_le_bytes());
        let got = listpack(&lp).unwrap();
        assert_eq!(got, [b"a".to_vec(), b"5".to_vec(), b"-300".to_vec(), b"hello".to_vec()]);
        let mut is = vec![2, 0, 0, 0, 2, 0, 0, 0];
        is.extend_from_slice(&(-2i16).to_le_bytes());
        is.extend_from_slice(&7i16.to_le_bytes());
        assert_eq!(intset(&is).unwrap(), [b"-2".to_vec(), b"7".to_vec()]);
        // "aaaaaaaaaa": a literal "a", then a back-reference of 9 bytes at distance 1.
        assert_eq!(lzf(&[0, b'a', 7 << 5, 0, 0], 10).unwrap(), b"aaaaaaaaaa");
        assert!(lzf(&[0, b'a', 7 << 5, 0, 5], 10).is_none(), "a reference before the start");
    }
}
