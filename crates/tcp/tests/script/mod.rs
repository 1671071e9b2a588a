//! Scripted protocol tests in the manner of packetdrill: inject exact segments from a fake
//! peer, expect exact segments back. Sequence numbers are relative: the peer's ISN is fixed
//! and sirocco's is learnt from its first SYN or SYN-ACK, as packetdrill does.
#![allow(dead_code)]

use std::collections::VecDeque;

use tcp::endpoint::{App, Ctl, Endpoint, Handle, Limits, Output, Source};
use tcp::tcb::End;
use tcp::{Config, Duration, Instant};
use wire::tcp::{TcpFlags, TcpOptions, TcpPacket, TcpRepr};
use wire::{IpAddr, Ipv4Addr};

pub const US: IpAddr = IpAddr::V4(Ipv4Addr([198, 18, 0, 10]));
pub const PEER: IpAddr = IpAddr::V4(Ipv4Addr([198, 18, 0, 2]));
pub const PORT: u16 = 80;
pub const PEER_PORT: u16 = 40_000;
pub const PEER_ISN: u32 = 1_000_000;

/// Per-connection state of the scripted application: bytes to send, bytes received.
#[derive(Default)]
pub struct Conn {
    pub out: Vec<u8>,
    pub got: Vec<u8>,
    /// The source holds `out` only up to here (a disk read stands for the rest); None: all.
    pub ready: Option<u64>,
}

impl Source for Conn {
    fn end(&self) -> u64 {
        self.out.len() as u64
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        if let Some(r) = self.ready {
            assert!(
                off + dst.len() as u64 <= r,
                "filled {}..{} but the source holds up to {r}",
                off,
                off + dst.len() as u64
            );
        }
        let o = off as usize;
        dst.copy_from_slice(&self.out[o..o + dst.len()]);
    }
}

#[derive(Default)]
pub struct ScriptApp {
    /// Hold received bytes instead of releasing them (a reader that does not read).
    pub hold: bool,
    pub refuse: bool,
    /// Reply to received data with this many bytes of the same data, then nothing.
    pub echo: bool,
    pub accepted: Vec<Handle>,
    pub ended: Vec<End>,
    pub connected: u32,
    pub peer_closed: u32,
    /// Close as soon as the peer closes.
    pub close_on_fin: bool,
}

impl App for ScriptApp {
    type Conn = Conn;
    fn accept(&mut self, h: Handle, _port: u16, _remote: (IpAddr, u16)) -> Option<Conn> {
        self.accepted.push(h);
        (!self.refuse).then(Conn::default)
    }
    fn connected(&mut self, _h: Handle, _c: &mut Conn, _ctl: &mut Ctl) {
        self.connected += 1;
    }
    fn recv(&mut self, _h: Handle, c: &mut Conn, data: &[u8], ctl: &mut Ctl) {
        c.got.extend_from_slice(data);
        if self.echo {
            c.out.extend_from_slice(data);
        }
        if !self.hold {
            ctl.recv_done(data.len() as u32);
        }
    }
    fn peer_closed(&mut self, _h: Handle, _c: &mut Conn, ctl: &mut Ctl) {
        self.peer_closed += 1;
        if self.close_on_fin {
            ctl.close();
        }
    }
    fn closed(&mut self, _h: Handle, _c: Conn, end: End) {
        self.ended.push(end);
    }
    fn seg_limit(&self, c: &Conn, off: u64) -> u32 {
        c.ready.map_or(u32::MAX, |r| r.saturating_sub(off).min(u64::from(u32::MAX)) as u32)
    }
}

/// A segment, with sequence and acknowledgement numbers relative to the ISNs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seg {
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub win: u16,
    pub len: usize,
    pub opts: TcpOptions,
}

