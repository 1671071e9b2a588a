//! One connection: the RFC 9293 state machine with MSS, window scaling, timestamps and PAWS
//! (RFC 7323), SACK (RFC 2018) with SACK-based recovery (RFC 6675), NewReno (RFC 6582), the
//! RFC 6298 timer, RACK-TLP (RFC 8985: time-based loss marking, tail loss probes), delayed
//! ACKs, window probes, keep-alive and RFC 5961's checks.
//!
//! There is no send buffer. The connection knows only how far its source reaches (`src_end`,
//! a stream offset) and asks its caller to fill each segment it emits from the source at the
//! offset it names, so retransmissions are regenerated from the source. In-order received data
//! is handed to a callback as a read-only view of the frame (or of the reassembly ring); the
//! window stays closed by what the application holds until it says it is done.
//!
//! Sans-IO: every call takes the time; output is pulled with [`Tcb::poll`].

use std::sync::Arc;

use wire::tcp::{TcpFlags, TcpOptions, TcpRepr};

use crate::cc::Congestion;
use crate::config::Config;
pub use crate::env::Env;
use crate::isn::CookieSyn;
use crate::ranges::SpareRanges;
use crate::reasm::Reassembly;
use crate::rtt::Rtt;
use crate::seq::Seq;
use crate::timestamps::{ts_clock, PAWS_IDLE};
pub use crate::tuple::Tuple;
pub use rate::RateSample;
use timer::{Duration, Instant};

mod autotune;
mod input;
mod output;
mod rack;
mod rate;
mod recovery;
mod rtx_log;
mod tail_loss;
mod timers;
mod undo;

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
/// RFC 9293's default MSS when the peer sends none.
const DEFAULT_MSS: u16 = 536;
/// SACK blocks remembered from the peer.
const SCOREBOARD: usize = 64;

/// The transmission control block.
pub struct Tcb {
    tuple: Tuple,
    state: State,
    /// The listener's (or the connect call's) configuration for this address family, shared:
    /// a copy took 112 bytes of every connection (issue 44).
    cfg: Arc<Config>,
    passive: bool,
    snd: Send,
    rcv: Receive,
    opts: Negotiated,
    ts: Timestamps,
    due: Due,
    timers: Timers,
    rtt: Rtt,
    rtt_probe: Option<RttProbe>,
    cc: Congestion,
    rec: Recovery,
    notes: Notes,
    /// Delivery rate samples, for BBR.
    rate: rate::RateSampler,
}

/// The send side: sequence space, the peer's window, segment size and the source.
struct Send {
    iss: Seq,
    una: Seq,
    nxt: Seq,
    /// Highest sequence number sent (SND.NXT goes back after a timeout; this does not).
    max: Seq,
    /// The stream offset of SND.UNA.
    una_off: u64,
    wnd: u32,
    max_wnd: u32,
    wl1: Seq,
    wl2: Seq,
    wscale: u8,
    /// Payload bytes per segment: the least of both MSSs and the path's, less options.
    mss: u32,
    peer_mss: u16,
    path_mss: u16,
    /// The stream offset the source reaches.
    src_end: u64,
    /// The application closed: a FIN follows the last source byte.
    closing: bool,
    fin_seq: Option<Seq>,
}

/// The receive side.
struct Receive {
    irs: Seq,
    nxt: Seq,
    /// The right edge of the window advertised so far (never moves left).
    adv: Seq,
    wscale: u8,
    /// Delivered bytes the application has not released: they keep the window shut.
    held: u32,
    /// Bytes received since the last ACK went out (two full segments force one).
    unacked: u32,
    /// Where the peer's FIN sits while a hole before it is still open.
    fin_at: Option<Seq>,
    fin: bool,
    ooo: Reassembly,
    last_ack_sent: Seq,
    /// Data that arrived twice, to report in the first SACK block of the next ACK (RFC 2883).
    dsack: Option<(Seq, Seq)>,
    /// The receive window now: `cfg.rcv_buf`, grown by autotuning.
    buf: u32,
    tune: autotune::Tune,
}

/// Options both SYNs agreed on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Negotiated {
    /// Window scaling (RFC 7323 §2).
    pub wscale: bool,
    /// SACK (RFC 2018).
    pub sack: bool,
    /// Timestamps (RFC 7323 §3).
    pub ts: bool,
}

