//! Scripted tests written from the RFCs: exact segments in, exact segments out.

mod script;

use script::{Script, Seg, PEER_ISN};
use tcp::endpoint::Limits;
use tcp::tcb::{End, Negotiated, State};
use tcp::{CcKind, Config, Duration};
use wire::tcp::TcpFlags;

const SYN: u8 = TcpFlags::SYN;
const ACK: u8 = TcpFlags::ACK;
const FIN: u8 = TcpFlags::FIN;
const RST: u8 = TcpFlags::RST;
const PSH: u8 = TcpFlags::PSH;

fn cfg() -> Config {
    Config { rcv_buf: 65_535, ..Config::default() }
}

fn linux_syn() -> Seg {
    Seg::syn(0).win(64_240).mss(1460).sack_perm().ts(100, 0).ws(7)
}

fn server_app_data(s: &mut Script, n: usize) {
    let h = s.app.accepted[0];
    s.ep.conn_mut(h).expect("conn").out.extend((0..n).map(|i| i as u8));
    s.ep.kick(h);
    let now = s.ms();
    s.at(now);
}

#[test]
fn passive_open_negotiates_what_both_offer() {
    let mut s = Script::server(Config { rcv_buf: 1 << 20, ..cfg() });
    let sa = s.handshake(linux_syn());
    assert_eq!(sa.opts.mss, Some(1460));
    assert_eq!(sa.opts.window_scale, Some(5), "1 MiB needs a shift of 5");
    assert!(sa.opts.sack_permitted);
    assert_eq!(sa.opts.timestamps.map(|t| t.1), Some(100), "TSecr echoes the SYN's TSval");
    assert_eq!(sa.win, 65_535, "the SYN-ACK window is never scaled");
    let t = s.ep.tcb(s.app.accepted[0]).unwrap();
    assert_eq!(t.state(), State::Established);
    assert_eq!(t.negotiated(), Negotiated { wscale: true, sack: true, ts: true });
    assert_eq!(t.smss(), 1448, "MSS less the timestamp option");
}

#[test]
fn options_the_peer_did_not_offer_stay_off() {
    let mut s = Script::server(cfg());
    let sa = s.handshake(Seg::syn(0).win(8192).mss(536));
    assert_eq!(sa.opts.window_scale, None);
    assert!(!sa.opts.sack_permitted);
    assert_eq!(sa.opts.timestamps, None);
    let t = s.ep.tcb(s.app.accepted[0]).unwrap();
    assert_eq!(t.negotiated(), Negotiated::default());
    assert_eq!(t.smss(), 536);
    // Without window scaling the peer's window is taken as is (8192 bytes); the initial
    // congestion window (RFC 6928: 10 segments of 536) is the smaller limit here.
    server_app_data(&mut s, 20_000);
    let mut sent = 0;
    while let Some(x) = s.try_next() {
        sent += x.payload.len();
    }
    assert_eq!(sent, 10 * 536);
}

#[test]
fn window_scale_applies_to_the_peers_window_after_the_syn() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).win(1000).mss(1000).ws(2));
    // The handshake ACK said 1000 << 2 = 4000 bytes.
    server_app_data(&mut s, 20_000);
    let mut sent = 0;
    while let Some(x) = s.try_next() {
        sent += x.payload.len();
    }
    assert_eq!(sent, 4000);
    // A window update of 2000 (<< 2 = 8000) lets 4000 more go.
    s.inject(Seg::ack(1, 4001).win(2000));
    let mut more = 0;
    while let Some(x) = s.try_next() {
        more += x.payload.len();
    }
    assert_eq!(more, 8000);
}

#[test]
fn syn_ack_is_retransmitted_with_backoff_then_given_up() {
    let mut s = Script::server(Config { syn_retries: 2, ..cfg() });
    s.inject(linux_syn());
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(999);
    s.expect_none();
    s.at(1000);
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(2999);
    s.expect_none();
    s.at(3000);
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(7000);
    s.expect_none();
    assert!(s.ep.is_empty(), "the half-open connection is gone after syn_retries");
    assert!(s.app.accepted.is_empty(), "never shown to the application");
}

#[test]
fn a_retransmitted_syn_gets_the_syn_ack_again() {
    let mut s = Script::server(cfg());
    s.inject(linux_syn());
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(300);
    s.inject(linux_syn());
    s.expect(SYN | ACK, 0, 1, 0);
}

#[test]
fn active_open_and_data_on_the_third_segment() {
    let mut s = Script::client(cfg(), b"hello");
    let syn = s.expect(SYN, 0, 0, 0);
    assert_eq!(syn.opts.mss, Some(1460));
    assert!(syn.opts.sack_permitted && syn.opts.window_scale.is_some() && syn.opts.timestamps.is_some());
    s.at(10);
    s.inject(Seg::new(SYN | ACK, 0, 1).mss(1460).win(29_200));
    assert_eq!(s.app.connected, 1);
    s.expect(ACK | PSH, 1, 1, 5);
    s.expect_none();
}

#[test]
fn active_open_refused_by_rst() {
    let mut s = Script::client(cfg(), b"x");
    s.expect(SYN, 0, 0, 0);
    s.inject(Seg::new(RST | ACK, 0, 1).win(0));
    assert_eq!(s.app.ended, vec![End::Refused]);
    assert!(s.ep.is_empty());
}

#[test]
fn syn_sent_answers_a_bad_ack_with_rst() {
    let mut s = Script::client(cfg(), b"x");
    s.expect(SYN, 0, 0, 0);
    s.inject(Seg::new(SYN | ACK, 0, 77).mss(1460));
    s.expect(RST, 77, 0, 0);
    assert_eq!(s.ep.tcb(s.handle.unwrap()).unwrap().state(), State::SynSent);
}

