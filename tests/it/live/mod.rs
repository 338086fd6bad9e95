//! `fencesim live` on real servers (Redis, PostgreSQL, etcd, ZooKeeper)
//! and a user's own client program. These tests hold
//! `common::live_shared()`: at most two live runs on the machine at a time
//! (each its own servers, ports and directories), and no heavy test beside
//! them; the few whose checks judge every process on the machine hold
//! `common::live_exclusive()` — and `docs`, which holds the live reference
//! pages to the code and starts no server, holds neither.

mod article;
mod cluster_kit;
mod docs;
mod documents;
mod etcd;
mod from_code;
mod jobs;
mod library_matrix;
mod phases;
mod reports;
mod search;
mod search_reports;
mod trial_end;
mod user_client;
mod zk;