/// What `ss -tin` shows of a connection ([`Tcb::info`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// State.
    pub state: State,
    /// Our segment size.
    pub mss: u32,
    /// Congestion window, bytes.
    pub cwnd: u32,
    /// The peer's window, bytes.
    pub snd_wnd: u32,
    /// The window we advertise now, bytes.
    pub rcv_wnd: u32,
    /// Smoothed RTT, if measured.
    pub srtt: Option<Duration>,
    /// RTT variation.
    pub rttvar: Duration,
    /// Retransmission timeout.
    pub rto: Duration,
    /// Segments sent again.
    pub retrans: u32,
    /// Stream bytes sent (the highest offset).
    pub bytes_sent: u64,
    /// Stream bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// Bytes received (modulo 2^32: counted from the sequence space).
    pub bytes_received: u64,
    /// Bytes in flight.
    pub unacked: u64,
    /// Received bytes the application still holds.
    pub held: u32,
}

/// RFC 7323 timestamp state.
struct Timestamps {
    /// TS.Recent: the TSval to echo.
    recent: u32,
    recent_at: Instant,
    /// Added to our millisecond clock in TSvals (see [`ts_clock`]).
    offset: u32,
    /// Our TSval when we last retransmitted: older echoes give no RTT sample.
    last_rtx: u32,
}

/// Control segments owed to the peer, sent at the next poll.
#[derive(Default)]
struct Due {
    ack: bool,
    /// A window or keep-alive probe.
    probe: bool,
    /// A tail loss probe (RFC 8985 §7).
    tail_probe: bool,
    rst: Option<Reset>,
}

/// A reset to send: its sequence number and, if it acknowledges, what.
#[derive(Clone, Copy)]
struct Reset {
    seq: Seq,
    ack: Option<Seq>,
}

/// Deadlines (absent when not armed) and what the timers count.
struct Timers {
    rtx: Option<Instant>,
    delack: Option<Instant>,
    persist: Option<Instant>,
    keepalive: Option<Instant>,
    /// The tail loss probe timer (RFC 8985's PTO).
    pto: Option<Instant>,
    /// RACK's reordering timer.
    reo: Option<Instant>,
    /// Pacing: no data segment leaves before this.
    pace: Option<Instant>,
    /// TIME-WAIT's or FIN-WAIT-2's end.
    end: Option<Instant>,
    /// Retransmission timeouts in a row.
    retries: u32,
    /// Window or keep-alive probes unanswered.
    probes: u32,
    last_rx: Instant,
}

/// The segment being timed for an RTT sample: acknowledging `seq` ends it.
#[derive(Clone, Copy)]
struct RttProbe {
    seq: Seq,
    sent: Instant,
}

/// Loss recovery: duplicate ACKs, the SACK scoreboard, NewReno and RFC 6675 state.
struct Recovery {
    /// Segments sent again on this connection (all causes).
    retrans: u32,
    dupacks: u32,
    /// In recovery until this is acknowledged.
    point: Option<Seq>,
    last_recover: Seq,
    /// HighRxt: the highest byte retransmitted in this recovery.
    high_rxt: Seq,
    /// SND.UNA's segment is to be resent at once.
    rtx_una: bool,
    sacked: SpareRanges<SCOREBOARD>,
    /// The tail loss probe in flight, until its ACK settles it.
    probe: Option<tail_loss::Episode>,
    /// SACKed data above a hole, waiting out the reordering window (RACK).
    reo_mark: Seq,
    /// Unsacked bytes below this are lost (RACK).
    rack_lost: Seq,
    /// The recovery began with a retransmission timeout: the window grows in slow start
    /// as the holes are sent again, rather than following PRR.
    after_rto: bool,
    /// Proportional rate reduction (RFC 6937) during fast recovery.
    prr: Prr,
    /// Retransmissions in flight, to find a lost one without the timer.
    log: rtx_log::RtxLog,
    /// When the next paced segment may leave (kept after it passes, so that a run of
    /// segments is spaced from the last one rather than from the clock).
    pace_at: Option<Instant>,
    /// The window to put back if this episode proves spurious.
    undo: undo::Undo,
    /// RACK's reordering window in quarters of the RTT (RFC 8985 §6.2.4: grows on DSACK).
    reo_mult: u32,
    /// Recoveries since the reordering window last returned to a quarter RTT.
    reo_recoveries: u32,
    /// This episode already widened the reordering window.
    reo_dsack_seen: bool,
    /// The path reorders: data never resent was delivered below data sent after it.
    reordered: bool,
}