#[test]
fn simultaneous_open() {
    let mut s = Script::client(cfg(), b"");
    s.expect(SYN, 0, 0, 0);
    // The peer's own SYN crosses ours: SYN-RECEIVED, and our SYN goes again with an ACK.
    s.inject(Seg::syn(0).mss(1460));
    s.expect(SYN | ACK, 0, 1, 0);
    assert_eq!(s.ep.tcb(s.handle.unwrap()).unwrap().state(), State::SynReceived);
    // The peer's SYN-ACK acknowledges our SYN.
    s.inject(Seg::new(SYN | ACK, 0, 1).mss(1460));
    s.inject(Seg::ack(1, 1));
    assert_eq!(s.ep.tcb(s.handle.unwrap()).unwrap().state(), State::Established);
    assert_eq!(s.app.connected, 1);
}

#[test]
fn rst_resets_only_at_the_exact_sequence_number() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).mss(1460));
    // In the window but not RCV.NXT: a challenge ACK (RFC 5961 §3.2), the connection stays.
    s.inject(Seg::new(RST, 100, 0));
    s.expect(ACK, 1, 1, 0);
    // Outside the window: ignored silently.
    s.inject(Seg::new(RST, 1_000_000, 0));
    s.expect_none();
    assert_eq!(s.ep.len(), 1);
    // Exactly RCV.NXT: reset.
    s.inject(Seg::new(RST, 1, 0));
    s.expect_none();
    assert_eq!(s.app.ended, vec![End::Reset]);
    assert!(s.ep.is_empty());
}

#[test]
fn syn_on_an_established_connection_gets_a_challenge_ack() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).mss(1460));
    s.inject(Seg::syn(500).mss(1460));
    s.expect(ACK, 1, 1, 0);
    assert_eq!(s.ep.len(), 1, "RFC 5961 §4: no reset from a blind SYN");
}

#[test]
fn challenge_acks_are_rate_limited() {
    let limits = Limits { challenge_per_sec: 3, ..Limits::default() };
    let mut s = Script::server_with(cfg(), limits);
    s.handshake(Seg::syn(0).mss(1460));
    for _ in 0..10 {
        s.inject(Seg::new(RST, 100, 0));
    }
    let mut n = 0;
    while s.try_next().is_some() {
        n += 1;
    }
    assert_eq!(n, 3);
    assert_eq!(s.ep.stats().challenge_limited, 7);
}

#[test]
fn ack_beyond_snd_max_is_answered_and_dropped() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).mss(1460));
    s.inject(Seg::ack(1, 5000).data(10));
    s.expect(ACK, 1, 1, 0);
    assert!(s.ep.conn_mut(s.app.accepted[0]).unwrap().got.is_empty(), "its data is not taken");
}

#[test]
fn delayed_ack_then_every_second_full_segment() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).mss(1460));
    s.inject(Seg::ack(1, 1).data(100));
    s.expect_none();
    s.at(39);
    s.expect_none();
    s.at(40);
    s.expect(ACK, 1, 101, 0);
    // Two full segments: acknowledged at once.
    s.inject(Seg::ack(101, 1).data(1460));
    s.expect_none();
    s.inject(Seg::ack(1561, 1).data(1460));
    s.expect(ACK, 1, 3021, 0);
}

#[test]
fn out_of_order_data_gets_an_immediate_ack_with_sack_blocks() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).mss(1460).sack_perm());
    s.inject(Seg::ack(1, 1).data(100));
    s.inject(Seg::ack(201, 1).data(100));
    let a = s.expect(ACK, 1, 101, 0);
    assert_eq!(a.opts.sack_blocks[0], Some((PEER_ISN + 201, PEER_ISN + 301)));
    s.inject(Seg::ack(401, 1).data(100));
    let a = s.expect(ACK, 1, 101, 0);
    // The block holding the newest segment first (RFC 2018 §4).
    assert_eq!(a.opts.sack_blocks[0], Some((PEER_ISN + 401, PEER_ISN + 501)));
    assert_eq!(a.opts.sack_blocks[1], Some((PEER_ISN + 201, PEER_ISN + 301)));
    // The hole fills: everything delivered in order, ACK at once, no blocks left... but one.
    s.inject(Seg::ack(101, 1).data(100));
    let a = s.expect(ACK, 1, 301, 0);
    assert_eq!(a.opts.sack_blocks[0], Some((PEER_ISN + 401, PEER_ISN + 501)));
    assert_eq!(a.opts.sack_blocks[1], None);
    let got = &s.ep.conn_mut(s.app.accepted[0]).unwrap().got;
    assert_eq!(got.len(), 300);
}

fn established_sender(sack: bool, cc: CcKind) -> Script {
    let mut s = Script::server(Config { cc, ..cfg() });
    let mut syn = Seg::syn(0).mss(1000).win(65_535);
    if sack {
        syn = syn.sack_perm();
    }
    s.handshake(syn);
    s
}

#[test]
fn fast_retransmit_after_three_duplicate_acks_newreno() {
    let mut s = established_sender(false, CcKind::NewReno);
    server_app_data(&mut s, 10_000);
    for i in 0..10 {
        s.expect(if i == 9 { ACK | PSH } else { ACK }, 1 + 1000 * i, 1, 1000);
    }
    // Segment 2 is lost: the peer acknowledges segment 1, then three duplicates.
    s.inject(Seg::ack(1, 1001));
    s.clear(); // slow start sends more
    s.inject(Seg::ack(1, 1001));
    s.inject(Seg::ack(1, 1001));
    s.expect_none();
    s.inject(Seg::ack(1, 1001));
    s.expect(ACK, 1001, 1, 1000);
    assert_eq!(s.ep.stats().fast_recoveries, 1);
}

