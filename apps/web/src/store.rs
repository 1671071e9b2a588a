//! An engine's packetised objects: for each file served, its whole `200` response (head and
//! body) cut into segment-sized masters (see [`crate::segment`]). The head depends on the
//! date and on whether the connection stays open, so segment 0 has two masters, rebuilt at
//! most once a second when the object is used; the rest are shared by every response.
//! Objects are made at start when the tree fits `cap` bytes, otherwise on first request, and
//! evicted least-recently-used once no response in flight uses them.

use crate::segment::{self, HEADER};
use crate::site::Site;
use http::response::Head;
use std::sync::Arc;

/// Statistics of the store.
#[derive(Debug, Default, Clone, Copy)]
pub struct StoreStats {
    /// Objects packetised.
    pub packetised: u64,
    /// Segments built for them.
    pub segments_built: u64,
    /// Objects evicted to make room.
    pub evicted: u64,
    /// Segment-0 masters rebuilt for a new date.
    pub heads_refreshed: u64,
    /// Files read on first request.
    pub read_on_demand: u64,
    /// Files that could not be read.
    pub read_errors: u64,
}

/// One packetised response.
pub struct Obj {
    live: bool,
    refs: u32,
    last: u64,
    file: u32,
    /// Length of the response head.
    pub head_len: u32,
    /// Length of the body (the file).
    pub body_len: u64,
    /// Payload bytes per segment.
    payload: u32,
    head_date: u64,
    heads: [Vec<u8>; 2],
    segs: Vec<u8>,
    /// What the head says.
    pub etag: String,
    /// Modification time.
    pub mtime: u64,
    /// Content-Type.
    pub content_type: &'static str,
}

impl Obj {
    /// Response length.
    pub fn total(&self) -> u64 {
        u64::from(self.head_len) + self.body_len
    }

    /// Number of segments.
    pub fn segments(&self) -> u64 {
        self.total().div_ceil(u64::from(self.payload))
    }

    /// The date the segment-0 masters carry.
    pub fn head_date(&self) -> u64 {
        self.head_date
    }

    /// Payload length of segment `k`.
    pub fn seg_len(&self, k: u64) -> u32 {
        let p = u64::from(self.payload);
        (self.total() - k * p).min(p) as u32
    }

    /// The master of segment `k`; `close` picks the head that says `Connection: close`.
    pub fn master(&self, k: u64, close: bool) -> &[u8] {
        if k == 0 {
            return &self.heads[usize::from(close)];
        }
        let stride = HEADER + self.payload as usize;
        let at = (k as usize - 1) * stride;
        &self.segs[at..at + HEADER + self.seg_len(k) as usize]
    }

    /// The head for `date`.
    pub fn head(&self, date: u64, close: bool, out: &mut Vec<u8>) {
        let mut h = Head::new(200, date, !close);
        h.content_type = Some(self.content_type);
        h.content_length = self.body_len;
        h.last_modified = Some(self.mtime);
        h.etag = Some(&self.etag);
        h.accept_ranges = true;
        h.write(out);
    }

    /// Copies the response bytes at `off..off + dst.len()` — for a response dated `date` —
    /// into `dst`, from the masters (a head for another date is formatted again).
    pub fn fill(&self, mut off: u64, dst: &mut [u8], close: bool, date: u64) {
        let p = u64::from(self.payload);
        let mut done = 0;
        while done < dst.len() {
            let k = off / p;
            let within = (off % p) as usize;
            let n = (self.seg_len(k) as usize - within).min(dst.len() - done);
            let out = &mut dst[done..done + n];
            if k == 0 && date != self.head_date && within < self.head_len as usize {
                let mut h = Vec::with_capacity(self.head_len as usize);
                self.head(date, close, &mut h);
                let m = self.master(0, close);
                for (i, b) in out.iter_mut().enumerate() {
                    let at = within + i;
                    *b = if at < h.len() { h[at] } else { m[HEADER + at] };
                }
            } else {
                let m = self.master(k, close);
                out.copy_from_slice(&m[HEADER + within..HEADER + within + n]);
            }
            done += n;
            off += n as u64;
        }
    }

