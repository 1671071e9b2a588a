//! One TLS connection's state: the handshake, then the record layer — opening what the
//! peer sends (application data for the application, alerts and KeyUpdates handled here),
//! and sealing the outgoing stream record by record, in the segment being written, from
//! the [`Layout`].

use crate::config::TlsConfig;
use crate::handshake::{Established, Handshake, Step};
use crate::layout::{Layout, Spot};
use crate::record::{self, alert, content, Keys, OpenError, HEADER, OVERHEAD};
use rustls::kernel::KernelConnection;
use rustls::server::ServerConnectionData;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::ops::Range;

/// Handshake message type of KeyUpdate (RFC 8446 §4.6.3).
const KEY_UPDATE: u8 = 24;

/// What the peer's bytes came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Poll {
    /// Nothing more until more bytes arrive.
    Idle,
    /// The handshake just completed.
    Established,
    /// Application data at this range of [`Session::input`]; call [`Session::consumed`]
    /// once it is taken.
    Data(Range<usize>),
    /// The peer sent close_notify: no more data will come.
    PeerClosed,
    /// The connection failed (an alert was laid); close it.
    Failed(Failure),
}

/// Why a connection failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The handshake (rustls's reason).
    Handshake(String),
    /// A record did not open, or broke the protocol; the alert sent.
    Record(u8),
    /// The peer sent a fatal alert.
    PeerAlert(u8),
}

struct Open {
    rx: Keys,
    rx_seq: u64,
    /// What derives the next keys (None for a session made from bare keys).
    kernel: Option<KernelConnection<ServerConnectionData>>,
}

/// Counters one session reports to its server.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Events {
    /// KeyUpdates received.
    pub key_updates_in: u64,
    /// KeyUpdates sent.
    pub key_updates_out: u64,
}

/// A TLS connection.
pub struct Session {
    handshake: Option<Handshake>,
    open: Option<Open>,
    /// Bytes from the peer not yet processed.
    input: Vec<u8>,
    /// A post-handshake message begun in one record, to be continued in the next.
    hs_partial: Vec<u8>,
    /// A data record at the front of `input` being taken by the application.
    held: usize,
    /// The outgoing stream.
    pub layout: Layout,
    tx: Vec<(u32, Keys)>,
    /// No more application data is laid (close_notify or a fatal alert was).
    closed: bool,
    peer_closed: bool,
    /// The suite negotiated.
    pub suite: &'static str,
    /// Counters.
    pub events: Events,
    /// The last record sealed whole (records larger than a segment).
    sealed: RefCell<Sealed>,
    /// Records sealed in place in the application's buffer when its bytes arrived, in
    /// stream order.
    in_place: VecDeque<InPlace>,
}

/// A record sealed in the application's buffer.
struct InPlace {
    /// Stream offsets of the record's start and end.
    start: u64,
    end: u64,
    /// Where its content is in the application's stream.
    plain: std::ops::Range<u64>,
    /// Its encrypted inner type and tag.
    trailer: [u8; 1 + record::TAG],
}

/// A sealed record kept for the segments that carry it.
#[derive(Default)]
struct Sealed {
    /// Stream offset of the record held.
    start: Option<u64>,
    bytes: Vec<u8>,
}

impl Session {
    /// A connection under `cfg` whose application records carry `record` bytes of content.
    pub fn new(cfg: &TlsConfig, record: usize) -> Result<Session, rustls::Error> {
        Ok(Session {
            handshake: Some(Handshake::new(cfg)?),
            open: None,
            input: Vec::new(),
            hs_partial: Vec::new(),
            held: 0,
            layout: Layout::new(record),
            tx: Vec::new(),
            closed: false,
            peer_closed: false,
            suite: "",
            events: Events::default(),
            sealed: RefCell::default(),
            in_place: VecDeque::new(),
        })
    }

    /// Whether the handshake is done.
    pub fn established(&self) -> bool {
        self.open.is_some()
    }

    /// Whether no more application data is laid.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Bytes from the peer.
    pub fn push(&mut self, data: &[u8]) {
        self.input.extend_from_slice(data);
    }

    /// The peer's bytes (application data lies where [`Poll::Data`] says).
    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// The application took the data record [`Session::poll`] returned.
    pub fn consumed(&mut self) {
        self.input.drain(..self.held);
        self.held = 0;
    }

