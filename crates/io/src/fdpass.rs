//! Passing descriptors between processes over a Unix socket (SCM_RIGHTS): how a control
//! daemon hands an application its AF_XDP sockets and packet memory (Arrakis's control plane
//! giving out virtual NICs). One message carries some bytes and up to [`MAX_FDS`]
//! descriptors; descriptors received are owned by the receiver and closed when dropped.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Most descriptors in one message.
pub const MAX_FDS: usize = 16;

/// Room for the control message of `MAX_FDS` descriptors, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct CmsgBuf([u8; 128]);

/// Sends `data` (not empty) and `fds` in one message.
pub fn send(sock: &UnixStream, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    if data.is_empty() || fds.len() > MAX_FDS {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "a message needs bytes and at most 16 descriptors"));
    }
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    let mut cbuf = CmsgBuf([0; 128]);
    let fd_bytes = std::mem::size_of_val(fds);
    let space = if fds.is_empty() {
        0
    } else {
        // SAFETY: CMSG_SPACE only computes a size.
        let s = unsafe { libc::CMSG_SPACE(fd_bytes as u32) };
        s as usize
    };
    // SAFETY: zero is a valid msghdr; the pointers set below outlive the sendmsg call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = cbuf.0.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer holds `space` bytes (≤ 128 for 16 descriptors), so the
        // first header and its data fit; the header is aligned by CmsgBuf.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(c), fd_bytes);
        }
    }
    // SAFETY: msg points at live buffers of the stated lengths.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != data.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "message sent in part"));
    }
    Ok(())
}

/// Receives one message into `buf`: the bytes' length (0 at end of stream) and the
/// descriptors that came with it.
pub fn recv(sock: &UnixStream, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut cbuf = CmsgBuf([0; 128]);
    // SAFETY: zero is a valid msghdr; the pointers set below outlive the recvmsg call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.0.as_mut_ptr().cast();
    msg.msg_controllen = cbuf.0.len() as _;
    // SAFETY: msg points at live buffers of the stated lengths. MSG_CMSG_CLOEXEC: the
    // descriptors do not leak into programs this one starts.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with well-formed headers up to msg_controllen;
    // CMSG_FIRSTHDR/NXTHDR walk them and stop at the end. Each SCM_RIGHTS descriptor is new
    // in this process and owned by nobody else, so OwnedFd may take it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let len = (*c).cmsg_len as usize - (data as usize - c as usize);
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "more descriptors than a message may carry"));
    }
    Ok((n as usize, fds))
}

/// The user id of the process at the other end of `sock`, as the kernel recorded it when
/// the connection was made (SO_PEERCRED): what a daemon trusts, not what a request says.
pub fn peer_uid(sock: &UnixStream) -> io::Result<u32> {
    // SAFETY: zero is a valid ucred.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a live ucred and `len` its size; the kernel writes at most that.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_pipe_crosses_the_socket_and_works_on_the_other_side() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut r, w) = {
            let mut p = [0; 2];
            // SAFETY: pipe fills two descriptors, owned from here on.
            assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
            // SAFETY: both are new and ours.
            unsafe { (std::fs::File::from_raw_fd(p[0]), std::fs::File::from_raw_fd(p[1])) }
        };
        send(&a, b"grant", &[w.as_raw_fd()]).unwrap();
        drop(w);
        let mut buf = [0u8; 16];
        let (n, mut fds) = recv(&b, &mut buf).unwrap();
        assert_eq!((&buf[..n], fds.len()), (&b"grant"[..], 1));
        let mut w2 = std::fs::File::from(fds.pop().unwrap());
        w2.write_all(b"through").unwrap();
        drop(w2);
        let mut got = String::new();
        r.read_to_string(&mut got).unwrap();
        assert_eq!(got, "through");
    }

    #[test]
    fn plain_messages_and_limits() {
        let (a, b) = UnixStream::pair().unwrap();
        send(&a, b"no fds", &[]).unwrap();
        let mut buf = [0u8; 16];
        let (n, fds) = recv(&b, &mut buf).unwrap();
        assert_eq!((n, fds.len()), (6, 0));
        assert!(send(&a, b"", &[]).is_err());
        assert!(send(&a, b"x", &[0; 17]).is_err());
        // SAFETY: a plain system call.
        assert_eq!(peer_uid(&b).unwrap(), unsafe { libc::getuid() });
        drop(a);
        assert_eq!(recv(&b, &mut buf).unwrap().0, 0, "end of stream");
    }
}
