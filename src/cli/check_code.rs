//! `fencesim check --code <protocol>`: the code-level search over the
//! protocol's shipped nodes (src/codecheck/). Prints the bounds, the
//! verdict (proved at the bounds with unique states, depth and the bounds
//! hit, or a shortest counterexample step by step) and exits as `check`
//! does: 0 the verdict is the expected one (`--expect`, default safe),
//! 1 it is not (or the state bound stopped the search), 2 bad input. With
//! `--emit-scenario`, a counterexample is also written as a scripted
//! scenario and run: exit 0 needs the simulator to find the same violation.
//! With `--emit-live`, as a live scenario on the protocol's live recipe,
//! rerun on real servers (`check_live`): exit 0 needs it to reproduce; a
//! path with no live form exits 1 naming its step, a protocol with no live
//! recipe 2 before the search.
//! With `--refine`, the refinement check instead: every step of the whole
//! space against the protocol's abstract model; exit 0 needs no divergence
//! and the space exhausted (bounds the mapping is not exact at are refused,
//! exit 2).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::{BadInput, Verdict};
use crate::codecheck::to_scenario::{file_name, replays, to_scenario};
use crate::codecheck::{
    self, Bounds, Builtin, Counterexample, Harness, Options, MAX_STATES_DEFAULT,
};
use crate::protocol::ProtocolKind;

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expect {
    Safe,
    Unsafe,
}

