//! Thin, safe wrappers over the system calls the I/O layer needs. Every `unsafe` block of the
//! AF_XDP path that is not about ring memory lives here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub const AF_XDP: i32 = 44;
pub const SOL_XDP: i32 = 283;

pub const XDP_MMAP_OFFSETS: i32 = 1;
pub const XDP_RX_RING: i32 = 2;
pub const XDP_TX_RING: i32 = 3;
pub const XDP_UMEM_REG: i32 = 4;
pub const XDP_UMEM_FILL_RING: i32 = 5;
pub const XDP_UMEM_COMPLETION_RING: i32 = 6;
pub const XDP_STATISTICS: i32 = 7;
/// Descriptors a copy-mode sendto may transmit (Linux 6.17+; 32 before, and by default).
pub const XDP_MAX_TX_SKB_BUDGET: i32 = 9;

pub const XDP_COPY: u16 = 1 << 1;
pub const XDP_ZEROCOPY: u16 = 1 << 2;
pub const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
pub const XDP_USE_SG: u16 = 1 << 4;
pub const XDP_UMEM_UNALIGNED_CHUNK_FLAG: u32 = 1;
/// `options` of a TX/RX descriptor: the packet goes on in the next descriptor.
pub const XDP_PKT_CONTD: u32 = 1;
/// `flags` of `xdp_umem_reg`: `tx_metadata_len` is meant (Linux 6.11+ wants it said).
pub const XDP_UMEM_TX_METADATA_LEN: u32 = 1 << 2;
/// `options` of a TX descriptor: metadata sits in the `tx_metadata_len` bytes before `addr`.
pub const XDP_TX_METADATA: u32 = 1 << 1;
/// `struct xsk_tx_metadata` flag: finish the checksum from `csum_start` (CHECKSUM_PARTIAL).
pub const XDP_TXMD_FLAGS_CHECKSUM: u64 = 1 << 1;

/// Size of `struct xsk_tx_metadata`: u64 flags, then (request) u16 csum_start, u16
/// csum_offset and u64 launch_time, 8-aligned.
pub const TX_METADATA_LEN: u32 = 24;

/// In unaligned mode an RX address carries the data's offset in its top 16 bits.
pub const XSK_UNALIGNED_BUF_OFFSET_SHIFT: u32 = 48;

pub const XDP_RING_NEED_WAKEUP: u32 = 1;

pub const XDP_PGOFF_RX_RING: i64 = 0;
pub const XDP_PGOFF_TX_RING: i64 = 0x8000_0000;
pub const XDP_UMEM_PGOFF_FILL_RING: i64 = 0x1_0000_0000;
pub const XDP_UMEM_PGOFF_COMPLETION_RING: i64 = 0x1_8000_0000;

/// `struct xdp_umem_reg` (the 32-byte layout; older kernels read the prefix they know).
#[repr(C)]
#[derive(Default)]
pub struct UmemReg {
    pub addr: u64,
    pub len: u64,
    pub chunk_size: u32,
    pub headroom: u32,
    pub flags: u32,
    pub tx_metadata_len: u32,
}

/// `struct xdp_ring_offset`.
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct RingOffset {
    pub producer: u64,
    pub consumer: u64,
    pub desc: u64,
    pub flags: u64,
}

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct MmapOffsets {
    pub rx: RingOffset,
    pub tx: RingOffset,
    pub fr: RingOffset,
    pub cr: RingOffset,
}

/// `struct xdp_desc`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct XdpDesc {
    pub addr: u64,
    pub len: u32,
    pub options: u32,
}

/// `struct xdp_statistics`.
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct XdpStatistics {
    /// Frames dropped for reasons other than the two below (e.g. no UMEM room).
    pub rx_dropped: u64,
    /// Frames with an invalid RX descriptor.
    pub rx_invalid_descs: u64,
    /// Invalid TX descriptors.
    pub tx_invalid_descs: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Times the fill ring was empty when a frame arrived.
    pub rx_fill_ring_empty_descs: u64,
    /// Times the TX ring was empty when the kernel looked.
    pub tx_ring_empty_descs: u64,
}

