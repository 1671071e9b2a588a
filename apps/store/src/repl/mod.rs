//! Replication: sirocco store as a Redis primary. A Redis replica (`REPLICAOF host port`)
//! gets a full sync — an RDB file of the keyspace — then the stream of every later change as
//! Redis commands; after a broken link it continues from the backlog (PSYNC).

pub mod feed;
pub mod rdb;
pub mod stream;
