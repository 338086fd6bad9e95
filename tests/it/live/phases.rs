//! `fencesim live --verbose`: each trial line is followed by where its time
//! went, phase by phase, and the phases add up to the trial's wall time
//! (docs/live-running.md, "Where a live trial's time goes").

use crate::common::{live_servers_present, live_shared};

const PHASES: [&str; 10] = [
    "start", "reset", "spawn", "run", "fault", "settle", "tail", "audit", "check", "other",
];

/// The ms figure that follows `name ` in `line` (`… reset 12.3 ms …`).
fn ms_after(line: &str, name: &str) -> f64 {
    let at = line
        .find(&format!(" {name} "))
        .unwrap_or_else(|| panic!("no `{name}` in {line:?}"));
    let rest = &line[at + name.len() + 2..];
    let number = rest.split_whitespace().next().unwrap_or("");
    assert!(
        rest[number.len()..].starts_with(" ms"),
        "`{name}` not in ms: {line:?}"
    );
    number
        .parse()
        .unwrap_or_else(|_| panic!("`{name}` has no number: {line:?}"))
}

#[test]
fn verbose_prints_every_phase_and_they_add_up_to_the_trial() {
    if !live_servers_present("live --verbose phase breakdown") {
        return;
    }
    let _serial = live_shared();
    let out_dir = std::env::temp_dir().join(format!("fencesim-live-phases-{}", std::process::id()));
    let out = crate::common::fencesim_command()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["live", "live/gc-pause-fenced-update.toml", "--trials", "1"])
        .arg("--verbose")
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("run fencesim live");
    let _ = std::fs::remove_dir_all(&out_dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A verdict either way (a live trial may miss its fence rejection); never bad input or no verdict.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let k = lines
        .iter()
        .position(|l| l.trim_start().starts_with("trial 1/1:"))
        .unwrap_or_else(|| panic!("no trial line:\n{stdout}"));
    let trial_ms: f64 = lines[k]
        .rsplit(" — ")
        .next()
        .and_then(|t| t.strip_suffix(" ms"))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no wall time on {:?}", lines[k]));
    let phases = lines
        .get(k + 1)
        .copied()
        .filter(|l| l.trim_start().starts_with("phases:"))
        .unwrap_or_else(|| panic!("no phases line under the trial line:\n{stdout}"));
    let line = phases.replace(" · ", " ");
    let sum: f64 = PHASES.iter().map(|p| ms_after(&line, p)).sum();
    let wall = ms_after(&line, "(wall");
    // The trial line floors its ms; each phase is rounded to 0.1 ms.
    assert!(
        (wall - trial_ms).abs() < 1.5,
        "wall {wall} vs trial {trial_ms}: {phases}"
    );
    assert!(
        (sum - trial_ms).abs() < 3.0,
        "phases sum to {sum} ms, the trial took {trial_ms} ms: {phases}"
    );
    // The scenario pauses worker A until B's operation ended: the fault
    // phase holds the pause, from its strike to its end, as the trial
    // line gives them.
    let trial = lines[k];
    let struck = ms_after(trial, "for 2000 ms at");
    let ended = ms_after(trial, "worker/A's pause ends at");
    assert!(ended > struck, "{trial}");
    assert!(
        ms_after(&line, "fault") >= ended - struck - 1.0,
        "{phases}\n{trial}"
    );
    assert!(ms_after(&line, "spawn") > 0.0, "{phases}");
    assert!(ms_after(&line, "reset") > 0.0, "{phases}");
    // The totals: after the scenario and at the end, every phase with ms and %.
    for what in ["scenario live-gc-pause-fenced-update", "all 1 scenario(s)"] {
        let at = lines
            .iter()
            .position(|l| l.contains(&format!("time by phase, {what} (1 trial(s)")))
            .unwrap_or_else(|| panic!("no totals for {what}:\n{stdout}"));
        for (p, row) in PHASES.iter().zip(&lines[at + 1..at + 1 + PHASES.len()]) {
            let cells: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cells.len(), 4, "{row:?}");
            assert_eq!(cells[0], *p, "{row:?}");
            assert!(
                cells[1].parse::<f64>().is_ok() && cells[2] == "ms",
                "{row:?}"
            );
            assert!(cells[3].ends_with('%'), "{row:?}");
        }
    }
}

#[test]
fn live_help_names_every_phase_verbose_prints() {
    let o = crate::common::fencesim_command()
        .args(["live", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout).replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let listed = help
        .split("where its time went (")
        .nth(1)
        .and_then(|l| l.split(';').next())
        .unwrap_or_else(|| panic!("no phase list in --help: {help}"));
    let names: Vec<&str> = listed.split(", ").collect();
    assert_eq!(names, PHASES, "{help}");
}
