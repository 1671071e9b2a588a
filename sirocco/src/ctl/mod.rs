//! `sirocco ctl` (Arrakis's control plane): a daemon that owns an interface and gives each
//! server its own virtual NIC for the flows it was granted ([`daemon`]), and what a server
//! run with `--ctl` does to get one ([`client`]). The rules — policy, grant table, requests —
//! are sans-IO in the `ctl` crate; the kernel programs in `io::ctl_path`.

pub mod client;
pub mod daemon;
mod msg;
mod netns;
mod vnic;
