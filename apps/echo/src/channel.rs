//! TCP echo on the level-2 channel (the IX / MegaPipe echo server). Received bytes are copied
//! into the connection's [`Outbox`] and handed to `sendv` as the peer's window allows. The
//! receive window reopens only as the echo is acknowledged, so a connection never holds more
//! than its receive window of buffer memory.

use tcp::channel::{Calls, Event, Events, Outbox, Server};
use tcp::Handle;

/// One connection: its unsent echo, and whether the peer has finished sending.
#[derive(Default)]
struct Conn {
    h: Option<Handle>,
    out: Outbox,
    fin: bool,
}

/// The echo server (one per engine).
#[derive(Default)]
pub struct ChannelEcho {
    conns: Vec<Conn>,
    free: Vec<u32>,
    /// Bytes echoed (acknowledged by the peers).
    pub echoed: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections that ended.
    pub closed: u64,
    /// Connections reset because the send buffers ran out.
    pub no_buffer: u64,
}

impl ChannelEcho {
    /// What an idle connection holds in an engine sized for it: the channel's endpoint and
    /// this server's record with its place in the free list.
    pub fn bytes_per_connection() -> usize {
        tcp::channel::Channel::bytes_per_connection() + std::mem::size_of::<Conn>() + std::mem::size_of::<u32>()
    }

    fn open(&mut self, h: Handle) -> u64 {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(Conn::default());
                (self.conns.len() - 1) as u32
            }
        };
        self.conns[i as usize].h = Some(h);
        u64::from(i)
    }

    /// Hands the echo to TCP as far as the window allows; closes after the last byte once
    /// the peer has closed.
    fn flush(calls: &mut Calls<'_>, c: &mut Conn) {
        let Some(h) = c.h else { return };
        if c.out.flush(calls, h) && c.fin {
            let _ = calls.close(h);
        }
    }

    fn end(&mut self, calls: &mut Calls<'_>, cookie: u64) {
        let Some(c) = self.conns.get_mut(cookie as usize).filter(|c| c.h.is_some()) else {
            return;
        };
        c.out.clear(calls.buffers());
        c.h = None;
        c.fin = false;
        self.free.push(cookie as u32);
        self.closed += 1;
    }
}

impl Server for ChannelEcho {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        for ev in events.iter() {
            match ev {
                Event::Knock { h, .. } => {
                    let cookie = self.open(h);
                    if calls.accept(h, cookie).is_ok() {
                        self.accepted += 1;
                    } else {
                        self.conns[cookie as usize].h = None;
                        self.free.push(cookie as u32);
                    }
                }
                Event::Recv { h, cookie, data } => {
                    let c = &mut self.conns[cookie as usize];
                    if c.out.write(calls.buffers(), data) {
                        Self::flush(calls, c);
                    } else {
                        self.no_buffer += 1;
                        let _ = calls.abort(h);
                    }
                }
                Event::Sent { h, cookie, acked, .. } => {
                    self.echoed += acked;
                    let _ = calls.recv_done(h, acked as u32);
                    Self::flush(calls, &mut self.conns[cookie as usize]);
                }
                Event::PeerClosed { cookie, .. } => {
                    let c = &mut self.conns[cookie as usize];
                    c.fin = true;
                    Self::flush(calls, c);
                }
                Event::Dead { cookie, .. } => self.end(calls, cookie),
                Event::Connected { .. } => {}
            }
        }
    }
}