    /// Lays the application's plaintext up to `plain_end` (once the keys exist), cut at the
    /// message boundaries `boundary` names (see [`Layout::push_app`]).
    pub fn sync(&mut self, plain_end: u64, boundary: &dyn Fn(u64) -> u64) {
        if self.open.is_some() && !self.closed {
            self.layout.push_app(plain_end, boundary);
        }
    }

    /// Ends the stream: what the application queued up to `plain_end`, then close_notify.
    pub fn close(&mut self, plain_end: u64, boundary: &dyn Fn(u64) -> u64) {
        if self.closed {
            return;
        }
        self.sync(plain_end, boundary);
        if self.open.is_some() {
            self.layout.push_control(content::ALERT, &[1, alert::CLOSE_NOTIFY]);
        }
        self.closed = true;
    }

    fn fatal(&mut self, desc: u8) -> Poll {
        if !self.closed && self.open.is_some() {
            self.layout.push_control(content::ALERT, &[2, desc]);
        }
        self.closed = true;
        self.input = Vec::new();
        Poll::Failed(Failure::Record(desc))
    }

    /// Processes the peer's bytes up to the next thing the caller must act on.
    /// `plain_end` is the application's stream end (laid before a KeyUpdate reply).
    pub fn poll(&mut self, plain_end: u64, boundary: &dyn Fn(u64) -> u64) -> Poll {
        debug_assert_eq!(self.held, 0, "consumed() not called");
        if let Some(hs) = self.handshake.as_mut() {
            let mut out = Vec::new();
            let step = hs.advance(&mut self.input, &mut out);
            self.layout.push_raw(out);
            return match step {
                Step::More => Poll::Idle,
                Step::Failed(why) => {
                    self.handshake = None;
                    self.closed = true;
                    self.input = Vec::new();
                    Poll::Failed(Failure::Handshake(why))
                }
                Step::Done(est) => {
                    let fed = hs.fed();
                    self.input.drain(..fed);
                    self.handshake = None;
                    self.start(*est);
                    Poll::Established
                }
            };
        }
        if self.peer_closed || self.closed {
            return Poll::Idle;
        }
        // Bounded by the records held: each pass consumes one or returns.
        loop {
            let Some((outer, len)) = record::parse_header(&self.input) else {
                return Poll::Idle;
            };
            if len > record::MAX_CIPHER {
                return self.fatal(alert::RECORD_OVERFLOW);
            }
            if outer != content::APPLICATION_DATA {
                return self.fatal(alert::UNEXPECTED_MESSAGE);
            }
            let end = HEADER + len;
            if self.input.len() < end {
                return Poll::Idle;
            }
            let open = self.open.as_mut().expect("established");
            let opened = open.rx.open(open.rx_seq, &mut self.input[..end]);
            open.rx_seq += 1;
            let (inner, range) = match opened {
                Ok(x) => x,
                Err(OpenError::BadMac) => return self.fatal(alert::BAD_RECORD_MAC),
                Err(OpenError::Overflow) => return self.fatal(alert::RECORD_OVERFLOW),
                Err(OpenError::NoContentType) => return self.fatal(alert::UNEXPECTED_MESSAGE),
            };
            // A handshake message begun in one record continues in the next: nothing else
            // may come between (RFC 8446 §5.1).
            if !self.hs_partial.is_empty() && inner != content::HANDSHAKE {
                return self.fatal(alert::UNEXPECTED_MESSAGE);
            }
            match inner {
                content::APPLICATION_DATA => {
                    if range.is_empty() {
                        self.input.drain(..end);
                        continue;
                    }
                    self.held = end;
                    return Poll::Data(range);
                }
                content::ALERT => {
                    let a = match self.input[range] {
                        [level, desc] => Some([level, desc]),
                        // An alert record must hold exactly one alert (RFC 8446 §5.1); an
                        // empty one is no message at all, as OpenSSL answers.
                        [] => return self.fatal(alert::UNEXPECTED_MESSAGE),
                        _ => None,
                    };
                    self.input.drain(..end);
                    match a {
                        Some([_, alert::CLOSE_NOTIFY]) => {
                            self.peer_closed = true;
                            return Poll::PeerClosed;
                        }
                        Some([_, alert::USER_CANCELED]) => continue,
                        Some([_, desc]) => {
                            self.closed = true;
                            self.input = Vec::new();
                            return Poll::Failed(Failure::PeerAlert(desc));
                        }
                        None => return self.fatal(alert::DECODE_ERROR),
                    }
                }
                content::HANDSHAKE => {
                    if range.is_empty() {
                        // Zero-length handshake fragments are not allowed (RFC 8446 §5.1).
                        return self.fatal(alert::UNEXPECTED_MESSAGE);
                    }
                    let mut msg = std::mem::take(&mut self.hs_partial);
                    msg.extend_from_slice(&self.input[range]);
                    self.input.drain(..end);
                    if let Err(desc) = self.handshake_messages(msg, plain_end, boundary) {
                        return self.fatal(desc);
                    }
                }
                _ => return self.fatal(alert::UNEXPECTED_MESSAGE),
            }
        }
    }

