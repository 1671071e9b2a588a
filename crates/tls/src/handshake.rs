//! The handshake, run by rustls (unbuffered API) on the bytes TCP delivers. Records are
//! handed to rustls one at a time, so when the client's Finished completes the handshake
//! rustls has read nothing after it: the application data that follows (often in the same
//! segment) is left for sirocco's record layer, and the traffic secrets come out with
//! record numbers that match.

use crate::config::TlsConfig;
use crate::record::{self, alert, content, Keys};
use rustls::kernel::KernelConnection;
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{ConnectionState, EncodeError, UnbufferedStatus};

/// Most handshake bytes held from the peer before the handshake is given up (rustls takes
/// no handshake message over 64 KiB either).
pub const MAX_PENDING: usize = 64 * 1024;

/// The application traffic keys, when the handshake is done.
pub struct Established {
    /// Keys to seal with.
    pub tx: Keys,
    /// Number of the first record sealed with them.
    pub tx_seq: u64,
    /// Keys to open with.
    pub rx: Keys,
    /// Number of the first record opened with them.
    pub rx_seq: u64,
    /// What derives the next keys on a KeyUpdate.
    pub kernel: KernelConnection<ServerConnectionData>,
    /// The suite's name (for logs and tests).
    pub suite: &'static str,
}

/// What one step of the handshake came to.
pub enum Step {
    /// Waiting for more bytes from the peer.
    More,
    /// Done: the keys; the bytes after the client's Finished are the record layer's.
    Done(Box<Established>),
    /// Failed (the alert rustls wrote, if any, was appended to the output).
    Failed(String),
}

/// One connection's handshake.
pub struct Handshake {
    conn: Option<UnbufferedServerConnection>,
    /// Bytes at the front of the input already handed to rustls.
    fed: usize,
    /// Whether any handshake bytes were written (the ServerHello: alerts after it are
    /// encrypted under keys rustls holds).
    wrote: bool,
}

/// Why the handshake failed, and the alert that says so if rustls queues none.
struct Failure(String, Option<u8>);

impl From<rustls::Error> for Failure {
    fn from(e: rustls::Error) -> Failure {
        use rustls::Error as E;
        let desc = match &e {
            E::InvalidMessage(m) => u8::from(rustls::AlertDescription::from(*m)),
            E::PeerMisbehaved(_) | E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
                alert::UNEXPECTED_MESSAGE
            }
            E::DecryptError => alert::BAD_RECORD_MAC,
            _ => alert::HANDSHAKE_FAILURE,
        };
        Failure(e.to_string(), Some(desc))
    }
}

enum Next {
    Again,
    Read,
    Done,
    Failed(Failure),
}

/// Appends what an `EncodeTlsData` holds to `out`.
fn encode(
    e: &mut rustls::unbuffered::EncodeTlsData<'_, ServerConnectionData>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let start = out.len();
    let mut room = 2048;
    for _ in 0..8 {
        out.resize(start + room, 0);
        match e.encode(&mut out[start..]) {
            Ok(n) => {
                out.truncate(start + n);
                return Ok(());
            }
            Err(EncodeError::InsufficientSize(s)) => room = s.required_size,
            Err(err) => {
                out.truncate(start);
                return Err(err.to_string());
            }
        }
    }
    out.truncate(start);
    Err("handshake record does not fit".into())
}

impl Handshake {
    /// A handshake under `cfg`.
    pub fn new(cfg: &TlsConfig) -> Result<Handshake, rustls::Error> {
        Ok(Handshake { conn: Some(UnbufferedServerConnection::new(cfg.rustls.clone())?), fed: 0, wrote: false })
    }

    /// Runs the handshake on the peer's bytes in `input` (consumed from the front as rustls
    /// is done with them); what is to be sent is appended to `out`.
    pub fn advance(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>) -> Step {
        if self.conn.is_none() {
            return Step::Failed("handshake already over".into());
        }
        // Each pass hands rustls one more record (or, for bytes that are no record, all of
        // them, so it refuses them with the right alert); bounded by the bytes held.
        for _ in 0..input.len() + 2 {
            let next = match record::parse_header(&input[self.fed..]) {
                Some((t, len)) if (content::CHANGE_CIPHER_SPEC..=content::APPLICATION_DATA).contains(&t) => {
                    if input.len() - self.fed < record::HEADER + len {
                        if input.len() > MAX_PENDING {
                            return self.fail(
                                input,
                                out,
                                Failure("handshake too long".into(), Some(alert::DECODE_ERROR)),
                            );
                        }
                        return Step::More;
                    }
                    self.fed + record::HEADER + len
                }
                Some(_) => input.len(),
                None => return Step::More,
            };
            self.fed = next;
            match self.process(input, out) {
                Ok(true) => return self.finish(),
                Ok(false) => {}
                Err(e) => return self.fail(input, out, e),
            }
        }
        Step::More
    }