    /// Body bytes at `from..` into `dst` (for ranges).
    pub fn fill_body(&self, from: u64, dst: &mut [u8]) {
        let off = u64::from(self.head_len) + from;
        // Segment 0's body part is the same under either head.
        self.fill(off, dst, false, self.head_date);
    }

    fn build_heads(&mut self, date: u64) {
        let mut h = Vec::with_capacity(self.head_len as usize);
        for close in [false, true] {
            h.clear();
            self.head(date, close, &mut h);
            debug_assert_eq!(h.len(), self.head_len as usize);
            let first_body = (self.payload as usize - h.len()).min(self.body_len as usize);
            // The body part of segment 0 is in the old master, or in the builder's body.
            let old = std::mem::take(&mut self.heads[usize::from(close)]);
            let body0: Vec<u8> = old[HEADER + h.len()..HEADER + h.len() + first_body].to_vec();
            let mut payload = h.clone();
            payload.extend_from_slice(&body0);
            let mut m = old;
            m.clear();
            segment::build_master(&payload, &mut m);
            self.heads[usize::from(close)] = m;
        }
        self.head_date = date;
    }
}

const NONE: u32 = u32::MAX;

/// The packetised objects of one engine.
pub struct Store {
    site: Arc<Site>,
    payload: u32,
    objs: Vec<Obj>,
    /// Per slot: bumped each time the slot's object is dropped.
    incarnations: Vec<u32>,
    /// Slots dropped since [`Store::drain_dropped`] last ran.
    dropped: Vec<u32>,
    free: Vec<u32>,
    by_file: Vec<u32>,
    bytes: u64,
    cap: u64,
    tick: u64,
    date: u64,
    /// Counters.
    pub stats: StoreStats,
}

/// Smallest segment payload for which prepared segments are used: the head must fit in
/// segment 0 with room to spare.
pub const MIN_PAYLOAD: u32 = 1024;

impl Store {
    /// A store for `site`, segments of `payload` bytes, at most `cap` bytes of masters
    /// (objects in use are never evicted, so it may go over while they are).
    pub fn new(site: Arc<Site>, payload: u32, cap: u64, date: u64) -> Store {
        let files = site.files.len();
        Store {
            site,
            payload: payload.max(MIN_PAYLOAD),
            objs: Vec::new(),
            incarnations: Vec::new(),
            dropped: Vec::new(),
            free: Vec::new(),
            by_file: vec![NONE; files],
            bytes: 0,
            cap,
            tick: 0,
            date,
            stats: StoreStats::default(),
        }
    }

    /// The site served.
    pub fn site(&self) -> &Arc<Site> {
        &self.site
    }

    /// Payload bytes per segment.
    pub fn payload(&self) -> u32 {
        self.payload
    }

    /// Bytes of masters held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Objects held.
    pub fn objects(&self) -> usize {
        self.objs.len() - self.free.len()
    }

    /// Sets the current date (seconds since the epoch).
    pub fn set_date(&mut self, date: u64) {
        self.date = date;
    }

    /// The current date.
    pub fn date(&self) -> u64 {
        self.date
    }

    /// Packetises every file now if the whole site fits the cap.
    pub fn preload(&mut self) {
        if self.site.bytes > self.cap {
            return;
        }
        for f in 0..self.site.files.len() as u32 {
            if let Some(o) = self.get(f) {
                self.put(o);
            }
        }
    }

    /// The object at `slot`.
    pub fn obj(&self, slot: u32) -> &Obj {
        &self.objs[slot as usize]
    }