    fn start(&mut self, est: Established) {
        self.layout.set_seq(est.tx_seq);
        self.tx.push((self.layout.epoch(), est.tx));
        self.suite = est.suite;
        self.open = Some(Open { rx: est.rx, rx_seq: est.rx_seq, kernel: Some(est.kernel) });
    }

    /// A session whose handshake happened elsewhere, from bare traffic keys (tests and the
    /// fuzz target of the record layer). It cannot derive new keys: a KeyUpdate ends it with
    /// internal_error.
    pub fn from_keys(tx: Keys, rx: Keys, record: usize) -> Session {
        let mut layout = Layout::new(record);
        layout.set_seq(0);
        Session {
            handshake: None,
            open: Some(Open { rx, rx_seq: 0, kernel: None }),
            input: Vec::new(),
            hs_partial: Vec::new(),
            held: 0,
            layout,
            tx: vec![(0, tx)],
            closed: false,
            peer_closed: false,
            suite: "external",
            events: Events::default(),
            sealed: RefCell::default(),
            in_place: VecDeque::new(),
        }
    }

    /// Post-handshake messages, the bytes of one record after any fragment the last one
    /// left: only KeyUpdate is valid from a client (no tickets, no post-handshake
    /// authentication was offered). A message may span records; a KeyUpdate must end its
    /// record, for the record after it is under the new key (RFC 8446 §5.1).
    fn handshake_messages(&mut self, all: Vec<u8>, plain_end: u64, boundary: &dyn Fn(u64) -> u64) -> Result<(), u8> {
        let mut msg = &all[..];
        while !msg.is_empty() {
            let [typ, a, b, c, ref rest @ ..] = *msg else {
                self.hs_partial = msg.to_vec();
                return Ok(());
            };
            let len = u32::from_be_bytes([0, a, b, c]) as usize;
            if typ != KEY_UPDATE {
                return Err(alert::UNEXPECTED_MESSAGE);
            }
            if len != 1 {
                return Err(alert::DECODE_ERROR);
            }
            if rest.is_empty() {
                self.hs_partial = msg.to_vec();
                return Ok(());
            }
            let requested = match rest[0] {
                0 => false,
                1 => true,
                _ => return Err(alert::ILLEGAL_PARAMETER),
            };
            msg = &rest[1..];
            if !msg.is_empty() {
                // More after a key change in the same record.
                return Err(alert::UNEXPECTED_MESSAGE);
            }
            let open = self.open.as_mut().expect("established");
            let kernel = open.kernel.as_mut().ok_or(alert::INTERNAL_ERROR)?;
            let (seq, secrets) = kernel.update_rx_secret().map_err(|_| alert::INTERNAL_ERROR)?;
            open.rx = Keys::from_secrets(&secrets).ok_or(alert::INTERNAL_ERROR)?;
            open.rx_seq = seq;
            self.events.key_updates_in += 1;
            if requested && !self.closed {
                self.update_tx(plain_end, boundary)?;
            }
        }
        Ok(())
    }

