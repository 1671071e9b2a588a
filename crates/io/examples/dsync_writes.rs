//! The storage port's floor for a durable log: sequential O_DIRECT|O_DSYNC writes of one size,
//! one in flight, into a pre-zeroed file, waited for in poll() on the ring (as an engine
//! sleeps) or with io_uring_enter. Compare with `dd oflag=direct,dsync` of the same size.
//!
//! `cargo run --release --example dsync_writes -- FILE KB COUNT [poll|enter]`

use sirocco_io::storage::{StorageConfig, StoragePort};
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        eprintln!("usage: dsync_writes FILE KB COUNT [poll|enter]");
        std::process::exit(2);
    }
    let (path, kb, count) = (&a[1], a[2].parse::<usize>().unwrap(), a[3].parse::<u64>().unwrap());
    let poll = a.get(4).is_none_or(|m| m == "poll");
    let size = kb << 10;
    std::fs::write(path, vec![0u8; size * count as usize]).unwrap();
    std::fs::File::open(path).unwrap().sync_all().unwrap();
    let cfg = StorageConfig {
        entries: 8,
        buffers: 2,
        buf_size: size.next_multiple_of(4096),
        max_files: 1,
        ..Default::default()
    };
    let mut port = StoragePort::new(cfg).unwrap();
    if let Ok(c) = std::env::var("WORKER_CPUS") {
        let cpus: Vec<usize> = c.split(',').map(|x| x.parse().unwrap()).collect();
        port.set_worker_cpus(&cpus).unwrap();
    }
    let (f, _) = port.open_dsync(std::path::Path::new(path)).unwrap();
    let t = Instant::now();
    for i in 0..count {
        let b = port.pool().alloc().unwrap();
        port.write(f, i * size as u64, size as u32, b, i).map_err(|e| e.1).unwrap();
        port.submit();
        let mut done = false;
        while !done {
            if poll {
                poll_ring(port.ring_fd());
            } else {
                port.wait();
            }
            let mut bufs = Vec::new();
            port.reap(|c| {
                c.result.unwrap();
                bufs.extend(c.buf);
                done = true;
            });
            for b in bufs {
                port.pool().free(b);
            }
        }
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / count as f64;
    println!(
        "{kb} KB O_DIRECT|O_DSYNC writes through the storage port ({}): {us:.0} us each",
        if poll { "poll" } else { "enter" }
    );
    let _ = std::fs::remove_file(path);
}

/// Sleeps in poll() until the ring has a completion.
fn poll_ring(fd: i32) {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, 100) };
}
