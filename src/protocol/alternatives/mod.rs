//! The article's alternatives to a distributed lock, and what a lock cannot
//! protect: one database owning the state (`single_db`), a queue claim
//! (`queue_claim`), a best-effort cache lease (`cache_lease`), an
//! active/passive pair with STONITH (`active_passive`) and irreversible
//! effects (`effects`); `alt_role` makes them nodes.

pub mod active_passive;
pub mod alt_role;
pub mod cache_lease;
pub mod effects;
pub mod queue_claim;
pub mod single_db;
