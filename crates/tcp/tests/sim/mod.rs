//! A deterministic network simulator for sirocco's TCP: several endpoints, a virtual clock,
//! seeded loss, reordering, duplication, corruption, delay, bandwidth limits and MTU changes.
#![allow(dead_code)]

pub mod net;
pub mod rng;
pub mod stream;
