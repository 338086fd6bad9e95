//! Exit codes: how a verdict leaves the process. They are data the sweep
//! and `validate`'s shard merge decide (a scenario met its expectation or
//! not, an implementation misbehaved), so they live below `cli/`, which only
//! returns them.

/// Every expectation met.
pub const EXIT_OK: u8 = 0;
/// An expectation not met (a violation, a failed assertion, a vacuous run).
pub const EXIT_FAILED: u8 = 1;
/// The input was refused (a bad file, flag or value).
pub const EXIT_BAD_INPUT: u8 = 2;
/// An implementation error (a panic, a misbehaving process under test).
pub const EXIT_INTERNAL: u8 = 3;
