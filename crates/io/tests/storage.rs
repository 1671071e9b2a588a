//! The storage port against the kernel: real files on the build directory's file system
//! (ext4 here), read and written with O_DIRECT through io_uring, checked against what the
//! standard library reads and writes through the page cache. No root needed.

use std::fs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use sirocco_io::storage::{
    align_range, Completion, StorageConfig, StorageError, StoragePort, SubmitError, DIRECT_ALIGN,
};

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("storage").join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// Bytes that are a function of their offset, so a misplaced block shows.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| ((i as u64).wrapping_mul(2_654_435_761) >> 7) as u8 ^ seed).collect()
}

fn port(cfg: StorageConfig) -> StoragePort {
    StoragePort::new(cfg).unwrap_or_else(|e| panic!("{e}"))
}

/// Reaps until `n` requests have completed (bounded).
fn collect(p: &mut StoragePort, n: usize) -> Vec<Completion> {
    let mut out = Vec::new();
    for _ in 0..10_000 {
        p.submit();
        p.reap(|c| out.push(c));
        if out.len() >= n {
            return out;
        }
        p.wait();
    }
    panic!("{} of {n} completions", out.len());
}

#[test]
fn reads_match_the_file_whatever_the_size_and_split() {
    let d = dir("reads");
    let data = pattern(3 * 1024 * 1024 + 1234, 7);
    fs::write(d.join("f"), &data).unwrap();
    // Parts of 16 KiB: a 256 KiB request is 16 transfers, one completion.
    let mut p = port(StorageConfig { buffers: 8, buf_size: 256 << 10, max_part: 16 << 10, ..Default::default() });
    println!("{}", p.features());
    let (f, size) = p.open(&d.join("f"), false).unwrap();
    assert_eq!(size, data.len() as u64);
    let mut off = 0u64;
    let mut cookie = 0;
    let mut checked = 0usize;
    while off < size {
        let len = [4096u32, 65_536, 262_144][cookie as usize % 3];
        let buf = p.pool().alloc().expect("a free buffer");
        p.read(f, off, len, buf, cookie).unwrap();
        let c = collect(&mut p, 1).pop().unwrap();
        assert_eq!(c.cookie, cookie);
        let n = c.result.unwrap() as usize;
        let want = (size - off).min(u64::from(len)) as usize;
        assert_eq!(n, want, "bytes at {off}: up to the end of the file");
        let buf = c.buf.unwrap();
        assert_eq!(&p.pool_ref().get(&buf)[..n], &data[off as usize..off as usize + n], "bytes at {off}");
        p.pool().free(buf);
        checked += n;
        off += u64::from(len);
        cookie += 1;
    }
    assert_eq!(checked, data.len());
    assert!(p.stats.parts > p.stats.reads, "long requests were cut: {:?}", p.stats);
    assert_eq!(p.in_flight(), 0);
}

#[test]
fn many_reads_in_flight_complete_once_each() {
    let d = dir("many");
    let data = pattern(2 << 20, 3);
    fs::write(d.join("f"), &data).unwrap();
    let mut p =
        port(StorageConfig { entries: 64, buffers: 32, buf_size: 64 << 10, max_part: 8 << 10, ..Default::default() });
    let (f, _) = p.open(&d.join("f"), false).unwrap();
    let mut bufs = Vec::new();
    while let Some(b) = p.pool().alloc() {
        bufs.push(b);
    }
    for (i, b) in bufs.into_iter().enumerate() {
        p.read(f, i as u64 * 65_536, 65_536, b, i as u64).unwrap();
    }
    let done = collect(&mut p, 32);
    let mut cookies: Vec<u64> = done.iter().map(|c| c.cookie).collect();
    cookies.sort_unstable();
    assert_eq!(cookies, (0..32).collect::<Vec<_>>(), "each request completes exactly once");
    for c in done {
        let at = c.cookie as usize * 65_536;
        let b = c.buf.unwrap();
        assert_eq!(p.pool_ref().get(&b)[..65_536], data[at..at + 65_536]);
        p.pool().free(b);
    }
}

#[test]
fn writes_then_sync_are_what_a_buffered_read_sees() {
    let d = dir("writes");
    let path = d.join("log");
    let mut p = port(StorageConfig { buffers: 4, buf_size: 64 << 10, max_part: 16 << 10, ..Default::default() });
    let (f, size) = p.open(&path, true).unwrap();
    assert_eq!(size, 0, "created empty");
    let data = pattern(3 * 65_536, 9);
    for (i, chunk) in data.chunks(65_536).enumerate() {
        let mut b = p.pool().alloc().unwrap();
        p.pool().get_mut(&mut b)[..chunk.len()].copy_from_slice(chunk);
        p.write(f, i as u64 * 65_536, 65_536, b, i as u64).unwrap();
    }
    for c in collect(&mut p, 3) {
        assert_eq!(c.result, Ok(65_536));
        p.pool().free(c.buf.unwrap());
    }
    p.sync(f, true, 99).unwrap();
    let c = collect(&mut p, 1).pop().unwrap();
    assert_eq!((c.cookie, c.result, c.buf.is_none()), (99, Ok(0), true));
    assert_eq!(fs::read(&path).unwrap(), data);
    assert_eq!((p.stats.writes, p.stats.syncs, p.stats.bytes_written), (3, 1, 3 * 65_536));
}