#[test]
fn sack_recovery_retransmits_only_the_holes() {
    let mut s = established_sender(true, CcKind::Cubic);
    server_app_data(&mut s, 10_000);
    for i in 0..10 {
        s.expect(if i == 9 { ACK | PSH } else { ACK }, 1 + 1000 * i, 1, 1000);
    }
    let b = |l: u32, r: u32, s: &Script| (s.ours(l), s.ours(r));
    // Segments 2 and 4 lost; the peer SACKs 3 and 5..10 as they arrive.
    let acks: [&[(u32, u32)]; 7] = [
        &[(2001, 3001)],
        &[(4001, 5001), (2001, 3001)],
        &[(4001, 6001), (2001, 3001)],
        &[(4001, 7001), (2001, 3001)],
        &[(4001, 8001), (2001, 3001)],
        &[(4001, 9001), (2001, 3001)],
        &[(4001, 10001), (2001, 3001)],
    ];
    let mut rtx = Vec::new();
    for (i, blocks) in acks.iter().enumerate() {
        let abs: Vec<(u32, u32)> = blocks.iter().map(|&(l, r)| b(l, r, &s)).collect();
        s.inject(Seg::ack(1, 1001).sack(&abs));
        while let Some(x) = s.try_next() {
            rtx.push((i, x.seq, x.payload.len()));
        }
    }
    // RFC 6675: recovery starts once more than 2·SMSS are SACKed above the hole (the third
    // ACK); only the two holes go again, each once, and nothing SACKed is resent.
    assert_eq!(rtx.first(), Some(&(2, 1001, 1000)));
    let seqs: Vec<u32> = rtx.iter().map(|x| x.1).collect();
    assert_eq!(seqs, vec![1001, 3001], "{rtx:?}");
    assert_eq!(s.ep.stats().fast_recoveries, 1);
    // The holes filled: the cumulative ACK ends recovery.
    s.inject(Seg::ack(1, 10001));
    assert_eq!(s.ep.tcb(s.app.accepted[0]).unwrap().unacked(), 0);
}

#[test]
fn rto_doubles_on_each_expiry() {
    let mut s = Script::server(Config { rto_min: Duration::from_millis(200), ..cfg() });
    s.inject(Seg::syn(0).mss(1460));
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(100);
    s.inject(Seg::ack(1, 1)); // RTT sample 100 ms: RTO = 100 + 4·50 = 300 ms
    server_app_data(&mut s, 100);
    s.expect(ACK | PSH, 1, 1, 100);
    let t0 = s.ms();
    let mut times = Vec::new();
    for _ in 0..4 {
        loop {
            let now = s.ms() + 1;
            s.at(now);
            if let Some(x) = s.try_next() {
                assert_eq!((x.seq, x.payload.len()), (1, 100));
                times.push(s.ms() - t0);
                break;
            }
        }
    }
    assert_eq!(times, vec![300, 900, 2100, 4500]);
}

#[test]
fn zero_window_is_probed_and_reopens() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).mss(1000));
    server_app_data(&mut s, 3000);
    for i in 0..3 {
        s.expect(if i == 2 { ACK | PSH } else { ACK }, 1 + 1000 * i, 1, 1000);
    }
    // The peer takes 2000 bytes and closes its window.
    s.inject(Seg::ack(1, 2001).win(0));
    s.inject(Seg::ack(1, 3001).win(0));
    server_app_data(&mut s, 1000);
    s.expect_none();
    // A probe (an old sequence number, no data) after the RTO; the peer answers, still 0.
    let mut probes = 0;
    for ms in 1..=3000 {
        let t = s.ms() + 1;
        s.at(t);
        if let Some(p) = s.try_next() {
            assert_eq!((p.flags, p.seq, p.payload.len()), (ACK, 3000, 0), "probe at {ms}");
            probes += 1;
            s.inject(Seg::ack(1, 3001).win(0));
        }
    }
    assert!(probes >= 2, "probes keep going while the window is shut ({probes})");
    assert_eq!(s.ep.len(), 1, "a peer that answers probes is never timed out");
    // The window opens: the held data goes.
    s.inject(Seg::ack(1, 3001).win(4000));
    s.expect(ACK | PSH, 3001, 1, 1000);
}

/// A connection with a 4000-byte window whose application holds the 4000 bytes the peer
/// sent (at 50 ms): our window is shut.
fn receive_window_shut() -> Script {
    let mut s = Script::server(Config { rcv_buf: 4000, ..cfg() });
    s.app.hold = true;
    s.handshake(Seg::syn(0).mss(1000));
    for i in 0..4 {
        s.inject(Seg::ack(1 + 1000 * i, 1).data(1000));
    }
    s.at(50);
    s
}

#[test]
fn receive_window_closes_while_the_app_holds_data_and_reopens() {
    let mut s = receive_window_shut();
    let mut seen = Vec::new();
    let last = loop {
        match s.try_next() {
            Some(a) if a.ack == 4001 => break a,
            Some(a) => seen.push(a),
            None => panic!("no ACK for the data: {seen:?}"),
        }
    };
    assert_eq!(last.win, 0, "all 4000 bytes held: window shut");
    // Beyond the window: not taken.
    s.inject(Seg::ack(4001, 1).data(1000));
    s.expect(ACK, 1, 4001, 0);
    s.ep.recv_done(s.app.accepted[0], 3000);
    s.at(51);
    let upd = s.expect(ACK, 1, 4001, 0);
    assert_eq!(upd.win, 3000, "window update once the app is done with the bytes");
}

#[test]
fn time_wait_acks_a_retransmitted_fin_and_expires() {
    let mut s = Script::server(Config { time_wait: Duration::from_secs(2), ..cfg() });
    s.handshake(Seg::syn(0).mss(1460));
    let h = s.app.accepted[0];
    s.ep.close(h);
    s.at(1);
    s.expect(ACK | FIN, 1, 1, 0);
    s.inject(Seg::ack(1, 2));
    assert_eq!(s.ep.tcb(h).unwrap().state(), State::FinWait2);
    s.inject(Seg::new(ACK | FIN, 1, 2));
    s.expect(ACK, 2, 2, 0);
    assert!(s.ep.tcb(h).is_none(), "TIME-WAIT leaves the connection table");
    assert_eq!((s.ep.len(), s.ep.time_wait()), (0, 1));
    assert_eq!(s.app.ended, vec![End::Closed], "the application is done on entering TIME-WAIT");
    s.at(1000);
    s.inject(Seg::new(ACK | FIN, 1, 2));
    s.expect(ACK, 2, 2, 0);
    s.at(2999);
    assert_eq!(s.ep.time_wait(), 1, "the retransmitted FIN restarted 2·MSL");
    s.at(3001);
    assert!(s.ep.is_empty());
    assert_eq!(s.ep.timers(), 0);
}

