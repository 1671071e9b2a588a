//! Replication with Redis, both ways. As a primary: a Redis replica (`REPLICAOF host port`)
//! gets a full sync — an RDB file of the keyspace — then the stream of every later change as
//! Redis commands; after a broken link it continues from the backlog (PSYNC). As a replica
//! (`--replicaof`): the store loads its Redis primary's file and runs its stream ([`follow`]).

pub mod feed;
pub mod follow;
pub mod load;
pub mod rdb;
pub mod stream;
