//! The Redis protocol, RESP2, sans-IO: [`request`] reads commands from the bytes a client sent
//! (multibulk `*N\r\n$len\r\n...` and inline `SET k v\r\n`), exactly as Redis 7 reads them —
//! the same limits, the same protocol errors; [`reply`] writes the answers; [`num`] reads
//! integers and expiry times by Redis's rules (`string2ll`). Nothing here touches a socket, and
//! no input, however malformed, makes it panic.

pub mod float;
pub mod long_double;
pub mod num;
pub mod reply;
pub mod request;

pub use request::{Args, Parsed, Parser};