/// The bounds of `--code` (ignored without it).
#[derive(clap::Args, Debug)]
pub struct CodeArgs {
    /// Check this protocol's shipped node code exhaustively (instead of model specs).
    #[arg(long, value_name = "PROTOCOL")]
    pub code: Option<String>,
    /// --code: the verdict that exits 0.
    #[arg(long, value_enum, default_value_t = Expect::Safe)]
    expect: Expect,
    /// --code: workers (one op each).
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// --code: distinct grants a path may issue.
    #[arg(long, default_value_t = 2)]
    grants: usize,
    /// --code: messages a path may lose.
    #[arg(long, default_value_t = 0)]
    losses: u8,
    /// --code: messages a path may duplicate.
    #[arg(long, default_value_t = 0)]
    duplicates: u8,
    /// --code: crash-and-restarts a path may have (synced records survive).
    #[arg(long, default_value_t = 0)]
    crashes: u8,
    /// --code: worker pauses a path may have (lease TTL + 1 ms each); default 1 (0 for
    /// consensus-generation, whose quorum rounds multiply the space).
    #[arg(long)]
    pauses: Option<u8>,
    /// --code: a pause is the simulator's: the worker handles nothing for the pause and then
    /// runs the messages and timers that reached it meanwhile, in that order (default: the
    /// pause only delays its timers).
    #[arg(long)]
    pause_holds: bool,
    /// --code: failovers of a replicated coordinator (the primary crashes for good, the next
    /// replica is promoted); default 1 for incr-beside-lease and consensus-generation, else 0.
    #[arg(long)]
    failovers: Option<u8>,
    /// --code: rejoins of a failed-over primary (it restarts as a replica from its synced
    /// record: a failover's restart_after_ms); at most --failovers.
    #[arg(long, default_value_t = 0)]
    rejoins: u8,
    /// --code: nodes (any role) whose clock may drift, fast or slow by --drift-ppm from time
    /// zero.
    #[arg(long, default_value_t = 0)]
    drifts: u8,
    /// --code: a drifting clock's rate error, in parts per million (1 to 999999).
    #[arg(long, value_name = "PPM", default_value_t = crate::codecheck::bounds::DRIFT_PPM_DEFAULT)]
    drift_ppm: u32,
    /// --code: jumps of a node's wall clock (forward or back by --jump-ms; its monotonic clock
    /// does not jump) a path may have.
    #[arg(long, default_value_t = 0)]
    jumps: u8,
    /// --code: how far a wall clock jumps; default the lease TTL + 1 ms.
    #[arg(long, value_name = "MS")]
    jump_ms: Option<u64>,
    /// --code: messages in flight at once; default 4 (2 for lock servers but redlock).
    #[arg(long)]
    in_flight: Option<usize>,
    /// --code: no timer fires after this instant; default 16 (8 for consensus-generation, 12
    /// for lock servers).
    #[arg(long)]
    horizon_ms: Option<u64>,
    /// --code: unique states kept at most (the memory bound: ~0.7 GiB at the default).
    #[arg(long, default_value_t = MAX_STATES_DEFAULT)]
    max_states: usize,
    /// --code: check every explored step against the protocol's abstract model (refinement).
    #[arg(long)]
    refine: bool,
    /// --code: the protocol's `fence` option (writes carry the lock's token and the
    /// resource checks it); default the catalogue's.
    #[arg(long, value_name = "BOOL")]
    fence: Option<bool>,
    /// --code redlock: independent Redis masters (the protocol's `masters`); default 3.
    #[arg(long, value_name = "N")]
    masters: Option<u8>,
    /// --code redlock: the masters' `fsync` policy (always: every write synced before the
    /// reply; never, the default: a restarted master has forgotten its keys).
    #[arg(long, value_enum)]
    fsync: Option<Fsync>,
    /// --code redlock: a restarted master answers nothing for this long (antirez's fix:
    /// at least the TTL); default 0.
    #[arg(long, value_name = "MS")]
    restart_delay_ms: Option<u64>,
    /// --code: write the counterexample as a live scenario on the protocol's live recipe (a
    /// `.toml` path, or a directory receiving `live-code-<protocol>-<violation>.toml`) and run
    /// it on real servers --live-reruns times: exit 0 needs it to reproduce (≥ 4 in 5).
    #[arg(long, value_name = "PATH")]
    emit_live: Option<std::path::PathBuf>,
    /// --emit-live: reruns of the written live scenario.
    #[arg(long, value_name = "N", default_value_t = 5)]
    live_reruns: u32,
    /// --emit-live: a live trial that has not finished by then is ended.
    #[arg(long, value_name = "MS", default_value_t = 20_000)]
    live_timeout_ms: u64,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fsync {
    Always,
    Never,
}

impl CodeArgs {
    fn bounds(&self, kind: ProtocolKind) -> Result<Bounds> {
        if !(1..=3).contains(&self.workers) {
            return Err(BadInput(format!("--workers {} must be from 1 to 3", self.workers)).into());
        }
        if self.max_states == 0 || self.max_states > u32::MAX as usize {
            return Err(BadInput(format!(
                "--max-states {} must be from 1 to {}",
                self.max_states,
                u32::MAX
            ))
            .into());
        }
        let defaults = Bounds::for_protocol(kind);
        let failovers = self.failovers.unwrap_or(defaults.failovers);
        let replicas = if codecheck::is_replicated(kind) {
            kind.default_replicas()
        } else {
            1
        };
        if failovers >= replicas {
            return Err(BadInput(format!(
                "--failovers {failovers}: {} has {replicas} coordinator replica{} (a failover needs a live replica to promote: at most {})",
                kind.id(),
                if replicas == 1 { "" } else { "s" },
                replicas - 1
            ))
            .into());
        }
        if self.rejoins > failovers {
            return Err(BadInput(format!(
                "--rejoins {}: only a failed-over primary rejoins, and a path has {failovers} failover{}",
                self.rejoins,
                if failovers == 1 { "" } else { "s" }
            ))
            .into());
        }
        if !(1..=999_999).contains(&self.drift_ppm) {
            return Err(BadInput(format!(
                "--drift-ppm {} must be from 1 to 999999",
                self.drift_ppm
            ))
            .into());
        }
        if self.jump_ms == Some(0) {
            return Err(BadInput(
                "--jump-ms 0: a jump moves the wall clock by at least 1 ms".into(),
            )
            .into());
        }
        let timing = defaults.timing;
        Ok(Bounds {
            workers: self.workers,
            grants: self.grants,
            losses: self.losses,
            duplicates: self.duplicates,
            crashes: self.crashes,
            pauses: self.pauses.unwrap_or(defaults.pauses),
            pause_ms: timing.lease_ttl_ms + 1,
            failovers,
            rejoins: self.rejoins,
            drifts: self.drifts,
            drift_ppm: self.drift_ppm,
            jumps: self.jumps,
            jump_ms: self.jump_ms.unwrap_or(defaults.jump_ms),
            in_flight_max: self.in_flight.unwrap_or(defaults.in_flight_max),
            horizon_ms: self.horizon_ms.unwrap_or(defaults.horizon_ms),
            max_states: self.max_states,
            timing,
            write_history: false,
            arming_order: false,
            pause_holds: self.pause_holds,
        })
    }
}

/// `check --code`: refuses what does not go with it, then checks.
pub fn dispatch(
    a: &CodeArgs,
    id: &str,
    specs: bool,
    emit: Option<&Path>,
    json: bool,
    threads: usize,
) -> Result<ExitCode> {
    if specs || json {
        return Err(BadInput(
            "--code checks one protocol's node code: give no model specs or --format json with it"
                .into(),
        )
        .into());
    }
    cmd(a, id, emit, threads)
}

fn cmd(a: &CodeArgs, id: &str, emit: Option<&Path>, threads: usize) -> Result<ExitCode> {
    let Some(kind) = ProtocolKind::from_id(id) else {
        return Err(BadInput(format!(
            "--code {id:?}: unknown protocol; supported: {}",
            codecheck::supported().join(", ")
        ))
        .into());
    };
    let bounds = a.bounds(kind)?;
    if a.refine {
        if emit.is_some() || a.emit_live.is_some() {
            return Err(BadInput(
                "--refine writes no scenario: give no --emit-scenario or --emit-live".into(),
            )
            .into());
        }
        // Redlock's options (masters, fsync, restart delay) are its own
        // protocol's: the mapping is the same (refused where it is not exact).
        let options = Options {
            fence: a.fence,
            masters: a.masters,
            fsync_always: a.fsync.map(|f| f == Fsync::Always),
            restart_delay_ms: a.restart_delay_ms,
        };
        let (harness, r) =
            codecheck::refine_protocol_with(kind, options, bounds).map_err(BadInput)?;
        print!(
            "{}",
            crate::report::code_check::render_refinement(id, &harness, &r)
        );
        return Ok(Verdict::met_if(r.passed()).into());
    }
    let fence = a.fence.unwrap_or(kind.def().fence_default);
    if a.emit_live.is_some() {
        super::check_live::precheck(kind, fence, a.live_reruns)?;
    }
    let options = Options {
        fence: a.fence,
        masters: a.masters,
        fsync_always: a.fsync.map(|f| f == Fsync::Always),
        restart_delay_ms: a.restart_delay_ms,
    };
    let (harness, out) = codecheck::check_protocol_with(kind, options, bounds).map_err(BadInput)?;
    let mut set = Vec::new();
    if let Some(fence) = a.fence {
        set.push(format!("fence = {fence}"));
    }
    if kind.def().accepts("masters") {
        set.push(format!("masters = {}", harness.topology.replicas));
    }
    if a.fsync == Some(Fsync::Always) {
        set.push("fsync = always".into());
    }
    if let Some(ms) = a.restart_delay_ms.filter(|&ms| ms > 0) {
        set.push(format!("restart_delay_ms = {ms}"));
    }
    let shown = match set.is_empty() {
        true => id.to_string(),
        false => format!("{id} ({})", set.join(", ")),
    };
    print!(
        "{}",
        crate::report::code_check::render(&shown, &harness, &out)
    );
    let verdict = match &out.counterexample {
        Some(_) => Some(Expect::Unsafe),
        None if out.hits.max_states => None,
        None => out.vacuity_ok().then_some(Expect::Safe),
    };
    let mut met = verdict == Some(a.expect);
    if let (Some(path), Some(c)) = (emit, &out.counterexample) {
        met &= emit_and_replay(&harness, kind, c, path, threads)?;
    }
    if let (Some(path), Some(c)) = (&a.emit_live, &out.counterexample) {
        let e = super::check_live::EmitLive {
            path,
            reruns: a.live_reruns,
            timeout_ms: a.live_timeout_ms,
        };
        met &= super::check_live::emit(&harness, kind, fence, c, &e)?;
    }
    Ok(Verdict::met_if(met).into())
}

/// Writes the counterexample as a scripted scenario (`PATH` if it names a
/// `.toml` file, else `PATH/code-<protocol>-<violation>.toml`) and runs it:
/// true if the simulator finds the same violation on every seed.
fn emit_and_replay(
    h: &Harness<Builtin>,
    kind: ProtocolKind,
    c: &Counterexample,
    path: &Path,
    threads: usize,
) -> Result<bool> {
    let text = match to_scenario(h, c, &mut |text| replays(text, threads)) {
        Ok(text) => text,
        Err(why) => {
            println!("  cannot script this counterexample for the simulator: {why}");
            return Ok(false);
        }
    };
    let file = if path.extension().is_some_and(|e| e == "toml") {
        path.to_path_buf()
    } else {
        std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
        path.join(file_name(kind, c))
    };
    super::check_models::replay_emitted(&text, &file, c.finding.kind, threads)
}
