//! Exit codes: how a verdict leaves the process. They are data the sweep
//! and `validate`'s shard merge decide (a scenario met its expectation or
//! not, an implementation misbehaved), so they live below `cli/`, which only
//! returns them. [`Verdict::code`] is the one mapping (the README's
//! exit-code table); the `EXIT_*` constants are its values.

/// What a command concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every expectation met (a history or search: nothing found).
    Met,
    /// An expectation not met (a violation, a failed assertion, a vacuous run).
    Failed,
    /// The input was refused (a bad file, flag or value).
    BadInput,
    /// An implementation error: fencesim or a process under test broke (a
    /// panic, a run that ran differently twice, a broken wire protocol).
    ImplementationError,
    /// Ctrl-C stopped a search: no verdict (128 + SIGINT, as a shell says).
    Interrupted,
}

impl Verdict {
    pub const fn met_if(met: bool) -> Verdict {
        if met {
            Verdict::Met
        } else {
            Verdict::Failed
        }
    }

    pub const fn code(self) -> u8 {
        match self {
            Verdict::Met => 0,
            Verdict::Failed => 1,
            Verdict::BadInput => 2,
            Verdict::ImplementationError => 3,
            Verdict::Interrupted => 130,
        }
    }
}

impl From<Verdict> for std::process::ExitCode {
    fn from(v: Verdict) -> std::process::ExitCode {
        std::process::ExitCode::from(v.code())
    }
}

pub const EXIT_OK: u8 = Verdict::Met.code();
pub const EXIT_FAILED: u8 = Verdict::Failed.code();
pub const EXIT_BAD_INPUT: u8 = Verdict::BadInput.code();
pub const EXIT_INTERNAL: u8 = Verdict::ImplementationError.code();
pub const EXIT_INTERRUPTED: u8 = Verdict::Interrupted.code();
