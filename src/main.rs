//! `fencesim`: parse, call the library, map the verdict to an exit code.

use std::process::ExitCode;

use clap::Parser;
use fencesim::cli::{self, args::Cli};

fn main() -> ExitCode {
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
