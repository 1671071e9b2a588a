//! `sirocco web --mode stream` (Atlas) against the kernel's TCP, curl and raw sockets: bodies
//! read from disk with O_DIRECT as each connection's window opens. Every byte is compared with
//! the file, ranges too, under loss; and the files' pages stay out of the page cache.

use std::os::fd::AsRawFd;

use crate::common::{stop_with_log, total, TestNet, SERVER_OWN};
use crate::web::{get, pattern, Root};

/// Pages of `path` in the page cache (mincore over a mapping of the whole file).
pub fn cached_pages(path: &std::path::Path) -> usize {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    if len == 0 {
        return 0;
    }
    // SAFETY: a read-only shared mapping of a file held open; unmapped below.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
    assert_ne!(p, libc::MAP_FAILED);
    let mut v = vec![0u8; len.div_ceil(4096)];
    // SAFETY: a byte per page of the mapping.
    let r = unsafe { libc::mincore(p, len, v.as_mut_ptr()) };
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, len) };
    assert_eq!(r, 0);
    v.iter().filter(|&&b| b & 1 == 1).count()
}

/// Drops the file's pages (written moments ago) from the page cache.
pub fn drop_cache(path: &std::path::Path) {
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: advice on a descriptor we own.
    assert_eq!(unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) }, 0);
}

