//! `fencesim validate`: external implementations, in process or as
//! processes speaking JSON lines, and what a misbehaving one gets.

mod careless;
mod claims;
mod inprocess;
mod misbehaviour;
mod python;
