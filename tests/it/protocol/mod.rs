//! Each protocol of the catalogue against the claim the article or its
//! source makes about it.

mod alternatives_effects;
mod alternatives_table;
mod catalogue;
mod dynamodb;
mod etcd;
mod multi_lock;
mod pair;
mod redlock;
mod safe;
mod wings;
mod zk;