fn stat(log: &str, key: &str) -> u64 {
    let line = log.lines().find(|l| l.contains(" stream: ")).unwrap_or_else(|| panic!("no stream line in:\n{log}"));
    let at = line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len();
    line[at..].trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn files_stream_from_disk_whole_and_uncached_under_loss() {
    // On the build directory's file system: O_DIRECT and the page-cache check need a disk
    // file system (a tmpfs /tmp keeps every page in the cache by nature).
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), "stream");
    let sizes = [0usize, 1, 1448, 4095, 4096, 100_003, 6 << 20];
    for (i, n) in sizes.iter().enumerate() {
        root.write(&format!("f{i}.bin"), &pattern(*n, i as u64 + 7));
        drop_cache(&root.0.join(format!("f{i}.bin")));
    }
    let big = root.0.join(format!("f{}.bin", sizes.len() - 1));
    assert_eq!(cached_pages(&big), 0, "dropped before the test");
    let net = TestNet::new(1);
    let s = net.start(&[
        "web",
        "--iface",
        &net.srv_if,
        "--addr",
        SERVER_OWN,
        "--root",
        root.path(),
        "--mode",
        "stream",
        "--stream-memory",
        "4",
        "--impair-loss",
        "2",
    ]);
    for (i, n) in sizes.iter().enumerate() {
        let r = get(
            &net.cli_ns,
            SERVER_OWN,
            80,
            &format!("GET /f{i}.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(r.status, 200, "file {i}");
        assert!(r.body == pattern(*n, i as u64 + 7), "file {i}: {} of {n} bytes, not the file's", r.body.len());
    }
    // A range of the large file, through curl, written to a file and compared.
    let out = root.0.join("range.out");
    let url = format!("http://{SERVER_OWN}/f{}.bin", sizes.len() - 1);
    let o = net.exec(
        &net.cli_ns,
        &[
            "curl",
            "-sS",
            "--max-time",
            "30",
            "-r",
            "1000-3000000",
            "-o",
            out.to_str().unwrap(),
            "-w",
            "%{http_code}",
            &url,
        ],
    );
    assert!(o.status.success(), "curl: {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "206");
    let want = pattern(6 << 20, sizes.len() as u64 - 1 + 7);
    assert!(std::fs::read(&out).unwrap() == want[1000..=3_000_000], "the range's bytes");
    std::fs::remove_file(&out).unwrap();
    // Conditionals and HEAD answer as in every other mode.
    let r = get(&net.cli_ns, SERVER_OWN, 80, "HEAD /f6.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert_eq!((r.status, r.body.len()), (200, 0));
    let (c, log) = stop_with_log(s);
    assert!(stat(&log, "reads") > 20, "{log}");
    assert_eq!(stat(&log, "read errors"), 0, "{log}");
    assert!(total(&c, "tx_gathered") > 4000, "6 MiB sent from the read buffers without a copy: {log}");
    assert!(stat(&log, "read again for retransmissions") > 0, "2 % loss: sent bytes read again: {log}");
    assert_eq!(cached_pages(&big), 0, "6 MiB streamed (and a 3 MB range), none of it in the page cache");
}

#[test]
fn stream_copy_sends_the_same_bytes_copied_into_frames() {
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), "stream-copy");
    let n = 3 << 20;
    root.write("c.bin", &pattern(n, 3));
    let net = TestNet::new(1);
    let args = ["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--root", root.path(), "--mode", "stream"];
    let s = net.start(&[&args[..], &["--stream-copy", "--impair-loss", "1"]].concat());
    let r = get(&net.cli_ns, SERVER_OWN, 80, "GET /c.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert!(r.status == 200 && r.body == pattern(n, 3), "{} of {n} bytes", r.body.len());
    let (c, log) = stop_with_log(s);
    assert_eq!(total(&c, "tx_gathered"), 0, "copied, not gathered: {log}");
    assert!(log.contains("copied into frames"), "{log}");
}

#[test]
fn stream_mode_needs_a_root_on_a_file_system_with_o_direct() {
    let net = TestNet::new(1);
    let o = net.exec(
        &net.srv_ns,
        &[env!("CARGO_BIN_EXE_sirocco"), "web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--mode", "stream"],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--mode stream serves files from disk: give --root DIR"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn bad_stream_buffer_sizes_are_one_line() {
    let net = TestNet::new(1);
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), "stream-opts");
    root.write("a.bin", b"a");
    for (buf, mem, needle) in [
        ("3", "64", "--stream-buffer must be 4..1024 KiB"),
        ("6", "64", "a multiple of 4"),
        ("4", "65536", "io_uring registers at most 16384"),
    ] {
        let o = net.exec(
            &net.srv_ns,
            &[
                env!("CARGO_BIN_EXE_sirocco"),
                "web",
                "--iface",
                &net.srv_if,
                "--addr",
                SERVER_OWN,
                "--root",
                root.path(),
                "--mode",
                "stream",
                "--stream-buffer",
                buf,
                "--stream-memory",
                mem,
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{buf} KiB");
        assert!(err.contains(needle), "{needle:?} in {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn many_streams_take_turns_for_few_buffers() {
    // 40 downloads at once over 8 read buffers: those that find none wait in a queue and are
    // given buffers as they come back, each byte still the file's.
    let root = Root::under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), "stream-turns");
    let (files, n) = (4, (1 << 20) + 4321);
    for i in 0..files {
        root.write(&format!("t{i}.bin"), &pattern(n, 11 + i as u64));
    }
    let net = TestNet::new(1);
    let args = ["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--root", root.path(), "--mode", "stream"];
    let s = net.start(&[&args[..], &["--stream-memory", "1", "--stream-buffer", "128"]].concat());
    let out = root.0.join("turns");
    std::fs::create_dir_all(&out).unwrap();
    let script = format!(
        "for i in $(seq 0 39); do curl -sS --max-time 60 -o {dir}/$i.out http://{SERVER_OWN}/t$((i % {files})).bin & done; wait",
        dir = out.display()
    );
    let o = net.exec(&net.cli_ns, &["sh", "-c", &script]);
    assert!(o.status.success(), "curl: {}", String::from_utf8_lossy(&o.stderr));
    for i in 0..40u64 {
        let got = std::fs::read(out.join(format!("{i}.out"))).unwrap();
        assert!(got == pattern(n, 11 + i % files as u64), "download {i}: {} of {n} bytes, not the file's", got.len());
    }
    std::fs::remove_dir_all(&out).unwrap();
    let (_, log) = stop_with_log(s);
    assert!(stat(&log, "waits for a buffer") > 0, "40 streams on 8 buffers waited for one: {log}");
    assert_eq!(stat(&log, "read errors"), 0, "{log}");
}