#[test]
fn bad_requests_are_refused_and_give_the_buffer_back() {
    let d = dir("bad");
    fs::write(d.join("f"), pattern(8192, 1)).unwrap();
    let mut p = port(StorageConfig { entries: 2, buffers: 4, buf_size: 8192, max_part: 4096, ..Default::default() });
    let (f, _) = p.open(&d.join("f"), false).unwrap();
    let b = p.pool().alloc().unwrap();
    let (b, e) = p.read(f, 100, 4096, b, 0).unwrap_err();
    assert_eq!(e, SubmitError::Misaligned);
    let (b, e) = p.read(f, 0, 1000, b, 0).unwrap_err();
    assert_eq!(e, SubmitError::Misaligned);
    let (b, e) = p.read(f, 0, 16_384, b, 0).unwrap_err();
    assert_eq!(e, SubmitError::TooLong);
    p.close(f);
    let (b, e) = p.read(f, 0, 4096, b, 0).unwrap_err();
    assert_eq!(e, SubmitError::BadFile);
    p.pool().free(b);
    // Two requests fit; a third waits for a completion.
    let (f, _) = p.open(&d.join("f"), false).unwrap();
    for i in 0..2 {
        let b = p.pool().alloc().unwrap();
        p.read(f, 0, 4096, b, i).unwrap();
    }
    let b = p.pool().alloc().unwrap();
    let (b, e) = p.read(f, 0, 4096, b, 2).unwrap_err();
    assert_eq!(e, SubmitError::Busy);
    p.pool().free(b);
    for c in collect(&mut p, 2) {
        p.pool().free(c.buf.unwrap());
    }
    assert_eq!(p.pool_ref().free_count(), 4, "every buffer back");
}

#[test]
fn a_missing_file_and_a_file_system_without_o_direct_get_one_clear_line() {
    let mut p = port(StorageConfig { buffers: 1, buf_size: 4096, max_part: 4096, ..Default::default() });
    let e = p.open(Path::new("/nonexistent/sirocco-storage-test"), false).unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/sirocco-storage-test: No such file"), "{e}");
    // procfs takes no O_DIRECT (tmpfs does since Linux 6.6, so it cannot stand in here).
    let e = p.open(Path::new("/proc/self/status"), false).unwrap_err();
    assert!(matches!(e, StorageError::NoDirect(_)), "{e:?}");
    let line = e.to_string();
    assert!(
        line.starts_with("/proc/self/status: the file system does not support O_DIRECT") && !line.contains('\n'),
        "{line}"
    );
}

#[test]
fn reads_leave_the_page_cache_alone() {
    let d = dir("nocache");
    let path = d.join("big");
    let data = pattern(8 << 20, 5);
    fs::write(&path, &data).unwrap();
    let file = fs::File::open(&path).unwrap();
    file.sync_all().unwrap();
    // Drop the file's pages, then read all of it through the port.
    // SAFETY: posix_fadvise on an fd we own; advice only.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0);
    assert_eq!(resident_pages(&file, data.len()), 0, "dropped");
    let mut p = port(StorageConfig { buffers: 4, buf_size: 1 << 20, ..Default::default() });
    let (f, _) = p.open(&path, false).unwrap();
    for i in 0..8u64 {
        let b = p.pool().alloc().unwrap();
        p.read(f, i << 20, 1 << 20, b, i).unwrap();
        let c = collect(&mut p, 1).pop().unwrap();
        assert_eq!(c.result, Ok(1 << 20));
        p.pool().free(c.buf.unwrap());
    }
    assert_eq!(resident_pages(&file, data.len()), 0, "8 MiB read, none of it cached");
}

/// Pages of the file's first `len` bytes in the page cache (mincore over a mapping).
fn resident_pages(f: &fs::File, len: usize) -> usize {
    // SAFETY: a read-only shared mapping of a file we hold open; unmapped below.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
    assert_ne!(p, libc::MAP_FAILED);
    let mut vec = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `vec` has a byte per page of the mapping.
    let r = unsafe { libc::mincore(p, len, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, len) };
    assert_eq!(r, 0);
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

#[test]
fn align_range_covers_the_wanted_bytes() {
    for (off, len) in [(0u64, 1u64), (4095, 2), (12_345, 100_000), (8192, 4096)] {
        let (a, n, skip) = align_range(off, len);
        assert_eq!(a % DIRECT_ALIGN as u64, 0);
        assert_eq!(n % DIRECT_ALIGN as u64, 0);
        assert_eq!(a + skip as u64, off);
        assert!(a + n >= off + len);
    }
}
