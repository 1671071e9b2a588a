//! TCP echo on the level-2 channel (the IX / MegaPipe echo server). Received bytes are copied
//! into send buffers and handed to `sendv`; what the peer's window does not take waits for the
//! next `sent`. The receive window reopens only as the echo is acknowledged, so a connection
//! never holds more than its receive window of buffer memory.

use std::collections::VecDeque;

use tcp::channel::{BufId, Calls, Event, Events, Extent, Server};
use tcp::Handle;

/// One connection: the buffer being filled and the extents `sendv` has not taken yet (each
/// holding a reference to its buffer, as `cur` holds one for what is still to be written).
#[derive(Default)]
struct Conn {
    h: Option<Handle>,
    cur: Option<(BufId, u32)>,
    unsent: VecDeque<Extent>,
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

    /// Copies `data` into `c`'s buffers; false if they ran out.
    fn store(calls: &mut Calls<'_>, c: &mut Conn, mut data: &[u8]) -> bool {
        let size = calls.buffers().size() as u32;
        while !data.is_empty() {
            let (id, used) = match c.cur {
                Some((id, used)) if used < size => (id, used),
                full => {
                    if let Some((id, _)) = full {
                        calls.buffers().release(id);
                    }
                    c.cur = None;
                    match calls.buffers().alloc() {
                        Some(id) => (id, 0),
                        None => return false,
                    }
                }
            };
            let n = (size - used).min(data.len() as u32);
            calls.buffers().write(id, used, &data[..n as usize]).expect("appends after every sent byte");
            let e = Extent { buf: id, off: used, len: n };
            match c.unsent.back_mut() {
                Some(last) if last.buf == id && last.off + last.len == used => last.len += n,
                _ => {
                    calls.buffers().retain(id).expect("cur is allocated");
                    c.unsent.push_back(e);
                }
            }
            c.cur = Some((id, used + n));
            data = &data[n as usize..];
        }
        true
    }

    /// Hands the unsent extents to TCP as far as the window allows; closes after the last one
    /// once the peer has closed.
    fn flush(calls: &mut Calls<'_>, c: &mut Conn) {
        let Some(h) = c.h else { return };
        while let Some(&e) = c.unsent.front() {
            let took = calls.sendv(h, &[e]).unwrap_or(0);
            if took < e.len {
                c.unsent[0] = Extent { off: e.off + took, len: e.len - took, ..e };
                return;
            }
            c.unsent.pop_front();
            calls.buffers().release(e.buf);
        }
        // Everything in the current buffer is TCP's now: let it go back to the pool once
        // acknowledged instead of keeping a mostly empty buffer per idle connection.
        if let Some((id, _)) = c.cur.take() {
            calls.buffers().release(id);
        }
        if c.fin {
            let _ = calls.close(h);
        }
    }

    fn end(&mut self, calls: &mut Calls<'_>, cookie: u64) {
        let Some(c) = self.conns.get_mut(cookie as usize).filter(|c| c.h.is_some()) else {
            return;
        };
        if let Some((id, _)) = c.cur.take() {
            calls.buffers().release(id);
        }
        for e in c.unsent.drain(..) {
            calls.buffers().release(e.buf);
        }
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
                    if Self::store(calls, c, data) {
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
