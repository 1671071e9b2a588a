//! One connection: the RFC 9293 state machine with MSS, window scaling, timestamps and PAWS
//! (RFC 7323), SACK (RFC 2018) with SACK-based recovery (RFC 6675), NewReno (RFC 6582), the
//! RFC 6298 timer, delayed ACKs, window probes, keep-alive and RFC 5961's checks.
//!
//! There is no send buffer. The connection knows only how far its source reaches (`src_end`,
//! a stream offset) and asks its caller to fill each segment it emits from the source at the
//! offset it names, so retransmissions are regenerated from the source. In-order received data
//! is handed to a callback as a read-only view of the frame (or of the reassembly ring); the
//! window stays closed by what the application holds until it says it is done.
//!
//! Sans-IO: every call takes the time; output is pulled with [`Tcb::poll`].

use wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
use wire::Ipv4Addr;

use crate::cc::Congestion;
use crate::config::Config;
use crate::ranges::Ranges;
use crate::reasm::{OooPool, Reassembly};
use crate::rtt::{Micros, Rtt};
use crate::seq::Seq;
use crate::stats::Stats;

/// A connection's addresses, from this side's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuple {
    /// This side's address.
    pub local: Ipv4Addr,
    /// The peer's address.
    pub remote: Ipv4Addr,
    /// This side's port.
    pub local_port: u16,
    /// The peer's port.
    pub remote_port: u16,
}

impl Tuple {
    /// The 12 bytes that identify the connection.
    pub fn bytes(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&self.local.0);
        b[4..8].copy_from_slice(&self.remote.0);
        b[8..10].copy_from_slice(&self.local_port.to_be_bytes());
        b[10..].copy_from_slice(&self.remote_port.to_be_bytes());
        b
    }
}

// By hand: the derived Hash adds length prefixes that a small keyed hasher would have to
// buffer; one 12-byte write is all the table needs.
impl std::hash::Hash for Tuple {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(&self.bytes());
    }
}

/// RFC 9293 states (LISTEN belongs to listeners, not connections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Our SYN sent, waiting for the peer's.
    SynSent,
    /// SYN received and SYN-ACK sent.
    SynReceived,
    /// Open both ways.
    Established,
    /// We closed; our FIN not yet acknowledged.
    FinWait1,
    /// Our FIN acknowledged; waiting for the peer's.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; our FIN not yet acknowledged.
    Closing,
    /// The peer closed first, then we did; waiting for the ACK of our FIN.
    LastAck,
    /// Both directions done; waiting 2·MSL for stray segments.
    TimeWait,
    /// Gone.
    Closed,
}

/// Why a connection ended (for the application).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Both sides closed and everything was acknowledged.
    Closed,
    /// The peer reset the connection.
    Reset,
    /// The peer refused the connection (RST in reply to our SYN).
    Refused,
    /// Retransmissions, probes or FIN-WAIT-2 ran out of time.
    TimedOut,
    /// This side aborted it.
    Aborted,
}

/// Shared state the connections of one endpoint use.
pub struct Env {
    /// Reassembly buffers.
    pub pool: OooPool,
    /// Counters.
    pub stats: Stats,
    challenge_window: Micros,
    challenge_left: u32,
    challenge_per_sec: u32,
}

impl Env {
    /// `ooo_buffers` reassembly buffers for windows up to `window`; at most `challenge_per_sec`
    /// challenge ACKs a second (RFC 5961 §7).
    pub fn new(ooo_buffers: usize, window: u32, challenge_per_sec: u32) -> Env {
        Env {
            pool: OooPool::new(ooo_buffers, window as usize),
            stats: Stats::default(),
            challenge_window: 0,
            challenge_left: challenge_per_sec,
            challenge_per_sec,
        }
    }

    fn allow_challenge(&mut self, now: Micros) -> bool {
        if now >= self.challenge_window + 1_000_000 {
            self.challenge_window = now;
            self.challenge_left = self.challenge_per_sec;
        }
        if self.challenge_left == 0 {
            self.stats.challenge_limited += 1;
            return false;
        }
        self.challenge_left -= 1;
        self.stats.challenge_acks += 1;
        true
    }
}

/// A segment the connection wants sent: the header, and `repr.payload_len` bytes to be
/// filled from the source starting at stream offset `data_off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegOut {
    /// Header (ports, numbers, flags, window, options) and payload length.
    pub repr: TcpRepr,
    /// Source offset of the first payload byte.
    pub data_off: u64,
}

/// What happened to a connection during one call, for the endpoint to pass on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Notes {
    /// The connection became established.
    pub established: bool,
    /// Source bytes newly acknowledged.
    pub acked: u64,
    /// The peer's receive window grew (an application waiting for room may send more).
    pub window_opened: bool,
    /// The peer will send nothing more.
    pub peer_fin: bool,
    /// The connection ended for the application (it may linger in TIME-WAIT).
    pub end: Option<End>,
}

const DUP_THRESH: u32 = 3;
/// TSval older than this is not held against PAWS (RFC 7323 §5.5: 24 days).
const PAWS_IDLE: Micros = 24 * 24 * 3600 * 1_000_000;
/// RFC 9293's default MSS when the peer sends none.
const DEFAULT_MSS: u16 = 536;
/// SACK blocks remembered from the peer.
const SCOREBOARD: usize = 16;

/// The transmission control block.
pub struct Tcb {
    tuple: Tuple,
    state: State,
    cfg: Config,
    passive: bool,

    iss: Seq,
    snd_una: Seq,
    snd_nxt: Seq,
    snd_max: Seq,
    una_off: u64,
    snd_wnd: u32,
    max_snd_wnd: u32,
    snd_wl1: Seq,
    snd_wl2: Seq,
    snd_wscale: u8,
    smss: u32,
    peer_mss: u16,
    path_mss: u16,
    src_end: u64,
    closing: bool,
    fin_seq: Option<Seq>,

    irs: Seq,
    rcv_nxt: Seq,
    rcv_adv: Seq,
    rcv_wscale: u8,
    held: u32,
    rcv_unacked: u32,
    peer_fin_at: Option<Seq>,
    fin_received: bool,
    ooo: Reassembly,

    wscale_ok: bool,
    sack_ok: bool,
    ts_ok: bool,
    ts_recent: u32,
    /// Added to our millisecond clock in TSvals (see [`ts_clock`]).
    ts_offset: u32,
    ts_recent_at: Micros,
    last_ack_sent: Seq,

    ack_now: bool,
    delack_at: Option<Micros>,
    rtt: Rtt,
    rtt_probe: Option<(Seq, Micros)>,
    rtx_ts: u32,
    rtx_at: Option<Micros>,
    retries: u32,
    persist_at: Option<Micros>,
    keepalive_at: Option<Micros>,
    probes: u32,
    send_probe: bool,
    last_rx: Micros,
    end_at: Option<Micros>,

    cc: Congestion,
    dupacks: u32,
    recovery: Option<Seq>,
    last_recover: Seq,
    high_rxt: Seq,
    rtx_una: bool,
    sacked: Ranges<SCOREBOARD>,

