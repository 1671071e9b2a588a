//! Namestorm on sirocco: zones compiled into ready responses at load time; per query only
//! parse, look up, copy and patch.

pub mod zone;