#[test]
fn passive_close_goes_through_close_wait_and_last_ack() {
    let mut s = Script::server(cfg());
    s.app.close_on_fin = true;
    s.handshake(Seg::syn(0).mss(1460));
    s.inject(Seg::new(ACK | FIN, 1, 1));
    s.expect(ACK | FIN, 1, 2, 0);
    assert_eq!(s.ep.tcb(s.app.accepted[0]).unwrap().state(), State::LastAck);
    s.inject(Seg::ack(2, 2));
    assert_eq!(s.app.ended, vec![End::Closed]);
    assert!(s.ep.is_empty(), "no TIME-WAIT for the side that closed second");
}

#[test]
fn last_ack_gives_up_after_the_orphan_retries() {
    // Both sides closed and the peer gone: the FIN is sent again `orphan_retries` times
    // (as Linux's tcp_orphan_retries), not `retries`, then the connection times out.
    let mut s = Script::server(Config { orphan_retries: 3, ..cfg() });
    s.app.close_on_fin = true;
    s.handshake(Seg::syn(0).mss(1460));
    s.inject(Seg::new(ACK | FIN, 1, 1));
    s.expect(ACK | FIN, 1, 2, 0);
    let (mut fins, start) = (0, s.ms());
    for t in (start..start + 600_000).step_by(10) {
        s.at(t);
        while let Some(x) = s.try_next() {
            assert_eq!(x.seq, 1, "the FIN again");
            fins += 1;
        }
        if !s.app.ended.is_empty() {
            break;
        }
    }
    assert_eq!(fins, 3);
    assert_eq!(s.app.ended, vec![End::TimedOut]);
    assert!(s.ep.is_empty());
}

#[test]
fn simultaneous_close_goes_through_closing() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).mss(1460));
    let h = s.app.accepted[0];
    s.ep.close(h);
    s.at(1);
    s.expect(ACK | FIN, 1, 1, 0);
    s.inject(Seg::new(ACK | FIN, 1, 1)); // the peer's FIN, not yet acknowledging ours
    s.expect(ACK, 2, 2, 0);
    assert_eq!(s.ep.tcb(h).unwrap().state(), State::Closing);
    s.inject(Seg::ack(2, 2));
    assert!(s.ep.tcb(h).is_none());
    assert_eq!(s.ep.time_wait(), 1, "in TIME-WAIT");
}

#[test]
fn syn_cookies_when_the_backlog_is_full() {
    let limits = Limits { syn_backlog: 1, ..Limits::default() };
    let mut s = Script::server_with(cfg(), limits);
    s.inject(linux_syn());
    s.expect(SYN | ACK, 0, 1, 0);
    assert_eq!(s.ep.len(), 1);
    // A second client while the first is half-open: answered from a cookie, no state.
    s.peer_port = 40_001;
    s.inject(linux_syn());
    let sa = s.next();
    assert_eq!(sa.flags, SYN | ACK);
    assert_eq!(s.ep.len(), 1, "no state for the cookie SYN");
    assert_eq!(s.ep.stats().cookies_sent, 1);
    assert_eq!(sa.opts.mss, Some(1460));
    assert!(sa.opts.sack_permitted && sa.opts.window_scale.is_some(), "carried in the timestamp");
    let cookie = sa.seq; // relative to the first connection's ISN
    let (tsval, _) = sa.opts.timestamps.unwrap();
    // A forged ACK (or a later segment of a cookie connection whose first ACK was lost) is
    // dropped without a reset while cookies are out: no state, no answer.
    s.inject(Seg::ack(1, cookie.wrapping_add(2)).ts(101, tsval));
    s.expect_none();
    assert_eq!(s.ep.stats().cookies_accepted, 0);
    assert_eq!(s.ep.stats().cookies_invalid, 1);
    // A segment past the first (its first ACK lost) is dropped too; the resend from ISN + 1
    // then validates.
    s.inject(Seg::ack(11, cookie.wrapping_add(1)).ts(101, tsval).data(5));
    s.expect_none();
    assert_eq!(s.ep.len(), 1);
    // The right one creates the connection, with the options of the SYN.
    s.inject(Seg::ack(1, cookie.wrapping_add(1)).ts(101, tsval).data(10));
    assert_eq!(s.ep.stats().cookies_accepted, 1);
    assert_eq!(s.ep.len(), 2);
    let h = *s.app.accepted.last().unwrap();
    assert_eq!(s.ep.tcb(h).unwrap().negotiated(), Negotiated { wscale: true, sack: true, ts: true });
    assert_eq!(s.ep.conn_mut(h).unwrap().got.len(), 10, "data on the cookie ACK is delivered");
}

#[test]
fn paws_drops_old_timestamps() {
    let mut s = Script::server(cfg());
    s.handshake(linux_syn());
    s.inject(Seg::ack(1, 1).ts(200, 0).data(10));
    assert_eq!(s.ep.conn_mut(s.app.accepted[0]).unwrap().got.len(), 10);
    s.clear();
    // A segment with an older TSval is an old duplicate: dropped, answered with an ACK.
    s.inject(Seg::ack(11, 1).ts(150, 0).data(10));
    s.expect(ACK, 1, 11, 0);
    assert_eq!(s.ep.conn_mut(s.app.accepted[0]).unwrap().got.len(), 10);
    assert_eq!(s.ep.stats().paws_dropped, 1);
    // A newer one is taken.
    s.inject(Seg::ack(11, 1).ts(201, 0).data(10));
    assert_eq!(s.ep.conn_mut(s.app.accepted[0]).unwrap().got.len(), 20);
}

