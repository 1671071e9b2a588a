//! Namestorm on sirocco: zones compiled into ready responses at load time; per query only
//! parse, look up, copy and patch.

pub mod catalog_zone;
pub mod compile;
pub mod cookies;
pub mod driver;
pub mod hashed_ahead;
pub mod message;
pub mod notify;
pub mod nsec3;
pub mod owners;
pub mod rdatas;
pub mod report;
pub mod resolve;
pub mod rrl;
pub mod secondary;
pub mod server;
pub mod sets;
pub mod tcp;
pub mod transfer;
pub mod wall;
pub mod zone;
pub mod zones;

pub use compile::{Catalog, CompiledZone};
pub use dns::{tsig, KeyMode};
pub use server::DnsServer;
pub use tcp::{DnsService, DnsTcp};
