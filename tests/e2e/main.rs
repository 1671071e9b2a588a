//! End-to-end tests: sirocco against the Linux kernel's own stack and real tools, in network
//! namespaces joined by veth, using 198.18.0.0/15 addresses only. They need root.
// The tests reach the kernel directly (setns, raw sockets, signals, rlimits): the one place
// outside the dataplane's own kernel boundary where unsafe is allowed.
#![allow(unsafe_code)]

mod common;

mod capture;
mod check;
mod cli;
mod ctl;
mod dns;
mod dns_catalog;
mod dns_diff;
mod dns_dnssec;
mod dns_reload;
mod dns_rrl;
mod dns_secondary;
mod dns_tcp;
mod dns_xfr;
mod echo;
mod gen;
mod gen_http;
mod inspect;
mod ipv6;
mod kv;
mod lifecycle;
mod malformed;
mod metrics;
mod package;
mod pipeline;
mod store;
mod stream;
mod tcp;
mod tls;
mod web;
mod web_diff;