    /// The object of file `file`, packetised if it is not yet, with its heads for the
    /// current date; the caller holds a reference until [`Store::put`]. None if the file
    /// cannot be read.
    pub fn get(&mut self, file: u32) -> Option<u32> {
        self.tick += 1;
        let slot = match self.by_file.get(file as usize).copied() {
            Some(s) if s != NONE => s,
            Some(_) => self.packetise(file)?,
            None => return None,
        };
        let (date, tick) = (self.date, self.tick);
        let o = &mut self.objs[slot as usize];
        if o.head_date != date {
            o.build_heads(date);
            self.stats.heads_refreshed += 1;
        }
        o.refs += 1;
        o.last = tick;
        Some(slot)
    }

    /// How many times the object at `slot` was dropped: what it holds changes with it.
    #[inline]
    pub fn incarnation(&self, slot: u32) -> u32 {
        self.incarnations[slot as usize]
    }

    /// Hands each slot whose object was dropped since the last call to `each`.
    pub fn drain_dropped(&mut self, each: &mut dyn FnMut(u32)) {
        for s in self.dropped.drain(..) {
            each(s);
        }
    }

    /// Takes one more reference on an object already held.
    pub fn hold(&mut self, slot: u32) {
        self.objs[slot as usize].refs += 1;
    }

    /// Gives back a reference from [`Store::get`] or [`Store::hold`].
    pub fn put(&mut self, slot: u32) {
        let o = &mut self.objs[slot as usize];
        o.refs -= 1;
        if o.refs == 0 && !o.live {
            self.drop_obj(slot);
        }
    }

    /// Serves `site` from now on; objects of the old one go once unused.
    pub fn replace_site(&mut self, site: Arc<Site>) {
        self.by_file = vec![NONE; site.files.len()];
        self.site = site;
        for slot in 0..self.objs.len() as u32 {
            let o = &mut self.objs[slot as usize];
            if o.live {
                o.live = false;
                if o.refs == 0 {
                    self.drop_obj(slot);
                }
            }
        }
    }

    fn drop_obj(&mut self, slot: u32) {
        let o = &mut self.objs[slot as usize];
        self.bytes -= (o.segs.capacity() + o.heads[0].capacity() + o.heads[1].capacity()) as u64;
        o.segs = Vec::new();
        o.heads = [Vec::new(), Vec::new()];
        if o.live {
            if let Some(b) = self.by_file.get_mut(o.file as usize) {
                *b = NONE;
            }
        }
        o.live = false;
        self.free.push(slot);
        self.incarnations[slot as usize] += 1;
        self.dropped.push(slot);
    }

    fn evict_for(&mut self, need: u64) {
        while self.bytes + need > self.cap {
            let victim = (0..self.objs.len() as u32)
                .filter(|&s| {
                    let o = &self.objs[s as usize];
                    o.live && o.refs == 0
                })
                .min_by_key(|&s| self.objs[s as usize].last);
            let Some(v) = victim else { break };
            self.drop_obj(v);
            self.stats.evicted += 1;
        }
    }