    /// Drives rustls over the bytes fed so far; true once the handshake is complete.
    fn process(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>) -> Result<bool, Failure> {
        let conn = self.conn.as_mut().expect("live");
        for _ in 0..64 {
            let UnbufferedStatus { discard, state } = conn.process_tls_records(&mut input[..self.fed]);
            let next = match state {
                Ok(ConnectionState::EncodeTlsData(mut e)) => match encode(&mut e, out) {
                    Ok(()) => {
                        self.wrote = true;
                        Next::Again
                    }
                    Err(err) => Next::Failed(Failure(err, Some(alert::INTERNAL_ERROR))),
                },
                Ok(ConnectionState::TransmitTlsData(t)) => {
                    t.done();
                    Next::Again
                }
                Ok(ConnectionState::BlockedHandshake) => Next::Read,
                Ok(ConnectionState::WriteTraffic(_)) => Next::Done,
                Ok(ConnectionState::ReadTraffic(_)) | Ok(ConnectionState::ReadEarlyData(_)) => Next::Failed(Failure(
                    "application data before the handshake finished".into(),
                    Some(alert::UNEXPECTED_MESSAGE),
                )),
                Ok(ConnectionState::PeerClosed) | Ok(ConnectionState::Closed) => {
                    Next::Failed(Failure("peer closed during the handshake".into(), None))
                }
                Ok(_) => Next::Failed(Failure("unexpected handshake state".into(), Some(alert::INTERNAL_ERROR))),
                Err(e) => Next::Failed(e.into()),
            };
            input.drain(..discard);
            self.fed -= discard;
            match next {
                Next::Again => {}
                Next::Read => return Ok(false),
                // The server may write after its own Finished; the handshake is over only
                // once the client's Finished is in.
                Next::Done if conn.is_handshaking() => return Ok(false),
                Next::Done => return Ok(true),
                Next::Failed(e) => return Err(e),
            }
        }
        Err(Failure("handshake made no progress".into(), Some(alert::INTERNAL_ERROR)))
    }

    /// Appends the alert rustls queued for its error, if any. rustls is given the same bytes
    /// as before: its deframer may still point into them. rustls queues none for some
    /// errors (a record interleaved with a fragmented handshake message, say); before the
    /// ServerHello the alert is plaintext and sirocco writes it (RFC 8446 §6.2), after it
    /// the alert would need rustls's handshake keys and the connection ends without one.
    fn fail(&mut self, input: &mut [u8], out: &mut Vec<u8>, why: Failure) -> Step {
        let fed = self.fed.min(input.len());
        let before = out.len();
        if let Some(conn) = self.conn.as_mut() {
            // Once only: the alert, if queued, comes first; a second call would parse the
            // bytes again.
            let UnbufferedStatus { state, .. } = conn.process_tls_records(&mut input[..fed]);
            if let Ok(ConnectionState::EncodeTlsData(mut e)) = state {
                let _ = encode(&mut e, out);
            }
        }
        if let (true, false, Some(desc)) = (out.len() == before, self.wrote, why.1) {
            out.extend_from_slice(&[content::ALERT, 3, 3, 0, 2, 2, desc]);
        }
        self.conn = None;
        Step::Failed(why.0)
    }

    fn finish(&mut self) -> Step {
        let conn = self.conn.take().expect("live");
        let suite = conn.negotiated_cipher_suite().map_or("?", |s| s.suite().as_str().unwrap_or("?"));
        let (secrets, kernel) = match conn.dangerous_into_kernel_connection() {
            Ok(x) => x,
            Err(e) => return Step::Failed(format!("cannot take the traffic keys: {e}")),
        };
        let (tx_seq, tx) = secrets.tx;
        let (rx_seq, rx) = secrets.rx;
        let (Some(tx), Some(rx)) = (Keys::from_secrets(&tx), Keys::from_secrets(&rx)) else {
            return Step::Failed("negotiated a suite the record layer does not have".into());
        };
        Step::Done(Box::new(Established { tx, tx_seq, rx, rx_seq, kernel, suite }))
    }

    /// Bytes of the input that rustls has seen but not released (the record layer takes
    /// over after them).
    pub fn fed(&self) -> usize {
        self.fed
    }
}