    rst_out: Option<(Seq, Option<Seq>)>,
    notes: Notes,
}

/// The timestamp clock of a connection: milliseconds plus a secret offset for its addresses
/// and ports ([`isn::ts_offset`](crate::isn::ts_offset)), so the clock does not leak (RFC
/// 7323 §7.1) yet runs on across incarnations of one tuple: a new SYN to a tuple in TIME-WAIT
/// must carry a newer TSval to reopen it (RFC 6191), or it waits out a SYN timeout.
pub fn ts_clock(ts_offset: u32, now: Micros) -> u32 {
    ((now / 1000) as u32).wrapping_add(ts_offset)
}

fn syn_options(cfg: &Config, peer: Option<&TcpOptions>, ts: Option<(u32, u32)>) -> TcpOptions {
    let mut o = TcpOptions { mss: Some(cfg.mss), ..TcpOptions::default() };
    let offered = |f: fn(&TcpOptions) -> bool| peer.is_none_or(f);
    if cfg.window_scale && offered(|p| p.window_scale.is_some()) {
        o.window_scale = Some(cfg.rcv_wscale());
    }
    if cfg.sack && offered(|p| p.sack_permitted) {
        o.sack_permitted = true;
    }
    if cfg.timestamps && offered(|p| p.timestamps.is_some()) {
        o.timestamps = ts;
    }
    o
}

