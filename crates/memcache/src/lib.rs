//! The memcached protocols, sans-IO: [`text`] (the classic commands and the line framing),
//! [`meta`] (the meta commands), [`binary`] (the binary protocol's framing). Parsers take the
//! bytes received so far and say what they hold; they never read or write a socket, and every
//! input, however malformed, gets an answer rather than a panic.

pub mod binary;
pub mod meta;
mod num;
pub mod text;

/// The longest key.
pub const MAX_KEY: usize = 250;

pub use num::{i32_token, u32_token, u64_token};