impl Seg {
    pub fn new(flags: u8, seq: u32, ack: u32) -> Seg {
        Seg { flags, seq, ack, win: 65_535, len: 0, opts: TcpOptions::default() }
    }
    pub fn syn(seq: u32) -> Seg {
        Seg::new(TcpFlags::SYN, seq, 0)
    }
    pub fn ack(seq: u32, ack: u32) -> Seg {
        Seg::new(TcpFlags::ACK, seq, ack)
    }
    pub fn flags(mut self, f: u8) -> Seg {
        self.flags |= f;
        self
    }
    pub fn win(mut self, w: u16) -> Seg {
        self.win = w;
        self
    }
    pub fn data(mut self, len: usize) -> Seg {
        self.len = len;
        self
    }
    pub fn mss(mut self, m: u16) -> Seg {
        self.opts.mss = Some(m);
        self
    }
    pub fn ws(mut self, w: u8) -> Seg {
        self.opts.window_scale = Some(w);
        self
    }
    pub fn sack_perm(mut self) -> Seg {
        self.opts.sack_permitted = true;
        self
    }
    pub fn ts(mut self, val: u32, ecr: u32) -> Seg {
        self.opts.timestamps = Some((val, ecr));
        self
    }
    pub fn sack(mut self, blocks: &[(u32, u32)]) -> Seg {
        for (o, &(l, r)) in self.opts.sack_blocks.iter_mut().zip(blocks) {
            *o = Some((l, r));
        }
        self
    }
}

/// A segment sirocco sent, in relative numbers.
#[derive(Clone, PartialEq, Eq)]
pub struct Sent {
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub win: u16,
    pub opts: TcpOptions,
    pub payload: Vec<u8>,
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "flags {:#04x} seq {} ack {} win {} len {} opts {:?}",
            self.flags,
            self.seq,
            self.ack,
            self.win,
            self.payload.len(),
            self.opts
        )
    }
}

struct Collect {
    out: Vec<Vec<u8>>,
}

impl Output for Collect {
    fn room(&self) -> usize {
        64
    }
    fn send(&mut self, local: IpAddr, remote: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        assert_eq!((local, remote), (US, PEER));
        let mut b = vec![0u8; len];
        write(&mut b);
        self.out.push(b);
    }
}

pub struct Script {
    pub ep: Endpoint<ScriptApp>,
    pub app: ScriptApp,
    pub now: Instant,
    sent: VecDeque<Sent>,
    our_isn: Option<u32>,
    pub peer_port: u16,
    pub handle: Option<Handle>,
}

impl Script {
    /// sirocco listening on port 80 with `cfg`.
    pub fn server(cfg: Config) -> Script {
        Script::server_with(cfg, Limits::default())
    }

    pub fn server_with(cfg: Config, limits: Limits) -> Script {
        let mut ep = Endpoint::new(limits, Instant::ZERO);
        ep.listen(PORT, cfg);
        Script {
            ep,
            app: ScriptApp::default(),
            now: Instant::ZERO,
            sent: VecDeque::new(),
            our_isn: None,
            peer_port: PEER_PORT,
            handle: None,
        }
    }

    /// sirocco connecting to the peer's port 80 (the peer plays the server).
    pub fn client(cfg: Config, data: &[u8]) -> Script {
        let mut s = Script::server(cfg);
        s.ep.unlisten(PORT);
        let conn = Conn { out: data.to_vec(), ..Conn::default() };
        let h = s.ep.connect(Instant::ZERO, US, PEER, PORT, cfg, conn, |_| true).ok().expect("connect");
        s.peer_port = s.ep.tcb(h).expect("live").tuple().local_port;
        s.handle = Some(h);
        s.pump();
        s
    }

    fn pump(&mut self) {
        let mut c = Collect { out: Vec::new() };
        self.ep.advance(&mut self.app, self.now);
        self.ep.output(&mut self.app, self.now, &mut c);
        self.take(c);
    }

