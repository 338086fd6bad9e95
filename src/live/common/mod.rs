//! What the rooms of the live wing share, each once, below all of them:
//! byte helpers ([`bytes`]: a search in a byte string, base64), how a
//! user's program's lock key is named or found ([`keys`]), the op-id
//! rule ([`ops`]), the lock servers' common words ([`fact`]: a lock's facts
//! on the one monotonic clock, whichever server told them) and what every
//! lock server's room offers a user-program trial ([`server`]: its account
//! and its connections' decoders, [`wire`]; one account per document,
//! [`documents`]) and its cluster ([`member`]: how each member starts).
//!
//! Nothing here knows a particular server: the Redis, etcd and ZooKeeper
//! rooms ([`super::redis`], [`super::etcd`], [`super::zk`]) import it, it
//! imports none of them.

pub(crate) mod bytes;
pub(crate) mod documents;
pub(crate) mod fact;
pub(crate) mod keys;
pub(crate) mod member;
pub(crate) mod ops;
pub(crate) mod server;
pub(crate) mod wire;
