//! The grants in force. A flow (address, protocol, port) belongs to one grant at most, and
//! an application name to one grant; a grant ends when it is revoked or its holder goes.

use crate::policy::Policy;
use crate::{Proto, Want};
use std::net::Ipv4Addr;

/// One grant in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Its number (never reused while the daemon runs).
    pub id: u64,
    /// Who holds it.
    pub uid: u32,
    /// What it covers.
    pub want: Want,
}

/// The grants in force.
#[derive(Debug, Default)]
pub struct Grants {
    list: Vec<Grant>,
    next: u64,
}

impl Grants {
    /// Grants `w` to user `uid` (named `user`) if the policy allows it and nothing in force
    /// overlaps it; returns its number, or why not.
    pub fn add(&mut self, policy: &Policy, uid: u32, user: Option<&str>, w: Want) -> Result<u64, String> {
        policy.permits(uid, user, &w)?;
        if let Some(g) = self.list.iter().find(|g| g.want.app == w.app) {
            return Err(format!("an application named '{}' holds grant {} already", w.app, g.id));
        }
        for f in &w.flows {
            let taken = self.list.iter().find(|g| g.want.addr == w.addr && g.want.flows.iter().any(|o| o.overlaps(f)));
            if let Some(g) = taken {
                return Err(format!("{} {f} is granted to '{}' already", w.addr, g.want.app));
            }
        }
        self.next += 1;
        self.list.push(Grant { id: self.next, uid, want: w });
        Ok(self.next)
    }

    /// The grant a flow belongs to.
    pub fn owner(&self, addr: Ipv4Addr, proto: Proto, port: u16) -> Option<&Grant> {
        self.list.iter().find(|g| g.want.addr == addr && g.want.flows.iter().any(|f| f.covers(proto, port)))
    }

    /// Ends the grant of application `app`; returns it.
    pub fn revoke(&mut self, app: &str) -> Option<Grant> {
        let i = self.list.iter().position(|g| g.want.app == app)?;
        Some(self.list.remove(i))
    }

    /// Ends grant `id` (its holder went away); returns it.
    pub fn release(&mut self, id: u64) -> Option<Grant> {
        let i = self.list.iter().position(|g| g.id == id)?;
        Some(self.list.remove(i))
    }

    /// The grants, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Grant> {
        self.list.iter()
    }
}