    fn take(&mut self, c: Collect) {
        for b in c.out {
            let p = TcpPacket::new_checked(&b[..]).expect("well-formed segment");
            let r = TcpRepr::parse(&p, US, PEER).expect("valid checksum and options");
            if r.flags.has(TcpFlags::SYN) && self.our_isn.is_none() {
                self.our_isn = Some(r.seq);
            }
            let base = self.our_isn.unwrap_or(0);
            let ack_base = if r.flags.has(TcpFlags::ACK) { PEER_ISN } else { 0 };
            self.sent.push_back(Sent {
                flags: r.flags.0,
                seq: r.seq.wrapping_sub(base),
                ack: r.ack.wrapping_sub(ack_base),
                win: r.window,
                opts: r.options,
                payload: p.payload().to_vec(),
            });
        }
    }

    /// The clock in whole milliseconds.
    pub fn ms(&self) -> u64 {
        self.now.as_millis()
    }

    /// Moves the clock to `ms` milliseconds, running timers and output.
    pub fn at(&mut self, ms: u64) {
        let t = Instant::from_millis(ms);
        assert!(t >= self.now, "time runs forward");
        // Step through each millisecond so timers fire when due, not at the end.
        while self.now < t {
            self.now = (self.now + Duration::from_millis(1)).min(t);
            self.pump();
        }
        self.pump();
    }

    /// The peer sends `s` (relative numbers; payload bytes are 'a', 'b', ...).
    pub fn inject(&mut self, s: Seg) {
        let base = self.our_isn.unwrap_or(0);
        let payload: Vec<u8> = (0..s.len).map(|i| b'a' + (i % 26) as u8).collect();
        self.inject_raw(s, base, &payload);
    }

    pub fn inject_raw(&mut self, s: Seg, our_isn: u32, payload: &[u8]) {
        let r = TcpRepr {
            src_port: self.peer_port,
            dst_port: PORT,
            seq: PEER_ISN.wrapping_add(s.seq),
            ack: if s.flags & TcpFlags::ACK != 0 { our_isn.wrapping_add(s.ack) } else { s.ack },
            flags: TcpFlags(s.flags),
            window: s.win,
            options: s.opts,
            payload_len: payload.len(),
        };
        let (src_port, dst_port) = if self.handle.is_some() { (PORT, self.peer_port) } else { (self.peer_port, PORT) };
        let r = TcpRepr { src_port, dst_port, ..r };
        self.ep.input(&mut self.app, self.now, PEER, US, &r, payload);
        self.pump();
    }

    /// The next segment sirocco sent; panics if there is none.
    pub fn next(&mut self) -> Sent {
        self.try_next().unwrap_or_else(|| panic!("at {}: expected a segment, none sent", self.now))
    }

    /// The next segment sirocco sent, if any.
    pub fn try_next(&mut self) -> Option<Sent> {
        self.sent.pop_front()
    }

    /// Checks the next segment's flags, relative seq and ack, and payload length.
    pub fn expect(&mut self, flags: u8, seq: u32, ack: u32, len: usize) -> Sent {
        let s = self.next();
        assert_eq!((s.flags, s.seq, s.ack, s.payload.len()), (flags, seq, ack, len), "at {}: got {s:?}", self.now);
        s
    }

    /// Nothing was sent.
    pub fn expect_none(&mut self) {
        if let Some(s) = self.sent.pop_front() {
            panic!("at {}: expected silence, got {s:?}", self.now);
        }
    }

    /// An absolute sequence number in sirocco's space (for SACK blocks).
    pub fn ours(&self, rel: u32) -> u32 {
        self.our_isn.expect("ISN known").wrapping_add(rel)
    }

    /// Drops whatever was sent so far.
    pub fn clear(&mut self) {
        self.sent.clear();
    }

    /// Completes a passive handshake with the options given, returning the SYN-ACK.
    pub fn handshake(&mut self, syn: Seg) -> Sent {
        self.inject(syn);
        let sa = self.expect(TcpFlags::SYN | TcpFlags::ACK, 0, 1, 0);
        let mut ack = Seg::ack(1, 1);
        if let (Some((peer, _)), Some((v, _))) = (syn.opts.timestamps, sa.opts.timestamps) {
            ack = ack.ts(peer + 1, v);
        }
        self.inject(ack.win(syn.win));
        assert_eq!(self.app.accepted.len(), 1, "accepted after the handshake");
        sa
    }
}