/// `struct sockaddr_xdp`.
#[repr(C)]
struct SockaddrXdp {
    family: u16,
    flags: u16,
    ifindex: u32,
    queue_id: u32,
    shared_umem_fd: u32,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Opens an AF_XDP socket.
pub fn xsk_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call; on success the returned descriptor is ours alone.
    let fd = check(unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens a netlink socket of `protocol` (`NETLINK_GENERIC`, ...) whose receives give up after
/// a second: the kernel answers a request at once, so a longer wait means none is coming.
pub fn netlink_socket(protocol: i32) -> io::Result<OwnedFd> {
    // SAFETY: plain system call; on success the returned descriptor is ours alone.
    let fd = check(unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let limit = libc::timeval { tv_sec: 1, tv_usec: 0 };
    // SAFETY: `limit` is a live timeval and we pass its size.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &limit as *const libc::timeval as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// `send(fd, buf)`: the bytes the kernel took.
pub fn send_bytes(fd: &OwnedFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is live for its length.
    let r = unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr() as *const libc::c_void, buf.len(), 0) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// `recv(fd, buf)`: the bytes received into `buf`.
pub fn recv_bytes(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is live and writable for its length.
    let r = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// `setsockopt(SOL_XDP, opt, &val)`.
pub fn set_opt<T>(fd: &OwnedFd, opt: i32, val: &T) -> io::Result<()> {
    // SAFETY: `val` points to a live `T` of the size we pass.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            opt,
            val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// `getsockopt(SOL_XDP, opt)` into a default-initialised `T`.
pub fn get_opt<T: Default>(fd: &OwnedFd, opt: i32) -> io::Result<T> {
    let mut v = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `v` is a live `T`; the kernel writes at most `len` bytes into it.
    check(unsafe { libc::getsockopt(fd.as_raw_fd(), SOL_XDP, opt, &mut v as *mut T as *mut libc::c_void, &mut len) })?;
    Ok(v)
}

/// Binds an AF_XDP socket to (ifindex, queue).
pub fn xsk_bind(fd: &OwnedFd, ifindex: u32, queue: u32, flags: u16) -> io::Result<()> {
    let sa = SockaddrXdp { family: AF_XDP as u16, flags, ifindex, queue_id: queue, shared_umem_fd: 0 };
    // SAFETY: `sa` is a valid sockaddr_xdp and we pass its exact size.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sa as *const SockaddrXdp as *const libc::sockaddr,
            std::mem::size_of::<SockaddrXdp>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Maps `len` bytes of a socket's ring at page offset `off`, shared with the kernel.
pub fn mmap_ring(fd: &OwnedFd, len: usize, off: i64) -> io::Result<*mut u8> {
    // SAFETY: asks the kernel for a new shared mapping; we check the result before use.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            off,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

/// Maps anonymous memory, trying 2 MB hugepages first; returns the pointer and whether
/// hugepages were used.
pub fn mmap_anon(len: usize) -> io::Result<(*mut u8, bool)> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE;
    // SAFETY: new anonymous mapping; checked before use.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags | libc::MAP_HUGETLB, -1, 0) };
    if p != libc::MAP_FAILED {
        return Ok((p as *mut u8, true));
    }
    Ok((mmap_anon_thp(len)?, false))
}

const HUGE: usize = 2 << 20;

/// Anonymous memory on 2 MB boundaries, asked for transparent hugepages before it is touched:
/// with none reserved, a UMEM on 4 KiB pages costs a TLB miss on nearly every frame (a
/// profile of the echo under a flood had most of sirocco's own time on the first read of a
/// frame). Where THP is off it is ordinary memory; [`anon_huge_bytes`] says which it got.
fn mmap_anon_thp(len: usize) -> io::Result<*mut u8> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let over = len + HUGE;
    // SAFETY: new anonymous mapping; checked before use.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), over, prot, flags, -1, 0) };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let head = (p as usize).next_multiple_of(HUGE) - p as usize;
    let start = (p as usize + head) as *mut u8;
    // SAFETY: both ranges lie inside the mapping just made, which nothing uses yet; what
    // stays is `len` bytes from a 2 MB boundary.
    unsafe {
        if head > 0 {
            libc::munmap(p, head);
        }
        if over - head > len {
            libc::munmap(start.add(len) as *mut libc::c_void, over - head - len);
        }
    }
    // SAFETY: advice on our own fresh range; a kernel without THP refuses it, which is fine.
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    // Fault it all in now, as MAP_POPULATE would have (after the advice, so the faults take
    // hugepages), with writes since a read fault maps the shared zero page; before 5.14
    // there is no MADV_POPULATE_WRITE and the pages are touched one by one.
    // SAFETY: as above.
    if unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) } != 0 {
        for off in (0..len).step_by(4096) {
            // SAFETY: inside our mapping, which nothing else references yet.
            unsafe { start.add(off).write_volatile(0) };
        }
    }
    Ok(start)
}

/// Bytes of the anonymous mapping at `p` that transparent hugepages back (from
/// /proc/self/smaps; 0 if it cannot be read).
pub fn anon_huge_bytes(p: *const u8) -> usize {
    std::fs::read_to_string("/proc/self/smaps").map_or(0, |s| anon_huge_in(&s, p as usize))
}

/// The AnonHugePages of the mapping that holds address `at`, in bytes, from smaps text.
fn anon_huge_in(smaps: &str, at: usize) -> usize {
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = a <= at && at < b;
                continue;
            }
        }
        if inside {
            if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                return kb.trim().trim_end_matches("kB").trim().parse::<usize>().unwrap_or(0) << 10;
            }
        }
    }
    0
}

