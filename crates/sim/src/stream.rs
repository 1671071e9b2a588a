//! The application the simulated hosts run: each connection carries a self-describing byte
//! stream (a 16-byte header, then bytes that are a function of stream id and offset), so the
//! receiver checks every byte's value and position without keeping a copy.

use std::collections::HashMap;

use tcp::endpoint::{App, Ctl, Handle, Source};
use tcp::tcb::End;
use tcp::{Duration, Instant};

use super::rng::{mix, Rng};

/// Bytes of the header that opens every stream: its length, the length asked back, its id.
pub const HDR: u64 = 16;

/// The stream a checker's error names ("stream 3: wrong byte at 10"), so a failure can be
/// traced to its connection.
pub fn stream_of(error: &str) -> Option<u32> {
    error.strip_prefix("stream ")?.split(':').next()?.parse().ok()
}

/// The byte at payload offset `off` of stream `id`.
pub fn byte(id: u32, off: u64) -> u8 {
    (mix((u64::from(id) << 40) ^ (off / 8)) >> ((off % 8) * 8)) as u8
}

/// What a client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Stream id (checked by both ends).
    pub id: u32,
    /// Payload bytes the client sends.
    pub up: u32,
    /// Payload bytes the server sends back.
    pub down: u32,
}

/// One connection's streams, both ways.
#[derive(Debug, Default)]
pub struct Conn {
    /// What this side sends: (id, payload length, the other length for the header).
    send: Option<(u32, u32, u32)>,
    rx_hdr: [u8; 16],
    rx_got: u64,
    rx_expect: Option<(u32, u32)>,
    /// What a client asked for (None on the server side).
    pub spec: Option<Spec>,
    /// The peer closed its side.
    pub peer_fin: bool,
}

impl Conn {
    fn header(&self) -> [u8; 16] {
        let (id, len, other) = self.send.expect("sending");
        let mut h = [0u8; 16];
        h[..4].copy_from_slice(&len.to_be_bytes());
        h[4..8].copy_from_slice(&other.to_be_bytes());
        h[8..12].copy_from_slice(&id.to_be_bytes());
        h
    }
}

impl Source for Conn {
    fn end(&self) -> u64 {
        self.send.map_or(0, |(_, len, _)| HDR + u64::from(len))
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        let (id, _, _) = self.send.expect("filled only below end");
        let h = self.header();
        for (i, d) in dst.iter_mut().enumerate() {
            let o = off + i as u64;
            *d = if o < HDR { h[o as usize] } else { byte(id, o - HDR) };
        }
    }
}

/// A connection that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// Its stream id (`u32::MAX` if no header arrived).
    pub id: u32,
    /// This side opened it.
    pub client: bool,
    /// How it ended.
    pub end: End,
    /// Every byte the peer announced arrived, then its FIN.
    pub rx_complete: bool,
}

/// The application: servers answer each stream with the length its header asks for; every
/// received byte is checked against [`byte`].
pub struct StreamApp {
    /// Draws the slow reader's choices.
    pub rng: Rng,
    /// Probability that a delivery is held back (a slow reader) instead of released at once.
    pub hold: f64,
    /// Longest a delivery is held.
    pub max_hold: Duration,
    /// Deliveries held: connection, bytes, when they are released.
    pub held: Vec<(Handle, u32, Instant)>,
    /// The clock (set by the driver before each call).
    pub now: Instant,
    /// Connections that ended.
    pub finished: Vec<Finished>,
    /// Every wrong byte, length or id seen.
    pub errors: Vec<String>,
    /// Connections accepted.
    pub accepts: u32,
    /// Refuse connections instead.
    pub refuse: bool,
    /// Stream id per live connection.
    pub ids: HashMap<Handle, u32>,
}

