//! Sans-IO HTTP/1.1 (RFC 9110, RFC 9112) for a static-content server: a total request parser
//! with limits (request line, header block, header count), dates (IMF-fixdate out; the three
//! formats of RFC 9110 §5.6.7 in), single byte ranges, percent-decoded paths that cannot leave
//! the root, content types, and response heads. Nothing here reads a clock or does I/O.

pub mod date;
pub mod mime;
pub mod path;
pub mod range;
pub mod request;
pub mod response;

pub use request::{parse, Method, Parsed, Reject, Request};