#[test]
fn segments_for_no_connection_get_rfc9293_resets() {
    let mut s = Script::server(cfg());
    s.peer_port = 40_002;
    // An ACK for nothing: <SEQ=SEG.ACK><CTL=RST>.
    s.inject_raw(Seg::ack(5, 0), 777, &[]);
    let r = s.next();
    assert_eq!((r.flags, r.seq.wrapping_add(0)), (RST, 777));
    s.ep.unlisten(80);
    // A SYN to a closed port: <SEQ=0><ACK=SEG.SEQ+1><CTL=RST,ACK>.
    s.inject(Seg::syn(0));
    let r = s.next();
    assert_eq!((r.flags, r.ack), (RST | ACK, 1));
    // An RST for nothing: silence.
    s.inject(Seg::new(RST, 0, 0));
    s.expect_none();
}

#[test]
fn refused_accept_resets_the_connection() {
    let mut s = Script::server(cfg());
    s.app.refuse = true;
    s.inject(Seg::syn(0).mss(1460));
    s.expect(SYN | ACK, 0, 1, 0);
    s.inject(Seg::ack(1, 1));
    s.expect(RST | ACK, 1, 1, 0);
    assert!(s.ep.is_empty());
}

#[test]
fn keepalive_probes_then_times_out() {
    let ka = tcp::KeepAlive { idle: Duration::from_secs(1), interval: Duration::from_millis(500), count: 2 };
    let mut s = Script::server(Config { keepalive: Some(ka), ..cfg() });
    s.handshake(Seg::syn(0).mss(1460));
    s.at(999);
    s.expect_none();
    s.at(1001);
    s.expect(ACK, 0, 1, 0);
    s.inject(Seg::ack(1, 1)); // answered: idle starts again
    s.at(2001);
    s.expect(ACK, 0, 1, 0);
    s.at(2502);
    s.expect(ACK, 0, 1, 0);
    s.at(3100);
    assert_eq!(s.app.ended, vec![End::TimedOut]);
    assert!(s.ep.is_empty());
}

/// Queues `n` bytes of which the source holds only the first `ready` (Atlas: the rest is
/// still being read from disk).
fn data_partly_read(s: &mut Script, n: usize, ready: u64) {
    let h = s.app.accepted[0];
    let c = s.ep.conn_mut(h).expect("conn");
    c.out.extend((0..n).map(|i| i as u8));
    c.ready = Some(ready);
    s.ep.kick(h);
    let now = s.ms();
    s.at(now);
}

fn source_holds(s: &mut Script, ready: u64) {
    let h = s.app.accepted[0];
    s.ep.conn_mut(h).expect("conn").ready = Some(ready);
    s.ep.kick(h);
    let now = s.ms();
    s.at(now);
}

#[test]
fn nothing_is_sent_from_bytes_the_source_is_still_reading() {
    let mut s = established_sender(false, CcKind::NewReno);
    data_partly_read(&mut s, 5000, 2500);
    s.expect(ACK, 1, 1, 1000);
    s.expect(ACK, 1001, 1, 1000);
    s.expect(ACK, 2001, 1, 500);
    s.expect_none();
    source_holds(&mut s, 5000);
    s.expect(ACK, 2501, 1, 1000);
    s.expect(ACK, 3501, 1, 1000);
    s.expect(ACK | PSH, 4501, 1, 500);
    s.expect_none();
}

#[test]
fn a_timeout_retransmission_waits_for_the_source_to_read_again() {
    let mut s = established_sender(false, CcKind::NewReno);
    data_partly_read(&mut s, 3000, 3000);
    for i in 0..3 {
        s.expect(if i == 2 { ACK | PSH } else { ACK }, 1 + 1000 * i, 1, 1000);
    }
    // Everything was sent once; the source let its buffers go (it re-reads to retransmit).
    source_holds(&mut s, 0);
    let t = s.ms();
    s.at(t + 1500);
    s.expect_none();
    assert!(s.ep.stats().rtos >= 1, "the timer fired (and backed off while nothing could go)");
    // The read completes: the retransmission goes at once.
    source_holds(&mut s, 3000);
    s.expect(ACK, 1, 1, 1000);
}

#[test]
fn a_fast_retransmission_stays_owed_until_the_bytes_are_back() {
    let mut s = established_sender(false, CcKind::NewReno);
    data_partly_read(&mut s, 10_000, 10_000);
    for i in 0..10 {
        s.expect(if i == 9 { ACK | PSH } else { ACK }, 1 + 1000 * i, 1, 1000);
    }
    source_holds(&mut s, 0);
    s.inject(Seg::ack(1, 1001));
    s.inject(Seg::ack(1, 1001));
    s.inject(Seg::ack(1, 1001));
    s.inject(Seg::ack(1, 1001));
    s.expect_none();
    assert_eq!(s.ep.stats().fast_recoveries, 1);
    source_holds(&mut s, 10_000);
    s.expect(ACK, 1001, 1, 1000);
}

#[test]
fn a_window_probe_acks_our_data_while_our_window_is_shut() {
    // Both windows shut, as in an echo whose output waits on its own unacknowledged data:
    // the peer's probes (an old sequence number) are not acceptable, but their ACK is taken
    // (RFC 9293 §3.10.7.4), so our data is not sent again on the backed-off timer.
    let mut s = receive_window_shut();
    while s.try_next().is_some() {}
    server_app_data(&mut s, 1000);
    s.expect(ACK | PSH, 1, 4001, 1000);
    let h = s.app.accepted[0];
    assert_eq!(s.ep.tcb(h).unwrap().unacked(), 1000);
    s.inject(Seg::ack(4000, 1001));
    let a = s.expect(ACK, 1001, 4001, 0);
    assert_eq!(a.win, 0, "the window is still shut");
    assert_eq!(s.ep.tcb(h).unwrap().unacked(), 0, "the probe's ACK was taken");
    for ms in 1..=3000 {
        let t = s.ms() + 1;
        s.at(t);
        if let Some(x) = s.try_next() {
            assert!(x.payload.is_empty(), "nothing sent again (at {ms} ms): {x:?}");
        }
    }
    // An ACK beyond what was sent, in a probe, is still refused.
    s.inject(Seg::ack(4000, 5001));
    s.expect(ACK, 1001, 4001, 0);
    assert_eq!(s.ep.tcb(h).unwrap().acked_offset(), 1000);
}