impl StreamApp {
    /// An application whose deliveries are held with probability `hold`.
    pub fn new(seed: u64, hold: f64) -> StreamApp {
        StreamApp {
            rng: Rng::new(seed),
            hold,
            max_hold: Duration::from_millis(200),
            held: Vec::new(),
            now: Instant::ZERO,
            finished: Vec::new(),
            errors: Vec::new(),
            accepts: 0,
            refuse: false,
            ids: HashMap::new(),
        }
    }

    /// The state of a client connection that sends `spec`.
    pub fn client_conn(spec: Spec) -> Conn {
        Conn { send: Some((spec.id, spec.up, spec.down)), spec: Some(spec), ..Conn::default() }
    }

    /// Held bytes due by `now`.
    pub fn due(&mut self, now: Instant) -> Vec<(Handle, u32)> {
        let mut out = Vec::new();
        self.held.retain(|&(h, n, at)| {
            if at <= now {
                out.push((h, n));
                false
            } else {
                true
            }
        });
        out
    }

    /// When the next held delivery is released.
    pub fn next_release(&self) -> Option<Instant> {
        self.held.iter().map(|x| x.2).min()
    }
}

impl App for StreamApp {
    type Conn = Conn;

    fn accept(&mut self, _h: Handle, _port: u16, _remote: (wire::IpAddr, u16)) -> Option<Conn> {
        self.accepts += 1;
        (!self.refuse).then(Conn::default)
    }

    fn connected(&mut self, _h: Handle, _c: &mut Conn, ctl: &mut Ctl) {
        ctl.close(); // the client's whole stream is its source already
    }

    fn recv(&mut self, h: Handle, c: &mut Conn, data: &[u8], ctl: &mut Ctl) {
        for &b in data {
            let o = c.rx_got;
            if o < HDR {
                c.rx_hdr[o as usize] = b;
                if o + 1 == HDR {
                    let len = u32::from_be_bytes(c.rx_hdr[..4].try_into().unwrap());
                    let other = u32::from_be_bytes(c.rx_hdr[4..8].try_into().unwrap());
                    let id = u32::from_be_bytes(c.rx_hdr[8..12].try_into().unwrap());
                    c.rx_expect = Some((id, len));
                    self.ids.insert(h, id);
                    match c.spec {
                        Some(s) if s.id != id || s.down != len => {
                            self.errors.push(format!("stream {}: header says id {id} len {len}", s.id))
                        }
                        Some(_) => {}
                        None => {
                            // A server: answer with `other` bytes of its own, then close.
                            c.send = Some((id, other, len));
                            ctl.close();
                        }
                    }
                }
            } else {
                let (id, len) = c.rx_expect.expect("header first");
                let p = o - HDR;
                if p >= u64::from(len) {
                    self.errors.push(format!("stream {id}: byte beyond the announced length {len}"));
                } else if byte(id, p) != b {
                    self.errors.push(format!("stream {id}: wrong byte at {p}"));
                }
            }
            c.rx_got += 1;
        }
        if self.rng.chance(self.hold) {
            let at = self.now + Duration::from_micros(self.rng.range(1, self.max_hold.as_micros()));
            self.held.push((h, data.len() as u32, at));
        } else {
            ctl.recv_done(data.len() as u32);
        }
    }

    fn peer_closed(&mut self, _h: Handle, c: &mut Conn, ctl: &mut Ctl) {
        c.peer_fin = true;
        if c.spec.is_none() && c.send.is_none() {
            ctl.close(); // a server that never got a header: nothing to answer
        }
    }

    fn closed(&mut self, h: Handle, c: Conn, end: End) {
        let rx_complete = c.peer_fin && c.rx_expect.is_some_and(|(_, len)| c.rx_got == HDR + u64::from(len));
        let id = c.spec.map(|s| s.id).or(c.rx_expect.map(|x| x.0)).unwrap_or(u32::MAX);
        self.ids.remove(&h);
        self.held.retain(|x| x.0 != h);
        self.finished.push(Finished { id, client: c.spec.is_some(), end, rx_complete });
    }
}
