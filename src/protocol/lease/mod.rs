//! The article's lease lock: the lease server that grants tokens
//! (`coordinator`), the resource that may enforce them (`resource`) and the
//! worker's read-modify-write loop under a lease (`worker`), which every
//! other wing's clients plug into.

pub mod coordinator;
pub mod resource;
pub mod worker;
