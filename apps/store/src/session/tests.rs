use super::*;
use crate::command::Info;
use crate::keyspace::Keyspace;
use crate::log::order::Order;
use crate::log::stage::Stage;
use std::sync::Arc;

struct NoInfo;

impl Info for NoInfo {
    fn info(&self, _ks: &Keyspace, _s: &[String]) -> String {
        String::new()
    }
    fn config(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

#[derive(Default)]
struct Sent(Vec<u8>);

impl Out for Sent {
    fn put(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn backlog(&self) -> usize {
        0
    }
}

#[test]
fn replies_are_held_until_durable_and_stay_in_order() {
    let ks = Keyspace::new(1);
    let order = Arc::new(Order::new(1, 0));
    let mut stage = Stage::new(order.clone(), 0);
    let mut s = Session::new();
    let mut out = Sent::default();
    let input = b"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nECHO x\r\n";
    {
        let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 0, info: &NoInfo };
        // Cut anywhere: the same replies.
        s.input(&input[..20], &mut ctx, order.durable(), &mut out);
        s.input(&input[20..], &mut ctx, order.durable(), &mut out);
    }
    // PING went before the write; the rest waits for it.
    assert_eq!(out.0, b"+PONG\r\n");
    assert_eq!(s.waiting(), Some(1));
    let mut commit = Vec::new();
    stage.take_commit(&mut commit, 1, 0);
    stage.settled(None);
    let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 0, info: &NoInfo };
    assert_eq!(s.resume(&mut ctx, order.durable(), &mut out), Flow::Open);
    assert_eq!(out.0, b"+PONG\r\n+OK\r\n$1\r\nv\r\n$1\r\nx\r\n");
    assert_eq!(s.waiting(), None);
}

#[test]
fn a_protocol_error_is_answered_then_the_connection_closes() {
    let ks = Keyspace::new(1);
    let order = Arc::new(Order::new(1, 0));
    let mut stage = Stage::new(order.clone(), 0);
    let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 0, info: &NoInfo };
    let mut out = Sent::default();
    for (bad, says) in [
        (&b"*1\r\n$999999999999\r\n"[..], "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n+no\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"),
        (b"\"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
    ] {
        let mut s = Session::new();
        out.0.clear();
        assert_eq!(s.input(bad, &mut ctx, 0, &mut out), Flow::Close);
        assert_eq!(String::from_utf8_lossy(&out.0), says);
    }
    // Half a command waits; QUIT closes after its answer.
    let mut s = Session::new();
    out.0.clear();
    assert_eq!(s.input(b"*2\r\n$4\r\nECHO\r\n$5\r\nab", &mut ctx, 0, &mut out), Flow::Open);
    assert!(out.0.is_empty());
    assert_eq!(s.input(b"cde\r\nQUIT\r\n", &mut ctx, 0, &mut out), Flow::Close);
    assert_eq!(out.0, b"$5\r\nabcde\r\n+OK\r\n");
    assert!(ctx.journal.last() == 0);
}

/// A client that does not read: the network takes nothing until `drain`.
#[derive(Default)]
struct Stuck {
    got: Vec<u8>,
    taken: usize,
}

impl Out for Stuck {
    fn put(&mut self, b: &[u8]) {
        self.got.extend_from_slice(b);
    }
    fn backlog(&self) -> usize {
        self.got.len() - self.taken
    }
}

#[test]
fn a_pipeline_written_before_any_reply_is_read_is_answered_whole() {
    // 100 000 commands (about 3.6 MB) before the client reads: all are read and run; the
    // replies go as the network takes them, in order, none lost (issue 39: the session used
    // to stop reading at its output bound while the client was blocked writing).
    let ks = Keyspace::new(1);
    let order = Arc::new(Order::new(1, 0));
    let mut stage = Stage::new(order.clone(), 0);
    let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 0, info: &NoInfo };
    let mut s = Session::new();
    let mut out = Stuck::default();
    let mut input = Vec::new();
    for i in 0..100_000 {
        input.extend_from_slice(format!("*2\r\n$4\r\nECHO\r\n$6\r\n{i:06}\r\n").as_bytes());
    }
    for piece in input.chunks(64 * 1024) {
        assert_eq!(s.input(piece, &mut ctx, 0, &mut out), Flow::Open);
    }
    assert_eq!(s.commands, 100_000, "every request read and run");
    assert!(out.backlog() <= LIMIT && s.unsent() > 0);
    for _ in 0..1000 {
        if s.unsent() == 0 {
            break;
        }
        out.taken = out.got.len(); // the client reads
        s.resume(&mut ctx, 0, &mut out);
    }
    let want: Vec<u8> = (0..100_000).flat_map(|i| format!("$6\r\n{i:06}\r\n").into_bytes()).collect();
    assert!(out.got == want, "{} of {} bytes, in order", out.got.len(), want.len());
}

#[test]
fn a_client_past_the_output_buffer_limit_is_closed() {
    let ks = Keyspace::new(1);
    let order = Arc::new(Order::new(1, 0));
    let mut stage = Stage::new(order.clone(), 0);
    let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 0, info: &NoInfo };
    let mut s = Session::new().with_output_limit(LIMIT + 10_000);
    let mut out = Stuck::default();
    let big = format!("*2\r\n$4\r\nECHO\r\n$1000\r\n{}\r\n", "x".repeat(1000));
    let mut flow = Flow::Open;
    for _ in 0..1000 {
        flow = s.input(big.as_bytes(), &mut ctx, 0, &mut out);
        if flow == Flow::Close {
            break;
        }
    }
    assert_eq!(flow, Flow::Close);
    assert!(s.overflowed && s.commands < 1000);
}
