//! The store's log: records (sans-IO) now; the group-commit writer on a storage queue and the
//! replay at start come next.

pub mod record;