/// Makes a memory file of `len` bytes (on 2 MB hugepages when reserved) and maps it shared;
/// returns the file, the pointer and whether hugepages back it. Another process that
/// receives the file maps the same pages (a UMEM a daemon registered for an application).
pub fn memfd_shared(name: &str, len: usize) -> io::Result<(OwnedFd, *mut u8, bool)> {
    let cname = std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    for huge in [true, false] {
        let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING | if huge { libc::MFD_HUGETLB } else { 0 };
        // SAFETY: plain system call with a NUL-terminated name; the descriptor is ours alone.
        let fd = unsafe { libc::memfd_create(cname.as_ptr(), flags) };
        if fd < 0 {
            continue;
        }
        // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: resizing our own memory file.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } < 0 {
            continue;
        }
        // The size is final: whoever receives the file may neither shrink it under the
        // kernel's registration nor grow it.
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on our own descriptor with integer arguments.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
            continue;
        }
        match mmap_file(&fd, len) {
            Ok(p) => return Ok((fd, p, huge)),
            Err(_) if huge => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::last_os_error())
}

/// Maps `len` bytes of a memory file, shared, populated.
pub fn mmap_file(fd: &OwnedFd, len: usize) -> io::Result<*mut u8> {
    // A ring and a memory file map alike: shared, read-write, populated.
    mmap_ring(fd, len, 0)
}

/// Size of the file behind `fd`.
pub fn file_len(fd: &OwnedFd) -> io::Result<usize> {
    // SAFETY: zero is a valid stat buffer, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a live stat buffer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st.st_size as usize)
}

/// Moves the calling thread (only) into a new network namespace.
pub fn unshare_net() -> io::Result<()> {
    // SAFETY: plain system call; it changes only the calling thread's namespaces.
    check(unsafe { libc::unshare(libc::CLONE_NEWNET) }).map(|_| ())
}

/// Moves the calling thread into the network namespace `ns` names.
pub fn setns_net(ns: &OwnedFd) -> io::Result<()> {
    // SAFETY: plain system call on a descriptor we own; it changes only the calling thread.
    check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

/// Gives the heap's free pages back to the kernel. After a large build (a million-name zone
/// compiled: the parsed zone and the compiler's scratch freed) the allocator keeps what was
/// freed mapped, and the process stays at its peak size — several times what it holds.
pub fn release_free_memory() {
    // SAFETY: malloc_trim only returns unused pages of glibc's heap to the kernel; it takes
    // no pointer and leaves every live allocation where it is.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Lets the calling thread run only when nothing else wants its CPU (SCHED_IDLE): work that
/// may wait, such as freeing a parsed zone, then never takes an engine's turns.
pub fn run_only_when_idle() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain system call on the calling thread (0) with a parameter block we own.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) }).map(|_| ())
}