/// A SACK connection whose round trip is `rtt_ms`, with `n` segments of 1000 bytes sent at
/// once and not yet acknowledged.
fn tail_of_a_flight(rtt_ms: u64, n: u32) -> Script {
    let mut s = Script::server(cfg());
    s.inject(Seg::syn(0).mss(1000).sack_perm().win(65_535));
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(rtt_ms);
    s.inject(Seg::ack(1, 1).win(65_535));
    server_app_data(&mut s, 1000 * n as usize);
    for i in 0..n {
        s.expect(if i == n - 1 { ACK | PSH } else { ACK }, 1 + 1000 * i, 1, 1000);
    }
    s
}

/// Steps the clock until something is sent; returns it and the milliseconds waited.
fn wait_for_segment(s: &mut Script, limit_ms: u64) -> (script::Sent, u64) {
    let t0 = s.ms();
    for _ in 0..limit_ms {
        let t = s.ms() + 1;
        s.at(t);
        if let Some(x) = s.try_next() {
            return (x, s.ms() - t0);
        }
    }
    panic!("nothing sent within {limit_ms} ms");
}

#[test]
fn a_tail_loss_probe_resends_the_last_segment_after_two_round_trips() {
    // RFC 8985 §7.2: PTO = 2·SRTT + 2 ms with more than one segment out (here 22 ms), well
    // before the 200 ms retransmission timeout.
    let mut s = tail_of_a_flight(10, 3);
    let (p, waited) = wait_for_segment(&mut s, 1000);
    assert_eq!((p.seq, p.payload.len(), waited), (2001, 1000, 22), "the last segment, again");
    assert_eq!(s.ep.stats().tail_probes, 1);
    // One probe per episode: the next thing sent is the timeout's retransmission, from the
    // first unacknowledged byte, a full RTO after the probe.
    let (r, waited) = wait_for_segment(&mut s, 5000);
    assert_eq!((r.seq, waited), (1, 200));
    assert_eq!(s.ep.stats().rtos, 1);
}

/// A probe of the last segment; the peer's ACK of it, with a DSACK for the probe's bytes or
/// not; one more segment sent and acknowledged. Returns the script and the congestion
/// window before the probe's ACK.
fn probe_settled(dsack: bool) -> (Script, u32) {
    let mut s = tail_of_a_flight(10, 3);
    let h = s.app.accepted[0];
    let (p, _) = wait_for_segment(&mut s, 1000);
    assert_eq!(p.seq, 2001);
    let before = s.ep.tcb(h).unwrap().cwnd();
    let mut ack = Seg::ack(1, 3001).win(65_535);
    if dsack {
        ack = ack.sack(&[(s.ours(2001), s.ours(3001))]);
    }
    s.inject(ack);
    assert_eq!(s.ep.stats().tail_recoveries, 0, "an ACK up to the probe's end shows no loss yet");
    server_app_data(&mut s, 1000);
    s.expect(ACK | PSH, 3001, 1, 1000);
    s.inject(Seg::ack(1, 4001).win(65_535));
    (s, before)
}

#[test]
fn a_loss_the_probe_repaired_reduces_the_window_once() {
    // The peer had the first two segments (their ACKs were lost) and the probe filled the
    // third: no DSACK, and an ACK beyond the probe shows the probe repaired a loss.
    let (s, before) = probe_settled(false);
    assert_eq!(s.ep.stats().tail_recoveries, 1);
    assert!(s.ep.tcb(s.app.accepted[0]).unwrap().cwnd() < before, "the window was reduced for the loss");
    assert_eq!(s.ep.stats().rtos, 0);
}

#[test]
fn a_probe_the_peer_reports_as_a_duplicate_costs_nothing() {
    // Everything had arrived; the peer's ACK was only late. It answers the probe with a
    // DSACK for the probe's bytes (RFC 2883).
    let (s, before) = probe_settled(true);
    assert_eq!(s.ep.stats().tail_recoveries, 0);
    assert!(s.ep.tcb(s.app.accepted[0]).unwrap().cwnd() >= before);
}

#[test]
fn no_tail_loss_probe_without_sack() {
    let mut s = Script::server(cfg());
    s.inject(Seg::syn(0).mss(1000).win(65_535));
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(10);
    s.inject(Seg::ack(1, 1).win(65_535));
    server_app_data(&mut s, 3000);
    for _ in 0..3 {
        s.next();
    }
    let (r, waited) = wait_for_segment(&mut s, 5000);
    assert_eq!((r.seq, waited), (1, 200), "the timeout, not a probe");
    assert_eq!(s.ep.stats().tail_probes, 0);
}

#[test]
fn rack_marks_a_hole_lost_once_later_data_is_sacked_and_the_reordering_window_passed() {
    // Three segments out, the first lost: one SACKed segment above it is too few for RFC
    // 6675 (three are needed), but RACK (RFC 8985 §6) marks it lost after SRTT/4.
    let mut s = tail_of_a_flight(10, 3);
    let blk = (s.ours(1001), s.ours(2001));
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[blk]));
    s.expect_none();
    let (r, waited) = wait_for_segment(&mut s, 1000);
    assert_eq!((r.seq, r.payload.len()), (1, 1000), "the hole, retransmitted");
    assert!((2..=3).contains(&waited), "after the 2.5 ms window, not the 22 ms probe: {waited}");
    assert_eq!(s.ep.stats().fast_recoveries, 1);
}

#[test]
fn rack_leaves_a_reordered_segment_alone() {
    let mut s = tail_of_a_flight(10, 3);
    let blk = (s.ours(1001), s.ours(2001));
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[blk]));
    let t = s.ms() + 1;
    s.at(t);
    // The "hole" arrives within the window: it was reordered, not lost.
    s.inject(Seg::ack(1, 2001).win(65_535));
    let t = s.ms() + 10;
    s.at(t);
    s.expect_none();
    assert_eq!((s.ep.stats().retransmits, s.ep.stats().fast_recoveries), (0, 0));
}