/// PRR's state for one recovery episode (RFC 6937 §3), in bytes.
#[derive(Clone, Copy, Default)]
struct Prr {
    /// The flight when recovery began (RecoverFS).
    recover_fs: u32,
    /// Bytes the peer received since (prr_delivered).
    delivered: u32,
    /// Bytes sent since (prr_out).
    out: u32,
}

/// The sequence space at a glance (for tests and diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numbers {
    /// SND.UNA.
    pub snd_una: Seq,
    /// SND.NXT.
    pub snd_nxt: Seq,
    /// RCV.NXT.
    pub rcv_nxt: Seq,
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
    /// `shared` is already the configuration for the tuple's family ([`Config::for_ipv6`]).
    fn blank(tuple: Tuple, shared: Arc<Config>, iss: Seq, ts_offset: u32, now: Instant, passive: bool) -> Tcb {
        let cfg = &*shared;
        Tcb {
            tuple,
            state: State::Closed,
            passive,
            snd: Send {
                iss,
                una: iss,
                nxt: iss,
                max: iss,
                una_off: 0,
                wnd: 0,
                max_wnd: 0,
                wl1: Seq(0),
                wl2: Seq(0),
                wscale: 0,
                mss: u32::from(DEFAULT_MSS.min(cfg.mss)),
                peer_mss: DEFAULT_MSS,
                path_mss: cfg.mss,
                src_end: 0,
                closing: false,
                fin_seq: None,
            },
            rcv: Receive {
                irs: Seq(0),
                nxt: Seq(0),
                adv: Seq(0),
                wscale: 0,
                held: 0,
                unacked: 0,
                fin_at: None,
                fin: false,
                ooo: Reassembly::default(),
                last_ack_sent: Seq(0),
                dsack: None,
                buf: cfg.rcv_buf,
                tune: autotune::Tune::new(now),
            },
            opts: Negotiated::default(),
            ts: Timestamps { recent: 0, recent_at: now, offset: ts_offset, last_rtx: 0 },
            due: Due::default(),
            timers: Timers {
                rtx: None,
                delack: None,
                persist: None,
                keepalive: None,
                pto: None,
                reo: None,
                pace: None,
                end: None,
                retries: 0,
                probes: 0,
                last_rx: now,
            },
            rtt: Rtt::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max),
            rtt_probe: None,
            cc: Congestion::new_at(cfg.cc, u32::from(DEFAULT_MSS), now),
            rec: Recovery {
                retrans: 0,
                dupacks: 0,
                point: None,
                last_recover: iss,
                high_rxt: iss,
                rtx_una: false,
                sacked: SpareRanges::default(),
                probe: None,
                reo_mark: iss,
                rack_lost: iss,
                after_rto: false,
                prr: Prr::default(),
                log: rtx_log::RtxLog::default(),
                pace_at: None,
                undo: undo::Undo::default(),
                reo_mult: 1,
                reo_recoveries: 0,
                reo_dsack_seen: false,
                reordered: false,
            },
            notes: Notes::default(),
            rate: rate::RateSampler::default(),
            // Last: the fields above read it through `cfg`.
            cfg: shared,
        }
    }

    /// Active open: SYN-SENT; the SYN goes out at the next [`poll`](Self::poll).
    pub fn connect(tuple: Tuple, cfg: Arc<Config>, iss: Seq, ts_offset: u32, now: Instant) -> Tcb {
        let mut t = Tcb::blank(tuple, cfg, iss, ts_offset, now, false);
        t.state = State::SynSent;
        t
    }

    /// Passive open from a SYN that a listener accepted: SYN-RECEIVED, SYN-ACK pending.
    pub fn accept(tuple: Tuple, cfg: Arc<Config>, iss: Seq, ts_offset: u32, now: Instant, syn: &TcpRepr) -> Tcb {
        let mut t = Tcb::blank(tuple, cfg, iss, ts_offset, now, true);
        t.state = State::SynReceived;
        t.take_syn(syn, now);
        t
    }

    /// A connection rebuilt from a valid SYN cookie: ESTABLISHED at once. `cookie` is what
    /// the cookie recalls of the peer's SYN; `ack` is the completing ACK.
    pub fn from_cookie(
        tuple: Tuple,
        cfg: Arc<Config>,
        iss: Seq,
        ts_offset: u32,
        now: Instant,
        ack: &TcpRepr,
        cookie: CookieSyn,
    ) -> Tcb {
        let mut t = Tcb::blank(tuple, cfg, iss, ts_offset, now, true);
        let syn = TcpRepr {
            seq: ack.seq.wrapping_sub(1),
            flags: TcpFlags(TcpFlags::SYN),
            window: ack.window,
            options: TcpOptions {
                mss: Some(cookie.mss),
                window_scale: cookie.wscale,
                sack_permitted: cookie.sack,
                timestamps: ack.options.timestamps,
                ..TcpOptions::default()
            },
            ..*ack
        };
        t.take_syn(&syn, now);
        t.snd.nxt = iss + 1;
        t.snd.max = iss + 1;
        t.snd.una = iss + 1;
        t.rcv.adv = t.rcv.nxt + t.cfg.rcv_buf.min(65_535);
        t.snd.wnd = u32::from(ack.window) << t.snd.wscale;
        t.snd.max_wnd = t.snd.wnd;
        t.snd.wl1 = Seq(ack.seq);
        t.snd.wl2 = Seq(ack.ack);
        t.state = State::Established;
        t.notes.established = true;
        t
    }

    /// Reads the peer's SYN: its sequence number and the options both sides agree on.
    fn take_syn(&mut self, syn: &TcpRepr, now: Instant) {
        self.rcv.irs = Seq(syn.seq);
        self.rcv.nxt = self.rcv.irs + 1;
        self.rcv.adv = self.rcv.nxt;
        self.rcv.last_ack_sent = self.rcv.nxt;
        self.snd.peer_mss = syn.options.mss.unwrap_or(DEFAULT_MSS).max(64);
        let ours_ws = self.cfg.window_scale;
        if let (true, Some(ws)) = (ours_ws, syn.options.window_scale) {
            self.opts.wscale = true;
            self.snd.wscale = ws.min(14);
            self.rcv.wscale = self.cfg.rcv_wscale();
        }
        self.opts.sack = self.cfg.sack && syn.options.sack_permitted;
        if let (true, Some((tsval, _))) = (self.cfg.timestamps, syn.options.timestamps) {
            self.opts.ts = true;
            self.ts.recent = tsval;
            self.ts.recent_at = now;
        }
        // The window in a SYN is never scaled.
        self.snd.wnd = u32::from(syn.window);
        self.snd.max_wnd = self.snd.wnd;
        self.snd.wl1 = Seq(syn.seq);
        self.update_smss();
        self.cc = Congestion::new_at(self.cfg.cc, self.snd.mss, now);
    }

    fn update_smss(&mut self) {
        let opts = if self.opts.ts { 12 } else { 0 };
        self.snd.mss =
            u32::from(self.snd.peer_mss.min(self.cfg.mss).min(self.snd.path_mss)).saturating_sub(opts).max(32);
        self.cc.set_smss(self.snd.mss);
    }

    /// The addresses.
    pub fn tuple(&self) -> &Tuple {
        &self.tuple
    }

    /// Our FIN has been transmitted (so all our data before it has too).
    pub fn fin_sent(&self) -> bool {
        self.snd.fin_seq.is_some_and(|f| self.snd.max > f)
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
        self.snd.mss
    }

    /// True if the connection paces its segments (BBR, or with `cfg.pacing`).
    pub fn paces(&self) -> bool {
        self.cfg.cc == crate::cc::CcKind::Bbr || self.cfg.pacing
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u32 {
        self.cc.cwnd()
    }

    /// The peer's receive window in bytes.
    pub fn snd_wnd(&self) -> u32 {
        self.snd.wnd
    }

    /// Stream offset up to which the peer acknowledged our data.
    pub fn acked_offset(&self) -> u64 {
        self.snd.una_off
    }

    /// Stream offset up to which data has been sent at least once (SND.MAX as an offset;
    /// a timeout moves SND.NXT back, not this).
    pub fn sent_offset(&self) -> u64 {
        (self.snd.una_off + u64::from(self.snd.max.since(self.snd.una))).min(self.snd.src_end)
    }

    /// True once the application closed its side (the source can grow no more).
    pub fn is_closing(&self) -> bool {
        self.snd.closing
            || !matches!(self.state, State::SynSent | State::SynReceived | State::Established | State::CloseWait)
    }

    /// Bytes the source may grow by now without going past the peer's window.
    pub fn send_room(&self) -> u64 {
        (self.snd.una_off + u64::from(self.snd.wnd)).saturating_sub(self.snd.src_end)
    }

    /// Source bytes not yet acknowledged.
    pub fn unacked(&self) -> u64 {
        self.snd.src_end - self.snd.una_off
    }

    /// Bytes delivered to the application and not yet released with `recv_done`.
    pub fn held(&self) -> u32 {
        self.rcv.held
    }

    /// What the connection is doing now, as `ss -tin` shows it.
    pub fn info(&self) -> Info {
        let fin = u64::from(self.rcv.fin);
        Info {
            state: self.state,
            mss: self.snd.mss,
            cwnd: self.cc.cwnd(),
            snd_wnd: self.snd.wnd,
            rcv_wnd: self.rcv.adv.since(self.rcv.nxt),
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            rto: self.rtt.rto(),
            retrans: self.rec.retrans,
            bytes_sent: self.sent_offset(),
            bytes_acked: self.acked_offset(),
            bytes_received: u64::from(self.rcv.nxt.since(self.rcv.irs)).saturating_sub(1 + fin),
            unacked: self.unacked(),
            held: self.rcv.held,
        }
    }

    /// Smoothed RTT, if measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// Current retransmission timeout (with backoff).
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// True while a reassembly buffer is held.
    pub fn holds_ooo(&self) -> bool {
        !self.rcv.ooo.is_empty()
    }

    /// Options both sides agreed on.
    pub fn negotiated(&self) -> Negotiated {
        self.opts
    }

    /// The segment sequence space.
    pub fn numbers(&self) -> Numbers {
        Numbers { snd_una: self.snd.una, snd_nxt: self.snd.nxt, rcv_nxt: self.rcv.nxt }
    }

    /// True if something happened that [`take_notes`](Self::take_notes) would report.
    pub fn has_notes(&self) -> bool {
        self.notes != Notes::default()
    }

    /// Takes what happened since the last call.
    pub fn take_notes(&mut self) -> Notes {
        std::mem::take(&mut self.notes)
    }

    /// The source now reaches `end` (a stream offset, never decreasing).
    pub fn set_source_end(&mut self, end: u64) {
        if !self.snd.closing && end > self.snd.src_end {
            self.snd.src_end = end;
        }
    }

    /// Where the source reaches.
    pub fn source_end(&self) -> u64 {
        self.snd.src_end
    }

    /// The application has finished with `n` received bytes: the window reopens.
    pub fn recv_done(&mut self, n: u32) {
        self.rcv.held = self.rcv.held.saturating_sub(n);
        // Send a window update when the advertised window fell below half and at least a
        // segment's worth opened; otherwise the next ACK carries it.
        let adv = self.rcv_wnd();
        let step = (self.rcv.buf / 2).min(self.cfg.mss.into()).max(1);
        if self.is_synchronized() && !self.rcv.fin && adv < self.rcv.buf / 2 && self.room() >= adv + step {
            self.due.ack = true;
        }
    }

    /// True if the connection has something to send now (data, control or an ACK).
    pub fn wants_output(&self) -> bool {
        match self.state {
            State::Closed => return self.due.rst.is_some(),
            State::TimeWait => return self.due.ack,
            _ => {}
        }
        self.due.ack
            || self.due.probe
            || self.due.tail_probe
            || self.due.rst.is_some()
            || self.rec.rtx_una
            || self.snd.nxt == self.snd.iss
            || self.data_left() > 0
            || (self.snd.closing && self.snd.fin_seq.is_none_or(|f| self.snd.nxt <= f))
            || self.rec.point.is_some()
    }

    /// Half-close: FIN after the last source byte. Idempotent.
    pub fn close(&mut self) {
        match self.state {
            State::SynSent => self.finish(End::Closed),
            State::SynReceived | State::Established => {
                self.snd.closing = true;
                if self.state == State::Established {
                    self.state = State::FinWait1;
                }
            }
            State::CloseWait => {
                self.snd.closing = true;
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
            self.due.rst = Some(Reset { seq: self.snd.nxt.max(self.snd.una), ack: Some(self.rcv.nxt) });
        }
        self.finish(End::Aborted);
    }

    /// A smaller path MTU was learned (ICMP fragmentation needed): later segments, and
    /// retransmissions, are cut to fit. `mtu` is the IP MTU.
    pub fn set_path_mtu(&mut self, mtu: u16) {
        let mss = mtu.saturating_sub(self.tuple.ip_header_len() + 20).max(68);
        if mss < self.snd.path_mss {
            self.snd.path_mss = mss;
            self.update_smss();
            if self.snd.nxt > self.snd.una {
                // What was in flight at the old size is lost; resend it at the new one.
                self.snd.nxt = self.snd.una;
            }
        }
    }

    fn finish(&mut self, why: End) {
        if self.notes.end.is_none() && !matches!(self.state, State::Closed | State::TimeWait) {
            self.notes.end = Some(why);
        }
        self.state = State::Closed;
        self.timers.rtx = None;
        self.timers.persist = None;
        self.timers.keepalive = None;
        self.timers.delack = None;
        self.timers.end = None;
    }

    /// The endpoint moves a connection in TIME-WAIT out to [`crate::time_wait`] at once, which
    /// answers its later segments (a retransmitted FIN, a reopening SYN) from then on.
    fn enter_time_wait(&mut self, now: Instant) {
        if self.notes.end.is_none() {
            self.notes.end = Some(End::Closed);
        }
        self.state = State::TimeWait;
        self.timers.rtx = None;
        self.timers.persist = None;
        self.timers.keepalive = None;
        self.timers.end = Some(now + self.cfg.time_wait);
    }

    /// What a connection in TIME-WAIT keeps when it leaves the table (see
    /// [`crate::time_wait`]).
    pub(crate) fn quiet(&self) -> crate::time_wait::Quiet {
        let ws = if self.opts.wscale { self.rcv.wscale } else { 0 };
        let rcv_wnd = self.rcv_wnd();
        let ts = self.opts.ts.then_some(crate::time_wait::QuietTs {
            recent: self.ts.recent,
            recent_at: self.ts.recent_at,
            offset: self.ts.offset,
        });
        crate::time_wait::Quiet {
            snd_nxt: self.snd.max,
            rcv_nxt: self.rcv.nxt,
            rcv_wnd,
            wnd_field: rcv_wnd.div_ceil(1 << ws).min(65_535) as u16,
            ts,
            until: self.timers.end.unwrap_or(self.timers.last_rx + self.cfg.time_wait),
            wait: self.cfg.time_wait,
        }
    }

    /// Releases resources the connection holds in the shared environment.
    pub fn release(&mut self, env: &mut Env) {
        self.rcv.ooo.release(&mut env.pool, true);
    }

    fn room(&self) -> u32 {
        self.rcv.buf.saturating_sub(self.rcv.held)
    }

    fn rcv_wnd(&self) -> u32 {
        if self.rcv.adv > self.rcv.nxt {
            self.rcv.adv.since(self.rcv.nxt)
        } else {
            0
        }
    }

    /// The window field for an outgoing segment; moves the advertised right edge, which never
    /// moves left (RFC 9293 §3.8.6.2.2) and moves right in steps worth sending (receiver SWS
    /// avoidance).
    fn window_field(&mut self) -> u16 {
        let ws = if self.opts.wscale { self.rcv.wscale } else { 0 };
        let cap = 65_535u32 << ws;
        let edge = self.rcv.nxt + self.room().min(cap);
        let adv = self.rcv.adv.max(self.rcv.nxt);
        let step = (self.rcv.buf / 2).min(self.cfg.mss.into()).max(1);
        let adv = if edge > adv && (edge.since(adv) >= step || edge.since(self.rcv.nxt) >= self.room().min(cap)) {
            edge
        } else {
            adv
        };
        let field = adv.since(self.rcv.nxt).div_ceil(1 << ws).min(65_535);
        self.rcv.adv = self.rcv.adv.max(self.rcv.nxt + (field << ws));
        field as u16
    }
}

#[cfg(test)]
mod tests {
    /// An idle connection carries its control block and nothing else (issue 44): what only
    /// loss, reordering or BBR needs lives behind pointers, allocated when first needed.
    #[test]
    fn a_control_block_fits_in_a_kilobyte() {
        let n = std::mem::size_of::<super::Tcb>();
        assert!(n <= 1024, "Tcb is {n} bytes");
    }
}