/// The calling thread's id (gettid).
pub fn thread_id() -> u32 {
    // SAFETY: plain system call without arguments.
    unsafe { libc::gettid() as u32 }
}

/// Unmaps a mapping made by one of the functions above.
///
/// # Safety
/// `p` and `len` must describe one whole live mapping that nothing uses any more.
pub unsafe fn munmap(p: *mut u8, len: usize) {
    // SAFETY: the caller promises the mapping is ours and dead.
    unsafe { libc::munmap(p as *mut libc::c_void, len) };
}

/// Asks the kernel to transmit what is on the TX ring. Returns the error number, if any.
pub fn kick_tx(fd: RawFd) -> Option<i32> {
    // SAFETY: a zero-length sendto with no buffer and no address is the documented AF_XDP kick.
    let r = unsafe { libc::sendto(fd, std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
    (r < 0).then(|| io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// Wakes the kernel to consume the fill ring (drivers that need it).
/// `SOL_SOCKET` options of busy polling (Linux 5.11+ for the last two).
pub const SO_BUSY_POLL: i32 = 46;
pub const SO_PREFER_BUSY_POLL: i32 = 69;
pub const SO_BUSY_POLL_BUDGET: i32 = 70;

/// Sets the `SOL_SOCKET` option `opt` to `val` on `fd`.
pub fn set_socket_int(fd: &OwnedFd, opt: i32, val: i32) -> io::Result<()> {
    // SAFETY: `val` is a live i32 and we pass its size.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            &val as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

pub fn kick_rx(fd: RawFd) {
    // SAFETY: zero-length recvfrom with no buffer is the documented AF_XDP fill-ring wakeup.
    unsafe {
        libc::recvfrom(fd, std::ptr::null_mut(), 0, libc::MSG_DONTWAIT, std::ptr::null_mut(), std::ptr::null_mut())
    };
}

/// poll() on one descriptor for input.
pub fn poll_in(fd: RawFd, timeout_ms: i32) {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, timeout_ms) };
}

/// ppoll() on one descriptor for input, for at most `timeout_us` microseconds.
pub fn ppoll_in(fd: RawFd, timeout_us: u32) {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec {
        tv_sec: libc::time_t::from(timeout_us / 1_000_000),
        tv_nsec: libc::c_long::from(timeout_us % 1_000_000) * 1000,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
}

/// The index of a network interface, or None if it does not exist.
pub fn if_index(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// `struct ethtool_drvinfo` (linux/ethtool.h), as `ETHTOOL_GDRVINFO` fills it.
#[repr(C)]
#[derive(Default)]
struct EthtoolDrvinfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

const ETHTOOL_GDRVINFO: u32 = 3;

/// The name of the driver behind interface `name` ("veth", "ice", ...), as `ethtool -i` gives
/// it; None if there is no such interface or it does not say.
pub fn if_driver(name: &str) -> Option<String> {
    if name.len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: plain system call; on success the returned descriptor is ours alone.
    let fd = check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) }).ok()?;
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut info = EthtoolDrvinfo { cmd: ETHTOOL_GDRVINFO, ..Default::default() };
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, &b) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
        *d = b as libc::c_char;
    }
    req.ifr_ifru.ifru_data = (&mut info as *mut EthtoolDrvinfo).cast();
    // SAFETY: `req` names the interface (NUL-terminated: shorter than IFNAMSIZ, zeroed) and
    // points at `info`, which lives across the call and is the size ETHTOOL_GDRVINFO writes.
    check(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut req) }).ok()?;
    let end = info.driver.iter().position(|&b| b == 0).unwrap_or(info.driver.len());
    Some(String::from_utf8_lossy(&info.driver[..end]).into_owned())
}

/// The CPUs the calling thread may run on (its affinity: taskset, cgroup cpusets), ascending.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid set of the size we pass, filled for the calling thread (pid 0).
    check(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: CPU_ISSET reads within `set` for every cpu < CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes within `set` for cpu < CPU_SETSIZE, which we check.
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "cpu number too large"));
    }
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: valid set of the size we pass, for the calling thread (pid 0).
    check(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) }).map(|_| ())
}

/// True if the process runs with effective uid 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// An interface's IPv4 and IPv6 addresses, as bytes in network order.
pub type Addrs = (Vec<[u8; 4]>, Vec<[u8; 16]>);