#[test]
fn a_lost_retransmission_is_sent_again_without_the_timer() {
    // Segments 1 and 5 of ten lost. The first SACK starts recovery and resends 1; the next
    // shows 5 lost too, resent a millisecond later. The peer then SACKs 5's retransmission but
    // still lacks 1: a segment sent after 1's retransmission arrived, so that one was lost as
    // well (RFC 8985 §6.2), and it goes again a round trip and the reordering window after it
    // left — not after a 200 ms timeout that would cut the window to one segment.
    let mut s = tail_of_a_flight(10, 10);
    let h = s.app.accepted[0];
    let blk = |l: u32, r: u32, s: &Script| (s.ours(l), s.ours(r));
    let first = blk(1001, 4001, &s);
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[first]));
    s.expect(ACK, 1, 1, 1000);
    s.expect_none();
    let t0 = s.ms();
    s.at(t0 + 1);
    let second = blk(5001, 10_001, &s);
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[second, first]));
    s.expect(ACK, 4001, 1, 1000);
    s.at(t0 + 2);
    let all = blk(1001, 10_001, &s);
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[all]));
    s.expect_none();
    let (r, waited) = wait_for_segment(&mut s, 1000);
    assert_eq!((r.seq, r.payload.len()), (1, 1000), "the lost retransmission, again");
    // SRTT 10 ms + a quarter of it, from when it left (2 ms before the overtaking SACK).
    assert!((9..=12).contains(&waited), "after a round trip and the reordering window: {waited} ms");
    let st = s.ep.stats();
    assert_eq!((st.rtos, st.lost_retransmits, st.fast_recoveries), (0, 1, 1));
    s.inject(Seg::ack(1, 10_001).win(65_535));
    assert_eq!(s.ep.tcb(h).unwrap().unacked(), 0);
}

#[test]
fn a_timeout_resends_only_what_the_peer_did_not_sack() {
    // RACK and probes off, so that a SACK of two segments is too little for recovery and the
    // retransmission timer fires. Linux keeps what the peer SACKed through a timeout: the
    // holes go again in slow start from one segment, and the SACKed segments never do.
    let mut s = Script::server(Config { rack: false, tail_loss_probes: false, ..cfg() });
    s.inject(Seg::syn(0).mss(1000).sack_perm().win(65_535));
    s.expect(SYN | ACK, 0, 1, 0);
    s.at(10);
    s.inject(Seg::ack(1, 1).win(65_535));
    server_app_data(&mut s, 10_000);
    for _ in 0..10 {
        s.next();
    }
    let sacked = (s.ours(5001), s.ours(7001));
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[sacked]));
    let (r, waited) = wait_for_segment(&mut s, 5000);
    assert_eq!((r.seq, waited), (1, 200), "the timeout, one segment");
    assert_eq!(s.ep.stats().rtos, 1);
    let mut sent = vec![r.seq];
    let mut una = r.seq + 1000;
    for _ in 0..20 {
        if una >= 10_001 {
            break;
        }
        let t = s.ms() + 10;
        s.at(t);
        s.inject(Seg::ack(1, una).win(65_535).sack(&[sacked]));
        while let Some(x) = s.try_next() {
            sent.push(x.seq);
        }
        // Everything sent so far arrived: the cumulative ACK reaches the next gap.
        while sent.contains(&una) || (5001..7001).contains(&una) {
            una += 1000;
        }
    }
    assert_eq!(sent, vec![1, 1001, 2001, 3001, 4001, 7001, 8001, 9001], "each hole once, no SACKed segment");
    assert_eq!(s.ep.stats().rtos, 1, "no second timeout");
}

#[test]
fn with_several_engines_a_segment_of_no_connection_here_is_left_to_the_engine() {
    let mut s = Script::server(cfg());
    s.ep.set_forward_strays(true);
    // Another engine's connection: no reset, the engine hands it on.
    s.inject(Seg::ack(1000, 5000));
    s.expect_none();
    assert!(s.ep.take_stray());
    assert_eq!(s.ep.stats().strays, 1);
    // A SYN opens a connection here as always.
    s.inject(Seg::syn(0).mss(1460));
    s.expect(SYN | ACK, 0, 1, 0);
    assert!(!s.ep.take_stray());
    // An ACK that does not complete it answers another engine's SYN-ACK (the client's SYN was
    // retransmitted after it moved queue): it goes on, and this engine's twin goes quietly.
    s.inject(Seg::ack(1, 5000));
    s.expect_none();
    assert!(s.ep.take_stray());
    assert!(s.ep.is_empty(), "the twin half-open connection is gone");
    // The last engine round the ring answers as RFC 9293 says.
    s.ep.set_forward_strays(false);
    s.inject(Seg::ack(1000, 5000));
    let r = s.next();
    assert!(r.flags & RST != 0, "a reset from the last engine");
    assert!(!s.ep.take_stray());
}

#[test]
fn a_spurious_timeout_is_undone_when_the_ack_echoes_the_original() {
    // Eifel (RFC 3522), as Linux detects a spurious timeout with timestamps: ten segments
    // leave, their ACK is late past the RTO, the first segment goes again and the window falls
    // to one segment. The ACK that then arrives echoes the TSval of the original transmission,
    // not the retransmission's: the data was never lost, so the window goes back and nothing
    // more is resent.
    let mut s = Script::server(Config { tail_loss_probes: false, rack: false, ..cfg() });
    s.inject(Seg::syn(0).mss(1012).sack_perm().ts(100, 0).win(65_535));
    let sa = s.expect(SYN | ACK, 0, 1, 0);
    s.at(10);
    s.inject(Seg::ack(1, 1).win(65_535).ts(101, sa.opts.timestamps.unwrap().0));
    let h = s.app.accepted[0];
    server_app_data(&mut s, 10_000);
    let mut last = None;
    while let Some(x) = s.try_next() {
        last = Some(x);
    }
    let last = last.expect("a flight");
    let (end, original_ts) = (last.seq + last.payload.len() as u32, last.opts.timestamps.unwrap().0);
    let before = s.ep.tcb(h).unwrap().cwnd();
    let (r, _) = wait_for_segment(&mut s, 2000);
    assert_eq!(r.seq, 1, "the timeout's retransmission");
    assert_eq!(s.ep.stats().rtos, 1);
    assert!(s.ep.tcb(h).unwrap().cwnd() < before, "the timeout cut the window");
    let t = s.ms() + 1;
    s.at(t);
    s.inject(Seg::ack(1, end).win(65_535).ts(102, original_ts));
    let t = s.ms() + 1;
    s.at(t);
    let st = s.ep.stats();
    assert_eq!(st.undos, 1);
    assert!(s.ep.tcb(h).unwrap().cwnd() >= before, "{} < {before}", s.ep.tcb(h).unwrap().cwnd());
    assert_eq!(st.retransmits, 1, "nothing else resent");
}

