//! What people read: the suite table, the replay text (options, timeline,
//! trace, violations with evidence, hash) and check-history output.

pub mod replay;
pub mod table;
pub mod timeline;