impl Tcb {
    fn blank(tuple: Tuple, cfg: Config, iss: Seq, ts_offset: u32, now: Micros, passive: bool) -> Tcb {
        Tcb {
            tuple,
            state: State::Closed,
            cfg,
            passive,
            iss,
            ts_offset,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            una_off: 0,
            snd_wnd: 0,
            max_snd_wnd: 0,
            snd_wl1: Seq(0),
            snd_wl2: Seq(0),
            snd_wscale: 0,
            smss: u32::from(DEFAULT_MSS.min(cfg.mss)),
            peer_mss: DEFAULT_MSS,
            path_mss: cfg.mss,
            src_end: 0,
            closing: false,
            fin_seq: None,
            irs: Seq(0),
            rcv_nxt: Seq(0),
            rcv_adv: Seq(0),
            rcv_wscale: 0,
            held: 0,
            rcv_unacked: 0,
            peer_fin_at: None,
            fin_received: false,
            ooo: Reassembly::default(),
            wscale_ok: false,
            sack_ok: false,
            ts_ok: false,
            ts_recent: 0,
            ts_recent_at: now,
            last_ack_sent: Seq(0),
            ack_now: false,
            delack_at: None,
            rtt: Rtt::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max),
            rtt_probe: None,
            rtx_ts: 0,
            rtx_at: None,
            retries: 0,
            persist_at: None,
            keepalive_at: None,
            probes: 0,
            send_probe: false,
            last_rx: now,
            end_at: None,
            cc: Congestion::new(cfg.cc, u32::from(DEFAULT_MSS)),
            dupacks: 0,
            recovery: None,
            last_recover: iss,
            high_rxt: iss,
            rtx_una: false,
            sacked: Ranges::default(),
            rst_out: None,
            notes: Notes::default(),
        }
    }

    /// Active open: SYN-SENT; the SYN goes out at the next [`poll`](Self::poll).
    pub fn connect(tuple: Tuple, cfg: Config, iss: Seq, ts_offset: u32, now: Micros) -> Tcb {
        let mut t = Tcb::blank(tuple, cfg, iss, ts_offset, now, false);
        t.state = State::SynSent;
        t
    }

    /// Passive open from a SYN that a listener accepted: SYN-RECEIVED, SYN-ACK pending.
    pub fn accept(tuple: Tuple, cfg: Config, iss: Seq, ts_offset: u32, now: Micros, syn: &TcpRepr) -> Tcb {
        let mut t = Tcb::blank(tuple, cfg, iss, ts_offset, now, true);
        t.state = State::SynReceived;
        t.take_syn(syn, now);
        t
    }

    /// A connection rebuilt from a valid SYN cookie: ESTABLISHED at once. `mss`, `wscale`
    /// and `sack` are what the cookie encoded of the peer's SYN; `ack` is the completing ACK.
    #[allow(clippy::too_many_arguments)]
    pub fn from_cookie(
        tuple: Tuple,
        cfg: Config,
        iss: Seq,
        ts_offset: u32,
        now: Micros,
        ack: &TcpRepr,
        mss: u16,
        wscale: Option<u8>,
        sack: bool,
    ) -> Tcb {
        let mut t = Tcb::blank(tuple, cfg, iss, ts_offset, now, true);
        let syn = TcpRepr {
            seq: ack.seq.wrapping_sub(1),
            flags: TcpFlags(TcpFlags::SYN),
            window: ack.window,
            options: TcpOptions {
                mss: Some(mss),
                window_scale: wscale,
                sack_permitted: sack,
                timestamps: ack.options.timestamps,
                ..TcpOptions::default()
            },
            ..*ack
        };
        t.take_syn(&syn, now);
        t.snd_nxt = iss + 1;
        t.snd_max = iss + 1;
        t.snd_una = iss + 1;
        t.rcv_adv = t.rcv_nxt + t.cfg.rcv_buf.min(65_535);
        t.snd_wnd = u32::from(ack.window) << t.snd_wscale;
        t.max_snd_wnd = t.snd_wnd;
        t.snd_wl1 = Seq(ack.seq);
        t.snd_wl2 = Seq(ack.ack);
        t.state = State::Established;
        t.notes.established = true;
        t
    }

    /// Reads the peer's SYN: its sequence number and the options both sides agree on.
    fn take_syn(&mut self, syn: &TcpRepr, now: Micros) {
        self.irs = Seq(syn.seq);
        self.rcv_nxt = self.irs + 1;
        self.rcv_adv = self.rcv_nxt;
        self.last_ack_sent = self.rcv_nxt;
        self.peer_mss = syn.options.mss.unwrap_or(DEFAULT_MSS).max(64);
        let ours_ws = self.cfg.window_scale;
        if let (true, Some(ws)) = (ours_ws, syn.options.window_scale) {
            self.wscale_ok = true;
            self.snd_wscale = ws.min(14);
            self.rcv_wscale = self.cfg.rcv_wscale();
        }
        self.sack_ok = self.cfg.sack && syn.options.sack_permitted;
        if let (true, Some((tsval, _))) = (self.cfg.timestamps, syn.options.timestamps) {
            self.ts_ok = true;
            self.ts_recent = tsval;
            self.ts_recent_at = now;
        }
        // The window in a SYN is never scaled.
        self.snd_wnd = u32::from(syn.window);
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = Seq(syn.seq);
        self.update_smss();
        self.cc = Congestion::new(self.cfg.cc, self.smss);
    }

    fn update_smss(&mut self) {
        let opts = if self.ts_ok { 12 } else { 0 };
        self.smss = u32::from(self.peer_mss.min(self.cfg.mss).min(self.path_mss)).saturating_sub(opts).max(32);
        self.cc.set_smss(self.smss);
    }

    // ---- accessors -------------------------------------------------------------------------

    /// The addresses.
    pub fn tuple(&self) -> &Tuple {
        &self.tuple
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// True once SYNs were exchanged (data may flow).
    pub fn is_synchronized(&self) -> bool {
        !matches!(self.state, State::SynSent | State::SynReceived | State::Closed)
    }

    /// Opened by a listener.
    pub fn is_passive(&self) -> bool {
        self.passive
    }

    /// Payload bytes per segment.
    pub fn smss(&self) -> u32 {
        self.smss
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u32 {
        self.cc.cwnd()
    }

    /// The peer's receive window in bytes.
    pub fn snd_wnd(&self) -> u32 {
        self.snd_wnd
    }

    /// Stream offset up to which the peer acknowledged our data.
    pub fn acked_offset(&self) -> u64 {
        self.una_off
    }

    /// True once the application closed its side (the source can grow no more).
    pub fn is_closing(&self) -> bool {
        self.closing
            || !matches!(self.state, State::SynSent | State::SynReceived | State::Established | State::CloseWait)
    }

    /// Bytes the source may grow by now without going past the peer's window.
    pub fn send_room(&self) -> u64 {
        (self.una_off + u64::from(self.snd_wnd)).saturating_sub(self.src_end)
    }

    /// Source bytes not yet acknowledged.
    pub fn unacked(&self) -> u64 {
        self.src_end - self.una_off
    }

    /// Bytes delivered to the application and not yet released with `recv_done`.
    pub fn held(&self) -> u32 {
        self.held
    }

    /// Smoothed RTT.
    pub fn srtt(&self) -> Option<Micros> {
        self.rtt.srtt()
    }

    /// Current retransmission timeout (with backoff).
    pub fn rto(&self) -> Micros {
        self.rtt.rto()
    }

    /// True while a reassembly buffer is held.
    pub fn holds_ooo(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// Negotiated options: (window scaling, SACK, timestamps).
    pub fn negotiated(&self) -> (bool, bool, bool) {
        (self.wscale_ok, self.sack_ok, self.ts_ok)
    }

    /// The segment sequence space: (snd_una, snd_nxt, rcv_nxt).
    pub fn numbers(&self) -> (Seq, Seq, Seq) {
        (self.snd_una, self.snd_nxt, self.rcv_nxt)
    }

    /// True if something happened that [`take_notes`](Self::take_notes) would report.
    pub fn has_notes(&self) -> bool {
        self.notes != Notes::default()
    }

    /// Takes what happened since the last call.
    pub fn take_notes(&mut self) -> Notes {
        std::mem::take(&mut self.notes)
    }

    // ---- application -----------------------------------------------------------------------

    /// The source now reaches `end` (a stream offset, never decreasing).
    pub fn set_source_end(&mut self, end: u64) {
        if !self.closing && end > self.src_end {
            self.src_end = end;
        }
    }

    /// Where the source reaches.
    pub fn source_end(&self) -> u64 {
        self.src_end
    }

    /// The application has finished with `n` received bytes: the window reopens.
    pub fn recv_done(&mut self, n: u32) {
        self.held = self.held.saturating_sub(n);
        // Send a window update when the advertised window fell below half and at least a
        // segment's worth opened; otherwise the next ACK carries it.
        let adv = self.rcv_wnd();
        let step = (self.cfg.rcv_buf / 2).min(self.cfg.mss.into()).max(1);
        if self.is_synchronized() && !self.fin_received && adv < self.cfg.rcv_buf / 2 && self.room() >= adv + step {
            self.ack_now = true;
        }
    }

    /// True if the connection has something to send now (data, control or an ACK).
    pub fn wants_output(&self) -> bool {
        match self.state {
            State::Closed => return self.rst_out.is_some(),
            State::TimeWait => return self.ack_now,
            _ => {}
        }
        self.ack_now
            || self.send_probe
            || self.rst_out.is_some()
            || self.rtx_una
            || self.snd_nxt == self.iss
            || self.data_left() > 0
            || (self.closing && self.fin_seq.is_none_or(|f| self.snd_nxt <= f))
            || self.recovery.is_some()
    }

    /// Half-close: FIN after the last source byte. Idempotent.
    pub fn close(&mut self) {
        match self.state {
            State::SynSent => self.finish(End::Closed),
            State::SynReceived | State::Established => {
                self.closing = true;
                if self.state == State::Established {
                    self.state = State::FinWait1;
                }
            }
            State::CloseWait => {
                self.closing = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// Abort: RST to the peer (in synchronized states) and gone.
    pub fn abort(&mut self) {
        if matches!(self.state, State::Closed | State::TimeWait) {
            return;
        }
        if self.state != State::SynSent {
            self.rst_out = Some((self.snd_nxt.max(self.snd_una), Some(self.rcv_nxt)));
        }
        self.finish(End::Aborted);
    }

    /// A smaller path MTU was learned (ICMP fragmentation needed): later segments, and
    /// retransmissions, are cut to fit. `mtu` is the IP MTU.
    pub fn set_path_mtu(&mut self, mtu: u16) {
        let mss = mtu.saturating_sub(40).max(68);
        if mss < self.path_mss {
            self.path_mss = mss;
            self.update_smss();
            if self.snd_nxt > self.snd_una {
                // What was in flight at the old size is lost; resend it at the new one.
                self.snd_nxt = self.snd_una;
            }
        }
    }

    fn finish(&mut self, why: End) {
        if self.notes.end.is_none() && !matches!(self.state, State::Closed | State::TimeWait) {
            self.notes.end = Some(why);
        }
        self.state = State::Closed;
        self.rtx_at = None;
        self.persist_at = None;
        self.keepalive_at = None;
        self.delack_at = None;
        self.end_at = None;
    }

    fn enter_time_wait(&mut self, now: Micros) {
        if self.notes.end.is_none() {
            self.notes.end = Some(End::Closed);
        }
        self.state = State::TimeWait;
        self.rtx_at = None;
        self.persist_at = None;
        self.keepalive_at = None;
        self.end_at = Some(now + self.cfg.time_wait);
    }

    /// A SYN for this tuple while in TIME-WAIT may start a new connection if it is clearly
    /// newer: a higher sequence number, or with timestamps a newer TSval (RFC 6191).
    pub fn accepts_reopen(&self, syn: &TcpRepr) -> bool {
        if self.state != State::TimeWait {
            return false;
        }
        match (self.ts_ok, syn.options.timestamps) {
            (true, Some((tsval, _))) => (tsval.wrapping_sub(self.ts_recent) as i32) > 0,
            _ => Seq(syn.seq) > self.rcv_nxt,
        }
    }

    /// Releases resources the connection holds in the shared environment.
    pub fn release(&mut self, env: &mut Env) {
        self.ooo.release(&mut env.pool, true);
    }

    // ---- receive window --------------------------------------------------------------------

    fn room(&self) -> u32 {
        self.cfg.rcv_buf.saturating_sub(self.held)
    }

    fn rcv_wnd(&self) -> u32 {
        if self.rcv_adv > self.rcv_nxt {
            self.rcv_adv.since(self.rcv_nxt)
        } else {
            0
        }
    }

    /// The window field for an outgoing segment; moves the advertised right edge, which never
    /// moves left (RFC 9293 §3.8.6.2.2) and moves right in steps worth sending (receiver SWS
    /// avoidance).
    fn window_field(&mut self) -> u16 {
        let ws = if self.wscale_ok { self.rcv_wscale } else { 0 };
        let cap = 65_535u32 << ws;
        let edge = self.rcv_nxt + self.room().min(cap);
        let adv = self.rcv_adv.max(self.rcv_nxt);
        let step = (self.cfg.rcv_buf / 2).min(self.cfg.mss.into()).max(1);
        let adv = if edge > adv && (edge.since(adv) >= step || edge.since(self.rcv_nxt) >= self.room().min(cap)) {
            edge
        } else {
            adv
        };
        let field = adv.since(self.rcv_nxt).div_ceil(1 << ws).min(65_535);
        self.rcv_adv = self.rcv_adv.max(self.rcv_nxt + (field << ws));
        field as u16
    }

    // ---- input -----------------------------------------------------------------------------

    /// Processes one segment addressed to this connection. In-order data goes to `deliver`,
    /// which returns how many of those bytes the application is already done with.
    pub fn on_segment(
        &mut self,
        env: &mut Env,
        now: Micros,
        seg: &TcpRepr,
        payload: &[u8],
        deliver: &mut dyn FnMut(&[u8]) -> u32,
    ) {
        let f = seg.flags;
        match self.state {
            State::Closed => return,
            State::SynSent => {
                self.on_syn_sent(env, now, seg, payload, deliver);
                self.arm(now);
                return;
            }
            _ => {}
        }
        self.last_rx = now;
        self.probes = 0;
        self.keepalive_at = None;
        if self.state == State::FinWait2 {
            // FIN-WAIT-2 times out only while the peer is silent: it may still be sending.
            self.end_at = Some(now + self.cfg.fin_wait2);
        }

        // A retransmitted SYN while our SYN-ACK is outstanding: send the SYN-ACK again.
        if self.state == State::SynReceived && f.has(TcpFlags::SYN) && !f.has(TcpFlags::ACK) && Seq(seg.seq) == self.irs
        {
            self.snd_nxt = self.iss;
            return;
        }

        // PAWS (RFC 7323 §5): an old timestamp marks an old duplicate.
        if self.ts_ok && !f.has(TcpFlags::RST) {
            if let Some((tsval, _)) = seg.options.timestamps {
                if (tsval.wrapping_sub(self.ts_recent) as i32) < 0 && now.saturating_sub(self.ts_recent_at) < PAWS_IDLE
                {
                    env.stats.paws_dropped += 1;
                    self.ack_now = true;
                    return;
                }
            }
        }

        // Sequence acceptability (RFC 9293 §3.10.7.4, first check).
        let seq0 = Seq(seg.seq);
        let seg_len = payload.len() as u32 + u32::from(f.has(TcpFlags::SYN)) + u32::from(f.has(TcpFlags::FIN));
        let wnd = self.rcv_wnd();
        let in_wnd = |s: Seq| s.in_range(self.rcv_nxt, self.rcv_nxt + wnd);
        let acceptable = match (seg_len, wnd) {
            (0, 0) => seq0 == self.rcv_nxt,
            (0, _) => in_wnd(seq0),
            (_, 0) => seq0 == self.rcv_nxt, // zero window: take the control bits, not the data
            _ => in_wnd(seq0) || in_wnd(seq0 + seg_len - 1),
        };
        if !acceptable {
            env.stats.out_of_window += 1;
            if !f.has(TcpFlags::RST) {
                self.ack_now = true;
                if self.state == State::TimeWait && f.has(TcpFlags::FIN) {
                    self.end_at = Some(now + self.cfg.time_wait);
                }
            }
            return;
        }

        // RST (RFC 5961 §3): only the exact next sequence number resets; others in the window
        // get a challenge ACK.
        if f.has(TcpFlags::RST) {
            if seq0 == self.rcv_nxt {
                env.stats.resets_in += 1;
                let why = if self.state == State::SynReceived && !self.passive { End::Refused } else { End::Reset };
                self.finish(why);
            } else if env.allow_challenge(now) {
                self.ack_now = true;
            }
            return;
        }

        // A SYN in a synchronized state (RFC 5961 §4): challenge ACK, drop.
        if f.has(TcpFlags::SYN) {
            if env.allow_challenge(now) {
                self.ack_now = true;
            }
            return;
        }

        if !f.has(TcpFlags::ACK) {
            return;
        }

        // TS.Recent (RFC 7323 §4.3) from segments that cover the last ACK we sent.
        if self.ts_ok {
            if let Some((tsval, _)) = seg.options.timestamps {
                if seq0 <= self.last_ack_sent && (tsval.wrapping_sub(self.ts_recent) as i32) >= 0 {
                    self.ts_recent = tsval;
                    self.ts_recent_at = now;
                }
            }
        }

        if !self.on_ack(env, now, seg, payload.len()) {
            return;
        }
        if self.state == State::Closed {
            return;
        }

        // Trim to the window: drop what we already have and what does not fit.
        let mut seq = seq0;
        let mut data = payload;
        let mut fin = f.has(TcpFlags::FIN);
        if seq < self.rcv_nxt {
            let dup = self.rcv_nxt.since(seq) as usize;
            if dup > data.len() {
                fin = false; // the FIN too is old (FIN seq < rcv_nxt)
                data = &[];
            } else {
                data = &data[dup..];
            }
            seq = self.rcv_nxt;
        }
        let wnd = self.rcv_wnd();
        if data.len() as u32 > wnd.saturating_sub(seq.since(self.rcv_nxt)) {
            data = &data[..wnd.saturating_sub(seq.since(self.rcv_nxt)) as usize];
            fin = false;
            self.ack_now = true; // tell the sender where the window ends
            env.stats.out_of_window += 1;
        }

        if matches!(self.state, State::Established | State::FinWait1 | State::FinWait2) && !data.is_empty() {
            if self.fin_received {
                // Data after the peer's FIN cannot be; ignore it.
            } else if seq == self.rcv_nxt {
                self.take_data(data, deliver);
                if !self.ooo.is_empty() {
                    self.pull_ooo(env, deliver);
                    self.ack_now = true; // a hole filled: tell the sender at once (RFC 5681 §4.2)
                }
                self.rcv_unacked += data.len() as u32;
                if self.rcv_unacked >= 2 * u32::from(self.cfg.mss) {
                    self.ack_now = true;
                } else if self.delack_at.is_none() {
                    self.delack_at = Some(now + self.cfg.delayed_ack);
                }
            } else {
                if self.ooo.store(&mut env.pool, self.rcv_nxt, seq, data) {
                    env.stats.ooo_kept += 1;
                } else {
                    env.stats.ooo_dropped += 1;
                }
                self.ack_now = true; // duplicate ACK with SACK blocks, at once (RFC 5681 §4.2)
            }
        }

        if fin {
            let at = seq + data.len() as u32;
            if at == self.rcv_nxt {
                self.take_fin(now);
            } else if at > self.rcv_nxt {
                self.peer_fin_at = Some(at); // reached once the hole before it fills
                self.ack_now = true;
            }
        }
        self.arm(now);
    }

    fn take_data(&mut self, data: &[u8], deliver: &mut dyn FnMut(&[u8]) -> u32) {
        self.rcv_nxt = self.rcv_nxt + data.len() as u32;
        self.held += data.len() as u32;
        let done = deliver(data).min(data.len() as u32);
        self.held -= done;
    }

    fn pull_ooo(&mut self, env: &mut Env, deliver: &mut dyn FnMut(&[u8]) -> u32) {
        let mut held = 0u32;
        let mut done = 0u32;
        if let Some(end) = self.ooo.take_ready(self.rcv_nxt, |d| {
            held += d.len() as u32;
            done += deliver(d).min(d.len() as u32);
        }) {
            self.rcv_nxt = end;
        }
        self.held += held - done;
        self.ooo.release(&mut env.pool, false);
        if self.peer_fin_at == Some(self.rcv_nxt) {
            self.take_fin(self.last_rx);
        }
    }

    fn take_fin(&mut self, now: Micros) {
        if self.fin_received {
            if self.state == State::TimeWait {
                self.end_at = Some(now + self.cfg.time_wait);
            }
            self.ack_now = true;
            return;
        }
        self.fin_received = true;
        self.peer_fin_at = None;
        self.rcv_nxt = self.rcv_nxt + 1;
        self.ack_now = true;
        self.notes.peer_fin = true;
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 => {
                if self.fin_acked() {
                    self.enter_time_wait(now);
                } else {
                    self.state = State::Closing;
                }
            }
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    fn fin_acked(&self) -> bool {
        self.fin_seq.is_some_and(|f| self.snd_una > f)
    }

    fn on_syn_sent(
        &mut self,
        env: &mut Env,
        now: Micros,
        seg: &TcpRepr,
        payload: &[u8],
        deliver: &mut dyn FnMut(&[u8]) -> u32,
    ) {
        let f = seg.flags;
        let ack = Seq(seg.ack);
        if f.has(TcpFlags::ACK) && (ack <= self.iss || ack > self.snd_max) {
            if !f.has(TcpFlags::RST) {
                self.rst_out = Some((ack, None));
            }
            return;
        }
        if f.has(TcpFlags::RST) {
            if f.has(TcpFlags::ACK) {
                env.stats.resets_in += 1;
                self.finish(End::Refused);
            }
            return;
        }
        if !f.has(TcpFlags::SYN) {
            return;
        }
        self.last_rx = now;
        self.take_syn(seg, now);
        if f.has(TcpFlags::ACK) {
            self.snd_una = ack;
            self.snd_wnd = u32::from(seg.window); // SYN-ACK windows are unscaled too
            self.max_snd_wnd = self.snd_wnd;
            self.snd_wl2 = ack;
            self.rtx_at = None;
            self.retries = 0;
            if let Some((s, t)) = self.rtt_probe.take() {
                if ack >= s {
                    self.rtt.sample(now - t);
                }
            }
            self.state = State::Established;
            self.notes.established = true;
            env.stats.established += 1;
            self.ack_now = true;
            if !payload.is_empty() {
                let room = self.rcv_wnd_for_syn();
                let data = &payload[..payload.len().min(room as usize)];
                self.take_data(data, deliver);
            }
            if f.has(TcpFlags::FIN) {
                self.take_fin(now);
            }
        } else {
            // Simultaneous open: SYN-RECEIVED, and our SYN goes out again as a SYN-ACK.
            self.state = State::SynReceived;
            self.snd_nxt = self.iss;
            self.rtx_at = None;
        }
    }

    fn rcv_wnd_for_syn(&self) -> u32 {
        self.cfg.rcv_buf.min(65_535)
    }

    /// The ACK field (RFC 9293 §3.10.7.4 fifth check, RFC 5961 §5). Returns false when the
    /// segment is to be dropped.
    fn on_ack(&mut self, env: &mut Env, now: Micros, seg: &TcpRepr, data_len: usize) -> bool {
        let ack = Seq(seg.ack);
        if self.state == State::SynReceived {
            if ack > self.snd_una && ack <= self.snd_max {
                self.state = State::Established;
                self.notes.established = true;
                env.stats.established += 1;
                if self.closing {
                    self.state = State::FinWait1;
                }
                self.snd_wnd = u32::from(seg.window) << self.snd_wscale;
                self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
                self.snd_wl1 = Seq(seg.seq);
                self.snd_wl2 = ack;
            } else {
                self.rst_out = Some((ack, None));
                return false;
            }
        }
        if ack > self.snd_max {
            self.ack_now = true; // acknowledges something never sent
            return false;
        }
        if ack < self.snd_una - self.max_snd_wnd.max(1) {
            if env.allow_challenge(now) {
                self.ack_now = true;
            }
            return false;
        }

        let wnd = u32::from(seg.window) << self.snd_wscale;
        let new_sack = self.sack_ok && self.take_sack_blocks(seg);
        if ack > self.snd_una {
            let tsecr = if self.ts_ok { seg.options.timestamps.map(|t| t.1) } else { None };
            self.on_new_ack(env, now, ack, tsecr);
        } else if ack == self.snd_una
            && data_len == 0
            && !seg.flags.has(TcpFlags::SYN)
            && !seg.flags.has(TcpFlags::FIN)
            && self.snd_max > self.snd_una
            && (wnd == self.snd_wnd || new_sack)
        {
            self.on_dup_ack(env);
        }

        // Window update (RFC 9293: SND.WL1 < SEG.SEQ or (= and SND.WL2 =< SEG.ACK)).
        let seq = Seq(seg.seq);
        if self.snd_wl1 < seq || (self.snd_wl1 == seq && self.snd_wl2 <= ack) {
            if wnd > self.snd_wnd {
                self.notes.window_opened = true;
            }
            self.snd_wnd = wnd;
            self.max_snd_wnd = self.max_snd_wnd.max(wnd);
            self.snd_wl1 = seq;
            self.snd_wl2 = ack;
        }

        match self.state {
            State::FinWait1 if self.fin_acked() => {
                self.state = State::FinWait2;
                self.end_at = Some(now + self.cfg.fin_wait2);
            }
            State::Closing if self.fin_acked() => self.enter_time_wait(now),
            State::LastAck if self.fin_acked() => {
                self.finish(End::Closed);
                return false;
            }
            _ => {}
        }
        true
    }

    fn take_sack_blocks(&mut self, seg: &TcpRepr) -> bool {
        let mut news = false;
        for &(l, r) in seg.options.sack_blocks.iter().flatten() {
            let (l, r) = (Seq(l), Seq(r));
            // Only blocks inside what is outstanding (RFC 2018 leaves validation to us).
            if l < r && l >= self.snd_una && r <= self.snd_max {
                let before = self.sacked.covered(l, r);
                if before < r.since(l) && self.sacked.insert(l, r) {
                    news = true;
                }
            }
        }
        news
    }

    fn on_new_ack(&mut self, env: &mut Env, now: Micros, ack: Seq, tsecr: Option<u32>) {
        let mut acked = ack.since(self.snd_una);
        if self.snd_una == self.iss {
            acked -= 1; // the SYN
        }
        if let Some(f) = self.fin_seq {
            if ack > f {
                acked -= 1; // the FIN
            }
        }
        let flight_before = self.flight();
        self.una_off += u64::from(acked);
        self.notes.acked += u64::from(acked);
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        self.retries = 0;
        self.sacked.remove_below(ack);
        if self.high_rxt < ack {
            self.high_rxt = ack;
        }
        if let Some((s, t)) = self.rtt_probe {
            if ack >= s {
                self.rtt.sample(now.saturating_sub(t));
                self.rtt_probe = None;
            }
        } else if let Some(echo) = tsecr.filter(|&e| e != 0 && (e.wrapping_sub(self.rtx_ts) as i32) >= 0) {
            // RFC 7323 §4: the echoed timestamp names the transmission being acknowledged,
            // retransmissions included, so it gives a sample where Karn's rule gives none.
            // An echo older than the last retransmission is skipped: it comes from a peer
            // that got the original while its ACK was lost, and would count the whole
            // timeout as path delay.
            let ms = self.ts_clock(now).wrapping_sub(echo);
            if ms < 60_000 {
                self.rtt.sample(u64::from(ms) * 1000);
            }
        }
        self.rtt.progress();
        self.dupacks = 0;
        match self.recovery {
            Some(point) if ack >= point => {
                self.recovery = None;
                self.rtx_una = false;
                if self.sack_ok {
                    self.cc.set_cwnd(self.cc.ssthresh());
                } else {
                    self.cc.on_recovery_exit(self.flight());
                }
            }
            Some(_) if !self.sack_ok => {
                // NewReno partial ACK (RFC 6582 §3.2 step 3): retransmit the next hole,
                // deflate by what was acknowledged, keep one segment of the new data.
                self.rtx_una = true;
                let c = self.cc.cwnd().saturating_sub(acked);
                let c = if acked >= self.smss { c + self.smss } else { c };
                self.cc.set_cwnd(c);
            }
            Some(_) => {}
            None => self.cc.on_ack(acked, now, self.rtt.srtt().unwrap_or(0), flight_before),
        }
        // Restart the timer for what remains outstanding (RFC 6298 §5.3).
        self.rtx_at = if self.snd_max > self.snd_una { Some(now + self.rtt.rto()) } else { None };
        if self.sack_ok && self.recovery.is_none() && self.sack_loss() {
            self.enter_recovery(env);
        }
    }

    fn on_dup_ack(&mut self, env: &mut Env) {
        self.dupacks += 1;
        match self.recovery {
            None => {
                if self.dupacks >= DUP_THRESH || (self.sack_ok && self.sack_loss()) {
                    self.enter_recovery(env);
                }
            }
            Some(_) if !self.sack_ok => {
                // NewReno: each further duplicate means a segment left the network.
                self.cc.set_cwnd(self.cc.cwnd() + self.smss);
            }
            Some(_) => {}
        }
    }

    /// RFC 6675's IsLost(SND.UNA): enough SACKed above the first hole.
    fn sack_loss(&self) -> bool {
        self.lost_boundary() > self.snd_una
    }

    fn enter_recovery(&mut self, env: &mut Env) {
        // RFC 6582's guard: one reduction per window of data.
        if self.snd_una <= self.last_recover && self.last_recover != self.iss {
            return;
        }
        env.stats.fast_recoveries += 1;
        let flight = self.flight();
        self.recovery = Some(self.snd_max);
        self.last_recover = self.snd_max;
        let w = self.cc.on_loss(flight);
        if self.sack_ok {
            self.high_rxt = self.snd_una;
            self.rtx_una = true; // RFC 6675 §5 (4.3): the first segment goes at once
        } else {
            self.cc.set_cwnd(w + 3 * self.smss);
            self.rtx_una = true;
        }
        self.rtt_probe = None;
    }

    /// Every unSACKed byte below this is lost (RFC 6675 IsLost): walking down from the top,
    /// the first SACKed range at which more than (DupThresh − 1)·SMSS bytes, or DupThresh
    /// ranges, are SACKed above.
    fn lost_boundary(&self) -> Seq {
        let mut bytes = 0u32;
        for (n, r) in self.sacked.as_slice().iter().rev().enumerate() {
            bytes += r.right.since(r.left);
            if bytes > (DUP_THRESH - 1) * self.smss || n as u32 + 1 >= DUP_THRESH {
                return r.left;
            }
        }
        self.snd_una
    }

    fn unsacked(&self, a: Seq, b: Seq) -> u32 {
        if b <= a {
            return 0;
        }
        b.since(a) - self.sacked.covered(a, b)
    }

    /// Bytes in the network: RFC 6675's pipe during SACK recovery, otherwise what was sent
    /// from SND.UNA less what the peer SACKed.
    fn flight(&self) -> u32 {
        if self.recovery.is_some() && self.sack_ok {
            let lost = self.lost_boundary();
            self.unsacked(lost.max(self.snd_una), self.snd_max) + self.unsacked(self.snd_una, self.high_rxt)
        } else {
            self.unsacked(self.snd_una, self.snd_nxt)
        }
    }

    // ---- timers ----------------------------------------------------------------------------

    /// The earliest time [`on_timer`](Self::on_timer) has something to do.
    pub fn deadline(&self) -> Option<Micros> {
        [self.rtx_at, self.delack_at, self.persist_at, self.keepalive_at, self.end_at].into_iter().flatten().min()
    }

    /// Runs what is due at `now`.
    pub fn on_timer(&mut self, env: &mut Env, now: Micros) {
        if self.end_at.is_some_and(|t| t <= now) {
            let tw = self.state == State::TimeWait;
            if !tw {
                env.stats.timeouts += 1;
            }
            self.finish(if tw { End::Closed } else { End::TimedOut });
            return;
        }
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = None;
            self.ack_now = true;
        }
        if self.rtx_at.is_some_and(|t| t <= now) {
            self.on_rto(env, now);
            if self.state == State::Closed {
                return;
            }
        }
        if self.persist_at.is_some_and(|t| t <= now) {
            self.persist_at = None;
            self.probes += 1;
            if self.probes > self.cfg.retries {
                env.stats.timeouts += 1;
                self.finish(End::TimedOut);
                return;
            }
            self.send_probe = true;
        }
        if self.keepalive_at.is_some_and(|t| t <= now) {
            self.keepalive_at = None;
            let ka = self.cfg.keepalive.expect("keep-alive armed only when configured");
            if self.probes >= ka.count {
                env.stats.timeouts += 1;
                self.finish(End::TimedOut);
                return;
            }
            self.probes += 1;
            self.send_probe = true;
            self.keepalive_at = Some(now + ka.interval);
        }
        self.arm(now);
    }

    fn on_rto(&mut self, env: &mut Env, now: Micros) {
        self.rtx_at = None;
        let outstanding = self.snd_max > self.snd_una || matches!(self.state, State::SynSent | State::SynReceived);
        if !outstanding {
            return;
        }
        self.retries += 1;
        let limit = if self.is_synchronized() { self.cfg.retries } else { self.cfg.syn_retries };
        if self.retries > limit {
            env.stats.timeouts += 1;
            self.finish(End::TimedOut);
            return;
        }
        env.stats.rtos += 1;
        let first = self.rtt.backoffs() == 0;
        self.rtt.back_off();
        let flight = self.flight();
        if self.is_synchronized() {
            self.cc.on_rto(flight, first);
        }
        self.recovery = None;
        self.last_recover = self.snd_max;
        self.dupacks = 0;
        self.rtx_una = false;
        // The peer may have dropped what it SACKed (RFC 2018 §8): start again from SND.UNA.
        self.sacked.clear();
        self.high_rxt = self.snd_una;
        self.snd_nxt = self.snd_una;
        self.rtt_probe = None;
        self.rtx_at = Some(now + self.rtt.rto());
    }

    /// Recomputes which timers run.
    fn arm(&mut self, now: Micros) {
        if matches!(self.state, State::Closed | State::TimeWait) {
            return;
        }
        let outstanding = self.snd_max > self.snd_una || matches!(self.state, State::SynSent | State::SynReceived);
        if !outstanding {
            self.rtx_at = None;
        } else if self.rtx_at.is_none() && self.snd_nxt > self.snd_una {
            self.rtx_at = Some(now + self.rtt.rto());
        }
        // Window probes: data waits, the window is shut, nothing in flight to bring an update.
        let waiting = self.is_synchronized() && !outstanding && self.has_data_beyond_window();
        if !waiting {
            self.persist_at = None;
        } else if self.persist_at.is_none() {
            let backoff = self.rtt.rto().saturating_mul(1 << self.probes.min(10)).min(self.cfg.rto_max);
            self.persist_at = Some(now + backoff);
        }
        match self.cfg.keepalive {
            Some(ka) if self.is_synchronized() && !outstanding && !waiting => {
                if self.keepalive_at.is_none() {
                    self.keepalive_at = Some(self.last_rx + ka.idle);
                }
            }
            _ => self.keepalive_at = None,
        }
    }

    fn data_left(&self) -> u64 {
        let off = self.una_off + u64::from(self.snd_nxt.since(self.snd_una));
        self.src_end.saturating_sub(off)
    }

    fn has_data_beyond_window(&self) -> bool {
        let usable = (self.snd_una + self.snd_wnd).since(self.snd_nxt);
        let usable = if self.snd_una + self.snd_wnd > self.snd_nxt { usable } else { 0 };
        self.data_left() > 0 && usable == 0
    }

    // ---- output ----------------------------------------------------------------------------

    /// The next segment to send, if any. Call until it returns None (or the TX ring is full:
    /// whatever was not taken is offered again at the next call).
    pub fn poll(&mut self, env: &mut Env, now: Micros) -> Option<SegOut> {
        self.poll_cut(env, now, &|_| u32::MAX)
    }

    /// As [`Tcb::poll`], with no data segment crossing a boundary of the source: `cut(off)` is
    /// the most bytes a segment starting at stream offset `off` may carry. A source made of
    /// ready frames (Sandstorm) gives each frame's end, so every segment is one whole frame.
    pub fn poll_cut(&mut self, env: &mut Env, now: Micros, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        let out = self.next_segment(env, now, cut);
        if let Some(s) = &out {
            env.stats.segs_out += 1;
            if s.repr.flags.has(TcpFlags::RST) {
                env.stats.resets_out += 1;
            }
        }
        // Also when nothing went: data that waits on a shut window needs the probe timer.
        self.arm(now);
        out
    }

    fn next_segment(&mut self, env: &mut Env, now: Micros, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        if let Some((seq, ack)) = self.rst_out.take() {
            return Some(self.rst(seq, ack));
        }
        match self.state {
            State::Closed => return None,
            State::SynSent if self.snd_nxt == self.iss => return Some(self.syn(now, false)),
            State::SynReceived if self.snd_nxt == self.iss => return Some(self.syn(now, true)),
            State::SynSent => return None,
            State::SynReceived => return self.ack_now.then(|| self.pure_ack(now, self.snd_nxt)),
            State::TimeWait => return self.ack_now.then(|| self.pure_ack(now, self.snd_max)),
            _ => {}
        }
        if let Some(s) = self.retransmission(env, now, cut) {
            return Some(s);
        }
        if let Some(s) = self.new_data(now, cut) {
            return Some(s);
        }
        if self.send_probe {
            self.send_probe = false;
            env.stats.probes += 1;
            // An old sequence number forces the peer to answer with its window (RFC 9293
            // §3.8.6.1 allows a probe without data; Linux sends this one).
            return Some(self.pure_ack(now, self.snd_una - 1));
        }
        if self.ack_now {
            // SND.MAX, not SND.NXT: after a timeout SND.NXT goes back, and an ACK numbered
            // below what the peer already received would be dropped as a duplicate.
            return Some(self.pure_ack(now, self.snd_max));
        }
        None
    }

    fn rst(&mut self, seq: Seq, ack: Option<Seq>) -> SegOut {
        let mut flags = TcpFlags::RST;
        if ack.is_some() {
            flags |= TcpFlags::ACK;
        }
        SegOut {
            repr: TcpRepr {
                src_port: self.tuple.local_port,
                dst_port: self.tuple.remote_port,
                seq: seq.0,
                ack: ack.map_or(0, |a| a.0),
                flags: TcpFlags(flags),
                window: 0,
                options: TcpOptions::default(),
                payload_len: 0,
            },
            data_off: 0,
        }
    }

    fn syn(&mut self, now: Micros, ack: bool) -> SegOut {
        let ts = Some((self.ts_clock(now), if ack { self.ts_recent } else { 0 }));
        let options = if ack {
            let peer = TcpOptions {
                window_scale: self.wscale_ok.then_some(self.snd_wscale),
                sack_permitted: self.sack_ok,
                timestamps: self.ts_ok.then_some((0, 0)),
                ..TcpOptions::default()
            };
            syn_options(&self.cfg, Some(&peer), ts)
        } else {
            syn_options(&self.cfg, None, ts)
        };
        let window = self.rcv_wnd_for_syn() as u16;
        if ack {
            self.rcv_adv = self.rcv_nxt + u32::from(window);
            self.last_ack_sent = self.rcv_nxt;
        }
        self.snd_nxt = self.iss + 1;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        if self.rtx_at.is_none() {
            self.rtx_at = Some(now + self.rtt.rto());
        }
        if self.retries == 0 && self.rtt_probe.is_none() {
            self.rtt_probe = Some((self.iss + 1, now));
        } else if self.retries > 0 {
            self.rtt_probe = None;
        }
        SegOut {
            repr: TcpRepr {
                src_port: self.tuple.local_port,
                dst_port: self.tuple.remote_port,
                seq: self.iss.0,
                ack: if ack { self.rcv_nxt.0 } else { 0 },
                flags: TcpFlags(if ack { TcpFlags::SYN | TcpFlags::ACK } else { TcpFlags::SYN }),
                window,
                options,
                payload_len: 0,
            },
            data_off: 0,
        }
    }

    fn ts_clock(&self, now: Micros) -> u32 {
        ts_clock(self.ts_offset, now)
    }

    /// A header with ACK, window, timestamps and SACK blocks; records that an ACK went out.
    fn header(&mut self, now: Micros, seq: Seq, flags: u8, len: u32) -> TcpRepr {
        let mut options = TcpOptions::default();
        if self.ts_ok {
            options.timestamps = Some((self.ts_clock(now), self.ts_recent));
        }
        let room = self.sack_blocks();
        if room > 0 {
            let mut blocks = [(0u32, 0u32); 4];
            let n = self.ooo.ranges().recent_first(&mut blocks[..room]);
            for (o, b) in options.sack_blocks.iter_mut().zip(&blocks[..n]) {
                *o = Some(*b);
            }
        }
        let window = self.window_field();
        self.last_ack_sent = self.rcv_nxt;
        self.ack_now = false;
        self.delack_at = None;
        self.rcv_unacked = 0;
        TcpRepr {
            src_port: self.tuple.local_port,
            dst_port: self.tuple.remote_port,
            seq: seq.0,
            ack: self.rcv_nxt.0,
            flags: TcpFlags(flags | TcpFlags::ACK),
            window,
            options,
            payload_len: len as usize,
        }
    }

    fn sack_blocks(&self) -> usize {
        if self.sack_ok && !self.ooo.is_empty() {
            self.ooo.ranges().as_slice().len().min(if self.ts_ok { 3 } else { 4 })
        } else {
            0
        }
    }

    fn sack_option_len(&self) -> u32 {
        match self.sack_blocks() {
            0 => 0,
            n => 4 + 8 * n as u32,
        }
    }

    fn pure_ack(&mut self, now: Micros, seq: Seq) -> SegOut {
        SegOut { repr: self.header(now, seq, 0, 0), data_off: 0 }
    }

    /// A segment of data (and FIN) starting at `seq` ≥ SND.UNA, at most `max` data bytes.
    fn data_segment(&mut self, now: Micros, seq: Seq, max: u32, rtx: bool, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        let off = self.una_off + u64::from(seq.since(self.snd_una));
        let avail = self.src_end.saturating_sub(off);
        // SACK blocks take room from the payload so the packet still fits the MSS.
        let max = max.min(self.smss.saturating_sub(self.sack_option_len()).max(1)).min(cut(off).max(1));
        let len = u64::from(max).min(avail) as u32;
        let fin = self.closing && off + u64::from(len) == self.src_end;
        if len == 0 && !fin {
            return None;
        }
        let end = seq + len + u32::from(fin);
        if fin {
            self.fin_seq = Some(seq + len);
        }
        if seq < self.snd_max {
            self.rtx_ts = self.ts_clock(now);
            if let Some((s, _)) = self.rtt_probe {
                if seq < s {
                    self.rtt_probe = None; // Karn: no sample from a retransmitted range
                }
            }
        } else if self.rtt_probe.is_none() {
            self.rtt_probe = Some((end, now));
        }
        if !rtx {
            self.snd_nxt = end;
        }
        self.snd_max = self.snd_max.max(end);
        if self.rtx_at.is_none() {
            self.rtx_at = Some(now + self.rtt.rto());
        }
        let psh = if off + u64::from(len) == self.src_end && len > 0 { TcpFlags::PSH } else { 0 };
        let flags = psh | if fin { TcpFlags::FIN } else { 0 };
        Some(SegOut { repr: self.header(now, seq, flags, len), data_off: off })
    }

    fn retransmission(&mut self, env: &mut Env, now: Micros, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        if self.rtx_una {
            self.rtx_una = false;
            let seq = self.snd_una;
            let max = if self.sack_ok { self.unsacked_run(seq) } else { self.smss };
            let s = self.data_segment(now, seq, max, true, cut)?;
            if self.sack_ok {
                self.high_rxt = self.high_rxt.max(seq + s.repr.payload_len as u32);
            }
            env.stats.retransmits += 1;
            return Some(s);
        }
        if self.recovery.is_none() || !self.sack_ok {
            return None;
        }
        let pipe = self.flight();
        if self.cc.cwnd().saturating_sub(pipe) < self.smss {
            return None;
        }
        // NextSeg (RFC 6675 §4), rules 1 and 3: the lowest unSACKed byte above HighRxt that is
        // lost, or failing that, below the highest SACKed byte.
        let lost = self.lost_boundary();
        let top = self.sacked.highest()?;
        let mut s = self.high_rxt.max(self.snd_una);
        for r in self.sacked.as_slice() {
            if s >= r.left && s < r.right {
                s = r.right;
            }
        }
        let rule1 = s < lost;
        if !rule1 && (s >= top || self.data_left() > 0 && self.usable_window() > 0) {
            return None; // rule 2 (new data) comes before rule 3
        }
        let run = self.unsacked_run(s);
        if run == 0 {
            return None;
        }
        let seg = self.data_segment(now, s, run, true, cut)?;
        self.high_rxt = s + seg.repr.payload_len as u32;
        env.stats.retransmits += 1;
        Some(seg)
    }

    /// UnSACKed bytes from `s` up to the next SACKed range or SND.MAX.
    fn unsacked_run(&self, s: Seq) -> u32 {
        let next = self.sacked.as_slice().iter().find(|r| r.left > s).map_or(self.snd_max, |r| r.left);
        let end = next.min(self.snd_max);
        if end > s {
            end.since(s)
        } else {
            0
        }
    }

    fn usable_window(&self) -> u32 {
        let edge = self.snd_una + self.snd_wnd;
        if edge > self.snd_nxt {
            edge.since(self.snd_nxt)
        } else {
            0
        }
    }

    fn new_data(&mut self, now: Micros, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        let left = self.data_left();
        let fin_due = self.closing && self.fin_seq.is_none_or(|f| self.snd_nxt <= f);
        if left == 0 && !fin_due {
            return None;
        }
        let flight = self.flight();
        let cwnd_room = self.cc.cwnd().saturating_sub(flight);
        let room = self.usable_window().min(cwnd_room);
        let off = self.una_off + u64::from(self.snd_nxt.since(self.snd_una));
        // A full segment is an MSS, or less where the source has a boundary.
        let full = self.smss.min(cut(off).max(1));
        let len = u64::from(room.min(full)).min(left) as u32;
        if left > 0 && len == 0 {
            return None;
        }
        // Sender SWS avoidance (RFC 9293 §3.8.6.2.1): a short segment only if it is all we
        // have, or half the peer's largest window, or nothing else is in flight.
        if len < full && u64::from(len) < left && len < self.max_snd_wnd / 2 && flight > 0 {
            return None;
        }
        let seq = self.snd_nxt;
        let rtx = false;
        let s = self.data_segment(now, seq, len, rtx, cut)?;
        Some(s)
    }
}
