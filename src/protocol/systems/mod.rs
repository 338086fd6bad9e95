//! Real lock systems in which the *client* decides it holds the lock:
//! ZooKeeper's recipe, etcd's Mutex, Redlock and the DynamoDB lock client,
//! each one file with its server and client halves, over the shared client
//! base (`client`) that plugs them into the worker.

pub mod base;
pub mod client;
pub mod dynamodb;
pub mod etcd;
pub mod redlock;
pub mod zookeeper;
