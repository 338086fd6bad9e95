//! Decoding, inside the TCP proxy, of what a user's unmodified program
//! says to PostgreSQL, so that fencesim can build a history of a program it
//! did not write and that reports nothing. (Each lock server's protocol is
//! decoded in its own room: RESP in [`super::redis`], etcd's gRPC in
//! [`super::etcd`], ZooKeeper's jute in [`super::zk`].)
//!
//! The proxy hands each connection direction's bytes to an observer before
//! it forwards them; the decoders here buffer those chunks and cut them into
//! protocol messages ([`pgwire`]). They only read: the bytes are forwarded
//! unchanged, and a stream that does not decode is still forwarded (its
//! messages are simply not seen).
//!
//! PostgreSQL's frontend stream is cut into messages by one framer
//! ([`pgframe`]), which the built-in mode's proxy also uses to find the
//! UPDATE it holds, drops or cuts: one set of message boundaries for both.

pub mod pgframe;
pub mod pgwire;
