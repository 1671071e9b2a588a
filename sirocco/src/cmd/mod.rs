//! One file per command: its options, its application, its summary. The shared steps live in
//! `serve` (servers) and `dataplane` (everything that runs engines).

pub mod ctl;
pub mod dns;
pub mod echo;
pub mod gen;
pub mod kv;
pub mod pipeline;
pub mod ss;
pub mod store;
pub mod testnet;
pub mod top;
pub mod web;