    /// Sends KeyUpdate(update_not_requested) under the current keys and seals what follows
    /// under the next ones.
    fn update_tx(&mut self, plain_end: u64, boundary: &dyn Fn(u64) -> u64) -> Result<(), u8> {
        self.sync(plain_end, boundary);
        self.layout.push_control(content::HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0]);
        let open = self.open.as_mut().expect("established");
        let kernel = open.kernel.as_mut().ok_or(alert::INTERNAL_ERROR)?;
        let (seq, secrets) = kernel.update_tx_secret().map_err(|_| alert::INTERNAL_ERROR)?;
        self.layout.next_epoch();
        self.layout.set_seq(seq);
        self.tx.push((self.layout.epoch(), Keys::from_secrets(&secrets).ok_or(alert::INTERNAL_ERROR)?));
        self.events.key_updates_out += 1;
        Ok(())
    }

    /// The application's bytes at its offsets `start .. start + len` have just been read into
    /// `bytes` (which may run on past them, into room the buffer has to spare): the records
    /// lying wholly in them are sealed there in place, at once — Atlas's encryption at read
    /// completion — so their segments are later copied out as they are, once, like plain
    /// ones. The buffer must stay the application's until those records are acknowledged
    /// and be sent from as it is (it now holds their ciphertext). Returns the records sealed.
    pub fn seal_within(&mut self, start: u64, len: usize, bytes: &mut [u8]) -> u32 {
        if self.open.is_none() {
            return 0;
        }
        // Sealed as the layout names them: no list of records is built per read.
        let Session { layout, tx, in_place, .. } = self;
        let mut n = 0;
        layout.records_within(start, start + len as u64, &mut |r| {
            let plain = r.plain.expect("application data");
            let at = (plain - start) as usize;
            // The byte after the content is borrowed for the inner type: it must exist.
            let i = in_place.partition_point(|x| x.start < r.start);
            if at + r.len >= bytes.len() || in_place.get(i).is_some_and(|x| x.start == r.start) {
                return;
            }
            let keys = &tx.iter().find(|(e, _)| *e == r.epoch).expect("keys of a laid epoch are kept").1;
            let trailer = keys.seal_content(r.seq, content::APPLICATION_DATA, &mut bytes[at..at + r.len + 1]);
            // Usually at the back; a range read again after it was let go goes where it was.
            in_place.insert(i, InPlace { start: r.start, end: r.end(), plain: plain..plain + r.len as u64, trailer });
            n += 1;
        });
        n
    }

    /// The application let go of its bytes in `from .. to` before they were acknowledged
    /// (they were sent; a retransmission reads them again): the records sealed there are
    /// no longer at hand, and are sealed again when the bytes come back.
    pub fn forget_in_place(&mut self, from: u64, to: u64) {
        self.in_place.retain(|x| x.plain.end <= from || x.plain.start >= to);
    }

    /// The application-stream offset where the record holding stream byte `off` starts, if
    /// it carries application data (where the application must have the bytes again for a
    /// retransmission from `off`).
    pub fn plain_at(&self, off: u64) -> Option<u64> {
        match self.layout.locate(off)? {
            Spot::Record(rec) => rec.plain,
            Spot::Raw { .. } => None,
        }
    }

    /// The trailer of a record sealed in place, if it was.
    fn sealed_in_place(&self, rec_start: u64) -> Option<&[u8; 1 + record::TAG]> {
        let i = self.in_place.partition_point(|x| x.start < rec_start);
        self.in_place.get(i).filter(|x| x.start == rec_start).map(|x| &x.trailer)
    }

    /// The peer acknowledged the stream below `acked`: the application-stream offset it may
    /// let go of below (whole records only).
    pub fn acked(&mut self, acked: u64) -> u64 {
        let plain = self.layout.plain_acked(acked);
        let oldest = self.layout.release(acked);
        self.tx.retain(|(e, _)| *e >= oldest);
        while self.in_place.front().is_some_and(|x| x.end <= acked) {
            self.in_place.pop_front();
        }
        if self.layout.runs() == 0 {
            self.in_place.clear();
            // Nothing left to send again: an idle keep-alive connection holds no ciphertext.
            *self.sealed.borrow_mut() = Sealed::default();
        }
        plain
    }

    /// The most a segment from stream offset `off` may carry: to the end of the record (or
    /// raw bytes) there, or 0 while the application does not yet hold all of the record's
    /// plaintext (`have(p)` is the application's own limit at its offset `p`).
    pub fn seg_limit(&self, off: u64, have: &dyn Fn(u64) -> u32) -> u32 {
        match self.layout.locate(off) {
            None => u32::MAX,
            Some(Spot::Raw { bytes, at }) => (bytes.len() - at) as u32,
            Some(Spot::Record(rec)) => {
                // A record already sealed (its first segment went out) is at hand whole.
                let sealed = self.sealed.borrow().start == Some(rec.start) || self.sealed_in_place(rec.start).is_some();
                if let (Some(p), false) = (rec.plain, sealed) {
                    let mut got = 0u64;
                    // Bounded: each step advances by at least one byte of the record.
                    while got < rec.len as u64 {
                        let n = have(p + got);
                        if n == 0 {
                            return 0;
                        }
                        got += u64::from(n);
                    }
                }
                (rec.end() - off) as u32
            }
        }
    }

    /// Where the stream's bytes from `off` are (at most `max`): the ciphertext of a record
    /// sealed in place is where the application holds its plaintext (`placed(p, n)` says
    /// where that is, perhaps in the TX port's lent region); headers, trailers and records
    /// sealed at send are copied by [`Session::fill`].
    pub fn placed(&self, off: u64, max: u32, placed: &dyn Fn(u64, u32) -> tcp::Placed) -> tcp::Placed {
        use tcp::Placed;
        let copy = |n: usize| Placed::Copy { len: (n as u32).min(max) };
        match self.layout.locate(off) {
            None => Placed::Copy { len: max },
            Some(Spot::Raw { bytes, at }) => copy(bytes.len() - at),
            Some(Spot::Record(rec)) => {
                let into = (off - rec.start) as usize;
                let body = HEADER + rec.len;
                match (rec.plain, self.sealed_in_place(rec.start)) {
                    (Some(p), Some(_)) if (HEADER..body).contains(&into) => {
                        let k = ((body - into) as u32).min(max);
                        match placed(p + (into - HEADER) as u64, k) {
                            Placed::Arena { addr, len } => Placed::Arena { addr, len: len.min(k) },
                            Placed::Copy { len } => Placed::Copy { len: len.min(k) },
                        }
                    }
                    (Some(_), Some(_)) if into < HEADER => copy(HEADER - into),
                    _ => copy(rec.len + OVERHEAD - into),
                }
            }
        }
    }

    /// Writes the stream's bytes at `off .. off + dst.len()`. A record that the segment
    /// holds whole is sealed in place in it; one that spans segments is sealed once into the
    /// connection's record buffer, from which its segments are copied (sealed again only if
    /// a retransmission asks for it after a later record took the buffer). `fill(p, d)`
    /// writes the application's plaintext at `p`. Returns how many records were sealed.
    pub fn fill(&self, off: u64, dst: &mut [u8], fill: &dyn Fn(u64, &mut [u8])) -> u32 {
        let mut done = 0;
        let mut sealed = 0;
        while done < dst.len() {
            let at = off + done as u64;
            match self.layout.locate(at) {
                Some(Spot::Raw { bytes, at }) => {
                    let n = (bytes.len() - at).min(dst.len() - done);
                    dst[done..done + n].copy_from_slice(&bytes[at..at + n]);
                    done += n;
                }
                Some(Spot::Record(rec)) => {
                    let whole = rec.len + OVERHEAD;
                    let into = (at - rec.start) as usize;
                    let n = (whole - into).min(dst.len() - done);
                    if let Some(trailer) = self.sealed_in_place(rec.start) {
                        // Header, the ciphertext where the application holds it, the trailer.
                        let out = &mut dst[done..done + n];
                        let header = record::protected_header(rec.len);
                        let body = HEADER + rec.len;
                        let mut i = 0;
                        while i < n {
                            let x = into + i;
                            let k = if x < HEADER {
                                let k = (HEADER - x).min(n - i);
                                out[i..i + k].copy_from_slice(&header[x..x + k]);
                                k
                            } else if x < body {
                                let k = (body - x).min(n - i);
                                fill(rec.plain.expect("application data") + (x - HEADER) as u64, &mut out[i..i + k]);
                                k
                            } else {
                                let k = n - i;
                                out[i..].copy_from_slice(&trailer[x - body..x - body + k]);
                                k
                            };
                            i += k;
                        }
                    } else if into == 0 && n == whole {
                        self.seal(&rec, &mut dst[done..done + n], fill);
                        sealed += 1;
                    } else {
                        let mut b = self.sealed.borrow_mut();
                        if b.start != Some(rec.start) {
                            b.bytes.resize(whole, 0);
                            self.seal(&rec, &mut b.bytes[..whole], fill);
                            b.start = Some(rec.start);
                            sealed += 1;
                        }
                        dst[done..done + n].copy_from_slice(&b.bytes[into..into + n]);
                    }
                    done += n;
                }
                None => {
                    dst[done..].fill(0);
                    break;
                }
            }
        }
        sealed
    }

    fn seal(&self, rec: &crate::layout::Rec<'_>, out: &mut [u8], fill: &dyn Fn(u64, &mut [u8])) {
        let content = &mut out[HEADER..HEADER + rec.len];
        match rec.plain {
            Some(p) => fill(p, content),
            None => content.copy_from_slice(rec.body),
        }
        let keys = &self.tx.iter().find(|(e, _)| *e == rec.epoch).expect("keys of a laid epoch are kept").1;
        keys.seal(rec.seq, rec.inner, out);
    }
}
