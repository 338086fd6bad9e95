//! `fencesim live` on real servers (Redis, PostgreSQL, etcd, ZooKeeper)
//! and a user's own client program. These tests hold
//! `common::live_exclusive()`: one live run on the machine at a time, and no
//! heavy test beside it — but `docs`, which holds the live reference pages
//! to the code and starts no server.

mod article;
mod cluster_kit;
mod docs;
mod documents;
mod etcd;
mod jobs;
mod library_matrix;
mod phases;
mod reports;
mod search;
mod search_reports;
mod user_client;
mod zk;