    fn packetise(&mut self, file: u32) -> Option<u32> {
        let site = self.site.clone();
        let f = &site.files[file as usize];
        let body: Arc<[u8]> = match &f.body {
            Some(b) => b.clone(),
            None => {
                self.stats.read_on_demand += 1;
                match f.source.as_ref().map(std::fs::read) {
                    Some(Ok(b)) => Arc::from(b),
                    _ => {
                        self.stats.read_errors += 1;
                        return None;
                    }
                }
            }
        };
        let mut o = Obj {
            live: true,
            refs: 0,
            last: self.tick,
            file,
            head_len: 0,
            body_len: body.len() as u64,
            payload: self.payload,
            head_date: self.date,
            heads: [Vec::new(), Vec::new()],
            segs: Vec::new(),
            etag: f.etag.clone(),
            mtime: f.mtime,
            content_type: f.content_type,
        };
        let p = self.payload as usize;
        let mut head = Vec::with_capacity(512);
        o.head(self.date, false, &mut head);
        o.head_len = head.len() as u32;
        let first_body = (p - head.len()).min(body.len());
        for close in [false, true] {
            let mut payload = Vec::with_capacity(p);
            o.head(self.date, close, &mut payload);
            payload.extend_from_slice(&body[..first_body]);
            let mut m = Vec::with_capacity(HEADER + p);
            segment::build_master(&payload, &mut m);
            o.heads[usize::from(close)] = m;
        }
        let rest = &body[first_body..];
        let n = rest.len().div_ceil(p);
        let stride = HEADER + p;
        o.segs = Vec::with_capacity(n * stride);
        for chunk in rest.chunks(p) {
            let at = o.segs.len();
            segment::build_master(chunk, &mut o.segs);
            o.segs.resize(at + stride, 0);
        }
        self.stats.packetised += 1;
        self.stats.segments_built += 1 + n as u64;
        let size = (o.segs.capacity() + o.heads[0].capacity() + o.heads[1].capacity()) as u64;
        self.evict_for(size);
        self.bytes += size;
        let slot = match self.free.pop() {
            Some(s) => {
                self.objs[s as usize] = o;
                s
            }
            None => {
                self.objs.push(o);
                self.incarnations.push(0);
                self.objs.len() as u32 - 1
            }
        };
        self.by_file[file as usize] = slot;
        Some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(o: &Obj, close: bool, date: u64) -> Vec<u8> {
        let mut v = vec![0u8; o.total() as usize];
        o.fill(0, &mut v, close, date);
        v
    }

    #[test]
    fn masters_hold_the_whole_response() {
        let site = Arc::new(Site::demo(1_000_000));
        let mut st = Store::new(site.clone(), 1448, 1 << 30, 2_000_000);
        st.preload();
        assert_eq!(st.objects(), site.len());
        for (i, f) in site.files.iter().enumerate() {
            let s = st.get(i as u32).unwrap();
            let o = st.obj(s);
            for close in [false, true] {
                let r = response(o, close, 2_000_000);
                let text = String::from_utf8_lossy(&r[..o.head_len as usize]).into_owned();
                assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
                assert!(text.contains(if close { "Connection: close" } else { "Connection: keep-alive" }));
                assert!(text.contains(&format!("Content-Length: {}\r\n", f.size)));
                assert_eq!(&r[o.head_len as usize..], &f.body.as_ref().unwrap()[..]);
                // Segment by segment, the masters carry the same bytes.
                let mut cat = Vec::new();
                for k in 0..o.segments() {
                    let m = o.master(k, close);
                    assert_eq!(m.len(), HEADER + o.seg_len(k) as usize);
                    cat.extend_from_slice(&m[HEADER..]);
                }
                assert_eq!(cat, r);
            }
            st.put(s);
        }
    }

    #[test]
    fn new_date_rebuilds_heads_and_old_date_still_fills() {
        let site = Arc::new(Site::demo(5));
        let mut st = Store::new(site, 1448, 1 << 30, 100);
        let s = st.get(0).unwrap();
        let before = response(st.obj(s), false, 100);
        st.put(s);
        st.set_date(101);
        let s = st.get(0).unwrap();
        assert_eq!(st.stats.heads_refreshed, 1);
        let o = st.obj(s);
        assert_eq!(o.head_date(), 101);
        assert_ne!(response(o, false, 101), before);
        assert_eq!(response(o, false, 100), before, "a response dated before is rebuilt byte for byte");
        st.put(s);
    }

    #[test]
    fn lru_eviction_spares_objects_in_use() {
        let site = Arc::new(Site::demo(5));
        let mut st = Store::new(site.clone(), 1448, 8_000, 100);
        let held = st.get(0).unwrap();
        for round in 0..3 {
            for f in 1..site.len() as u32 {
                let s = st.get(f).unwrap();
                st.put(s);
            }
            assert!(st.obj(held).live, "round {round}");
        }
        assert!(st.stats.evicted > 0);
        assert!(st.stats.packetised > site.len() as u64);
        st.put(held);
        st.replace_site(site);
        assert_eq!(st.objects(), 0);
        assert_eq!(st.bytes(), 0);
    }
}