#[test]
fn a_timeout_whose_ack_echoes_the_retransmission_is_not_undone() {
    // The same timeout, but the ACK echoes the retransmission's TSval: the original was lost.
    let mut s = Script::server(Config { tail_loss_probes: false, rack: false, ..cfg() });
    s.inject(Seg::syn(0).mss(1012).sack_perm().ts(100, 0).win(65_535));
    let sa = s.expect(SYN | ACK, 0, 1, 0);
    s.at(10);
    s.inject(Seg::ack(1, 1).win(65_535).ts(101, sa.opts.timestamps.unwrap().0));
    let h = s.app.accepted[0];
    server_app_data(&mut s, 10_000);
    while s.try_next().is_some() {}
    let (r, _) = wait_for_segment(&mut s, 2000);
    let rtx_ts = r.opts.timestamps.unwrap().0;
    s.inject(Seg::ack(1, 1 + r.payload.len() as u32).win(65_535).ts(102, rtx_ts));
    assert_eq!(s.ep.stats().undos, 0);
    assert!(s.ep.tcb(h).unwrap().cwnd() <= 3 * 1000, "slow start from one segment goes on");
}

#[test]
fn a_fast_recovery_every_retransmission_of_which_was_dsacked_is_undone() {
    // RFC 3708: the hole was only reordered. Its retransmission reaches the peer after the
    // original, and the peer says so with a DSACK (RFC 2883) below the cumulative ACK: the
    // window cut at the start of recovery comes back when recovery ends.
    let mut s = tail_of_a_flight(10, 10);
    let h = s.app.accepted[0];
    let before = s.ep.tcb(h).unwrap().cwnd();
    let blk = (s.ours(1001), s.ours(4001));
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[blk]));
    s.expect(ACK, 1, 1, 1000);
    assert!(s.ep.tcb(h).unwrap().cwnd() < before);
    let dup = (s.ours(1), s.ours(1001));
    s.inject(Seg::ack(1, 10_001).win(65_535).sack(&[dup]));
    let st = s.ep.stats();
    assert_eq!((st.fast_recoveries, st.dsacks, st.undos), (1, 1, 1));
    assert!(s.ep.tcb(h).unwrap().cwnd() >= before, "{} < {before}", s.ep.tcb(h).unwrap().cwnd());
}

#[test]
fn a_fast_recovery_without_a_dsack_keeps_its_reduction() {
    let mut s = tail_of_a_flight(10, 10);
    let h = s.app.accepted[0];
    let blk = (s.ours(1001), s.ours(4001));
    s.inject(Seg::ack(1, 1).win(65_535).sack(&[blk]));
    s.expect(ACK, 1, 1, 1000);
    s.inject(Seg::ack(1, 10_001).win(65_535));
    let st = s.ep.stats();
    assert_eq!((st.fast_recoveries, st.undos), (1, 0));
    assert_eq!(s.ep.tcb(h).unwrap().cwnd(), 7000, "CUBIC's β of 0.7 of ten segments");
}

#[test]
fn data_received_twice_is_reported_in_a_dsack_block() {
    let mut s = Script::server(cfg());
    s.handshake(Seg::syn(0).win(65_535).mss(1460).sack_perm());
    s.inject(Seg::ack(1, 1).data(100));
    s.at(s.ms() + 50); // the delayed ACK
    let a = s.expect(ACK, 1, 101, 0);
    assert_eq!(a.opts.sack_blocks[0], None);
    s.inject(Seg::ack(1, 1).data(100));
    let a = s.expect(ACK, 1, 101, 0);
    assert_eq!(a.opts.sack_blocks[0], Some((PEER_ISN + 1, PEER_ISN + 101)), "RFC 2883 §4: the duplicate first");
    assert_eq!(a.opts.sack_blocks[1], None);
    s.inject(Seg::ack(101, 1).data(100));
    s.at(s.ms() + 50);
    let a = s.expect(ACK, 1, 201, 0);
    assert_eq!(a.opts.sack_blocks[0], None, "reported once");
}

#[test]
fn a_paced_cubic_sender_spreads_its_initial_window() {
    // With pacing on, ten segments over a 10 ms RTT in slow start go at twice cwnd/SRTT
    // (2 MB/s: one 1000-byte segment each half millisecond), after a millisecond's burst;
    // without it all ten leave at once.
    for pacing in [false, true] {
        let mut s = Script::server(Config { pacing, ..cfg() });
        s.inject(Seg::syn(0).mss(1000).sack_perm().win(65_535));
        s.expect(SYN | ACK, 0, 1, 0);
        s.at(10);
        s.inject(Seg::ack(1, 1).win(65_535));
        server_app_data(&mut s, 10_000);
        let mut at_once = 0;
        while s.try_next().is_some() {
            at_once += 1;
        }
        if !pacing {
            assert_eq!(at_once, 10);
            continue;
        }
        assert!((1..=4).contains(&at_once), "a millisecond's worth first: {at_once}");
        let t0 = s.ms();
        let mut sent = at_once;
        while sent < 10 {
            let (_, waited) = wait_for_segment(&mut s, 100);
            assert!(waited <= 1, "paced, not stalled");
            sent += 1;
            while s.try_next().is_some() {
                sent += 1;
            }
        }
        let spread = s.ms() - t0;
        assert!((3..=6).contains(&spread), "ten segments over {spread} ms");
    }
}
