//! A complete server on sirocco's level-2 channel, written with the stream callbacks
//! (`tcp::channel::streams`), and a client written against the channel's events and calls
//! directly — both run as engines on the deterministic simulator, so this example needs no
//! root, no NIC and no namespace: `cargo run --release -p sirocco-sim --example line_server`.
//!
//! On a real interface the server is the same code: hand it to `engine::ChannelService` on
//! an engine whose port is AF_XDP (as `sirocco kv` does in `sirocco/src/cmd/kv.rs`).

use engine::{ChannelService, Duration};
use sim::engines::EngineNet;
use tcp::channel::streams::{StreamServer, Streams, Verdict, Writer};
use tcp::channel::{Buffers, Calls, Event, Events, Extent, Server};
use tcp::{Config, End, Limits};
use wire::Ipv4Addr;

const SERVER: Ipv4Addr = Ipv4Addr([198, 18, 0, 1]);
const CLIENT: Ipv4Addr = Ipv4Addr([198, 18, 0, 2]);
const PORT: u16 = 7777;

/// The server: answers every line with its length and the line upper-cased.
struct Shout {
    served: u64,
}

impl StreamServer for Shout {
    /// Per connection: the line read so far.
    type Conn = Vec<u8>;

    fn open(&mut self, _remote: (wire::IpAddr, u16), _port: u16) -> Option<Vec<u8>> {
        Some(Vec::new())
    }

    fn data(&mut self, line: &mut Vec<u8>, data: &[u8], w: &mut Writer<'_, '_>) -> Verdict {
        for &b in data {
            if b != b'\n' {
                if line.len() == 1024 {
                    w.write(b"line too long\n");
                    return Verdict::Close;
                }
                line.push(b);
                continue;
            }
            w.write(format!("{} ", line.len()).as_bytes());
            w.write(&line.to_ascii_uppercase());
            w.write(b"\n");
            line.clear();
            self.served += 1;
        }
        Verdict::Continue
    }

    fn closed(&mut self, _line: Vec<u8>, _end: End) {}
}

/// The client, on the raw channel: connects, sends its lines in one `sendv`, reads the
/// answers, closes.
struct Ask {
    lines: &'static [u8],
    started: bool,
    answers: Vec<u8>,
    done: bool,
}

impl Server for Ask {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        if !self.started {
            self.started = true;
            calls.connect(1, CLIENT.into(), SERVER.into(), PORT).expect("connect");
        }
        for ev in events.iter() {
            match ev {
                Event::Connected { h, outcome: Ok(()), .. } => {
                    let buf = calls.buffers().alloc().expect("a send buffer");
                    calls.buffers().write(buf, 0, self.lines).expect("fits");
                    let e = Extent { buf, off: 0, len: self.lines.len() as u32 };
                    let took = calls.sendv(h, &[e]).expect("sendv");
                    assert_eq!(took as usize, self.lines.len(), "a fresh window takes a few lines");
                    // TCP holds its own reference until the bytes are acknowledged.
                    calls.buffers().release(buf);
                }
                Event::Recv { h, data, .. } => {
                    self.answers.extend_from_slice(data);
                    let _ = calls.recv_done(h, data.len() as u32);
                    if self.answers.iter().filter(|&&b| b == b'\n').count() == 3 {
                        let _ = calls.close(h);
                    }
                }
                Event::Dead { .. } => self.done = true,
                _ => {}
            }
        }
    }
}

fn main() {
    let mut server = ChannelService::new(
        Streams::new(Shout { served: 0 }, 1000),
        &[PORT],
        Config::default(),
        Limits::default(),
        Buffers::new(1024, 2048),
    );
    let ask = Ask { lines: b"hello\nkernel bypass\nsirocco\n", started: false, answers: Vec::new(), done: false };
    let mut client = ChannelService::client(ask, Config::default(), Limits::default(), Buffers::new(64, 2048));
    let mut net = EngineNet::new(1);
    net.add(SERVER, &server);
    net.add(CLIENT, &client);
    // Bounded: a few simulated seconds at most.
    let mut steps = 0;
    while !client.server.done && steps < 100_000 {
        net.step(&mut [&mut server, &mut client]);
        steps += 1;
    }
    net.run_for(Duration::from_millis(10), &mut [&mut server, &mut client]);
    print!("{}", String::from_utf8_lossy(&client.server.answers));
    println!(
        "server answered {} lines; open connections now {}",
        server.server.app.served,
        server.server.open_connections()
    );
    assert_eq!(client.server.answers, b"5 HELLO\n13 KERNEL BYPASS\n7 SIROCCO\n");
}
