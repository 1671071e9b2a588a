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
