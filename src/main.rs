//! `fencesim`: parse, call the library, map the verdict to an exit code.

use std::process::ExitCode;

use clap::Parser;
use fencesim::cli::{self, args::Cli};

fn main() -> ExitCode {
    // `fencesim run … | head` should end quietly when the reader goes away,
    // as other command-line tools do, not panic on a broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let parsed = match Cli::try_parse() {
        Ok(p) => p,
        Err(e) => {
            let code = if e.use_stderr() {
                cli::EXIT_BAD_INPUT
            } else {
                cli::EXIT_OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli::run(parsed) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(cli::EXIT_BAD_INPUT)
        }
    }
}