/// The kernel's addresses on `iface`: IPv4 and IPv6.
pub fn ip_addrs(iface: &str) -> io::Result<Addrs> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below.
    check(unsafe { libc::getifaddrs(&mut head) })?;
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list the kernel gave us, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        // SAFETY: ifa_name is a NUL-terminated string in the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        if name.to_bytes() == iface.as_bytes() && !ifa.ifa_addr.is_null() {
            // SAFETY: non-null sockaddr in the list; we read its family first.
            let fam = unsafe { (*ifa.ifa_addr).sa_family } as i32;
            if fam == libc::AF_INET {
                // SAFETY: AF_INET addresses are sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                v4.push(sin.sin_addr.s_addr.to_ne_bytes());
            } else if fam == libc::AF_INET6 {
                // SAFETY: AF_INET6 addresses are sockaddr_in6.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                v6.push(sin6.sin6_addr.s6_addr);
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: frees the list getifaddrs made; nothing points into it any more.
    unsafe { libc::freeifaddrs(head) };
    Ok((v4, v6))
}

/// poll() on two descriptors for input, for at most `timeout_ms`.
pub fn poll_in2(a: RawFd, b: RawFd, timeout_ms: i32) {
    let mut p = [
        libc::pollfd { fd: a, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: b, events: libc::POLLIN, revents: 0 },
    ];
    // SAFETY: two valid pollfds in one array of that length.
    unsafe { libc::poll(p.as_mut_ptr(), 2, timeout_ms) };
}

/// ppoll() on up to 16 descriptors for input, for at most `timeout_us` microseconds.
pub fn ppoll_in_many(fds: &[RawFd], timeout_us: u32) {
    let mut p = [libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; 16];
    let n = fds.len().min(p.len());
    for (slot, &fd) in p.iter_mut().zip(&fds[..n]) {
        slot.fd = fd;
    }
    let ts = libc::timespec {
        tv_sec: libc::time_t::from(timeout_us / 1_000_000),
        tv_nsec: libc::c_long::from(timeout_us % 1_000_000) * 1000,
    };
    // SAFETY: `n` valid pollfds at the start of the array, a valid timespec, no signal mask.
    unsafe { libc::ppoll(p.as_mut_ptr(), n as libc::nfds_t, &ts, std::ptr::null()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interfaces_without_a_driver_to_name_have_none() {
        // Loopback exists in every network namespace and has no driver to name (ethtool -i
        // says "not supported"); a veth's is checked end to end (tests/e2e/dns.rs).
        assert_eq!(if_driver("lo"), None);
        assert_eq!(if_driver("sirocco-none0"), None);
        assert_eq!(if_driver(&"x".repeat(40)), None);
    }

    #[test]
    fn transparent_hugepages_of_a_mapping_are_read_from_its_own_smaps_entry() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0 
Size:               4096 kB
AnonHugePages:      2048 kB
7f0000400000-7f0000c00000 rw-p 00000000 00:00 0 
Size:               8192 kB
AnonHugePages:      8192 kB
Locked:                0 kB
";
        assert_eq!(anon_huge_in(smaps, 0x7f0000000000), 2 << 20);
        assert_eq!(anon_huge_in(smaps, 0x7f00003fffff), 2 << 20);
        assert_eq!(anon_huge_in(smaps, 0x7f0000400000), 8 << 20);
        assert_eq!(anon_huge_in(smaps, 0x7f0000c00000), 0, "outside every mapping");
        assert_eq!(anon_huge_in("garbage\n", 1), 0);
    }

    #[test]
    fn anonymous_arenas_start_on_a_2mb_boundary_zeroed_and_writable() {
        let len = 6 << 20;
        let (p, _) = mmap_anon(len).expect("map");
        assert_eq!(p as usize % (2 << 20), 0);
        // SAFETY: the mapping is ours, `len` bytes long, and unmapped below.
        unsafe {
            let s = std::slice::from_raw_parts_mut(p, len);
            assert!(s.iter().step_by(4096).all(|&b| b == 0));
            s[len - 1] = 7;
            assert_eq!(s[len - 1], 7);
            munmap(p, len);
        }
    }
}
