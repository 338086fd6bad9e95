//! `madsim-lock SCENARIO --seed N [--history FILE]`: one seed of a fencesim
//! scenario under madsim; the history (JSON lines) goes to FILE or stdout,
//! for `fencesim check-history`.

#[cfg(madsim)]
fn main() -> std::process::ExitCode {
    use std::process::ExitCode;
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: madsim-lock SCENARIO --seed N [--history FILE]";
    let (Some(path), Some(seed)) = (
        args.get(1),
        args.iter()
            .position(|a| a == "--seed")
            .and_then(|i| args.get(i + 1))
            .and_then(|s| s.parse::<u64>().ok()),
    ) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let scenario = match fencesim::scenario::load(std::path::Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(what) = madsim_lock::unsupported(&scenario.options) {
        eprintln!("error: {path}: the madsim runner does not support {what}");
        return ExitCode::from(2);
    }
    let history = madsim_lock::run_seed(&scenario.options, seed);
    let mut out: Box<dyn std::io::Write> = match args.iter().position(|a| a == "--history") {
        Some(i) => match args.get(i + 1).map(std::fs::File::create) {
            Some(Ok(f)) => Box::new(f),
            _ => {
                eprintln!("{usage}");
                return ExitCode::from(2);
            }
        },
        None => Box::new(std::io::stdout()),
    };
    if let Err(e) = fencesim::history::jsonl::write(&history, &mut out) {
        eprintln!("error: writing the history: {e}");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("madsim-lock must be built with RUSTFLAGS=\"--cfg madsim\" (use ./run.sh)");
    std::process::exit(2);
}
