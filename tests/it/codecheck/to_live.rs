//! Code-level counterexamples as live scenarios (`check --code P
//! --emit-live PATH`), without servers: the path's stall of the stale
//! worker becomes one live fault at the protocol point it last passed,
//! and a path or protocol with no live form is refused with the step or
//! the reason named. The live reruns are in `tests/it/live/from_code.rs`.

use fencesim::codecheck::{check_protocol_with, Bounds, Options};
use fencesim::live::fault::{Action, NetMessage, PauseEnd, Point, Trigger, WorkerId};
use fencesim::live::from_code::{plan, LivePlan, Refusal};
use fencesim::live::{LockKind, WriteKind};
use fencesim::protocol::ProtocolKind;

use crate::common::{fencesim, stdout};

/// `kind`'s shortest counterexample at the CLI's default bounds, mapped.
fn mapped(kind: ProtocolKind, fence: Option<bool>) -> Result<LivePlan, Refusal> {
    let options = Options {
        fence,
        ..Options::default()
    };
    let (h, out) =
        check_protocol_with(kind, options, Bounds::for_protocol(kind)).expect("supported");
    let c = out.counterexample.expect("unsafe");
    plan(&h, kind, fence.unwrap_or(kind.def().fence_default), &c)
}

#[test]
fn redis_set_nx_late_write_becomes_an_update_held_until_the_other_operation_is_done() {
    let p = mapped(ProtocolKind::RedisSetNx, None).expect("a live form");
    assert_eq!(
        (p.recipe.lock, p.recipe.write),
        (LockKind::RedisSetNxCad, WriteKind::Plain)
    );
    assert_eq!(p.faults.len(), 1, "{p:?}");
    let f = p.faults[0];
    assert_eq!(f.trigger, Trigger::Passing, "{f:?}");
    assert!(
        matches!(
            f.action,
            Action::Net {
                worker: WorkerId(0),
                message: NetMessage::Update,
                until: PauseEnd::OtherOpDone,
                ..
            }
        ),
        "{f:?}"
    );
    // B waits for A's grant, as the path starts worker/1 after worker/0's.
    assert_eq!(p.workers[1].2, Some(0), "{p:?}");
    assert!(p.request_timeout_ms > p.recipe.hold_cap_ms, "{p:?}");
    assert!(p.mapped[0].starts_with("step 16 "), "{:?}", p.mapped);
}

#[test]
fn zk_sequential_without_fence_pauses_the_holder_after_its_read() {
    let p = mapped(ProtocolKind::ZkSequential, Some(false)).expect("a live form");
    assert_eq!(
        (p.recipe.lock, p.recipe.write),
        (LockKind::ZkLock, WriteKind::Plain)
    );
    assert_eq!(
        p.faults[0].trigger,
        Trigger::After {
            worker: WorkerId(0),
            point: Point::ReadOk
        },
        "{p:?}"
    );
    assert!(
        matches!(
            p.faults[0].action,
            Action::Pause {
                until: PauseEnd::OtherOpDone,
                ..
            }
        ),
        "{p:?}"
    );
}

#[test]
fn etcd_mutex_without_fence_pauses_the_holder_once_its_write_is_sent() {
    // The path's holder sends its write and then pauses (its keep-alive
    // stops): the built-in worker's gate just before its UPDATE.
    let p = mapped(ProtocolKind::EtcdMutex, Some(false)).expect("a live form");
    assert_eq!(p.recipe.lock, LockKind::EtcdLock);
    assert_eq!(
        p.faults[0].trigger,
        Trigger::After {
            worker: WorkerId(0),
            point: Point::WriteSent
        },
        "{p:?}"
    );
}

#[test]
fn a_held_release_has_no_live_form_and_the_refusal_names_its_step() {
    let why = mapped(ProtocolKind::TtlLeaseDel, None).expect_err("no proxy on the lock link");
    assert!(why.0.starts_with("step 9 ("), "{why}");
    assert!(why.0.contains("release"), "{why}");
}

#[test]
fn fenced_check_then_write_without_pauses_stalls_the_holder_between_check_and_update() {
    // The resource checks A's write (step 18), B's write arrives (19),
    // and the resource commits A's last (22): the live check-then-update
    // worker paused after its fence check until B is done.
    let kind = ProtocolKind::FencedCheckThenWrite;
    let bounds = Bounds {
        pauses: 0,
        ..Bounds::for_protocol(kind)
    };
    let (h, out) = check_protocol_with(kind, Options::default(), bounds).expect("supported");
    let c = out.counterexample.expect("unsafe");
    let p = plan(&h, kind, true, &c).expect("a live form");
    assert_eq!(p.recipe.write, WriteKind::CheckThenUpdate);
    assert_eq!(
        p.faults[0].trigger,
        Trigger::After {
            worker: WorkerId(0),
            point: Point::FenceChecked
        },
        "{p:?}"
    );
    assert!(p.mapped[0].contains("checked at step 18"), "{:?}", p.mapped);
}

#[test]
fn fenced_check_then_write_default_path_is_refused_for_the_other_workers_pause() {
    let why = mapped(ProtocolKind::FencedCheckThenWrite, None).expect_err("B paused");
    assert!(why.0.starts_with("step 8 (worker/1 pauses"), "{why}");
    assert!(why.0.contains("stalls only the stale worker"), "{why}");
}

#[test]
fn incr_beside_lease_failover_right_after_the_grant_becomes_the_live_failover_at_the_holders_read()
{
    let p = mapped(ProtocolKind::IncrBesideLease, None).expect("a live form");
    assert_eq!(
        (p.recipe.lock, p.recipe.write),
        (LockKind::RedisSetNxDel, WriteKind::Fenced)
    );
    assert_eq!(p.find, fencesim::check::ViolationKind::TokenOrder, "{p:?}");
    assert_eq!(p.faults.len(), 1, "only the failover: {p:?}");
    let f = p.faults[0];
    let Trigger::After { worker, point } = f.trigger else {
        panic!("struck at a gate: {f:?}");
    };
    assert_eq!(point, Point::ReadOk, "the holder's first gate: {f:?}");
    assert_eq!(f.action, Action::Failover, "{f:?}");
    // The other worker waits for the holder's grant, as in the path.
    let other = 1 - worker.0;
    assert_eq!(p.workers[other].2, Some(worker.0), "{p:?}");
    assert!(
        p.mapped[0].starts_with("step 3 (failover") && p.mapped[0].contains("moved"),
        "{:?}",
        p.mapped
    );
}

#[test]
fn check_code_refuses_a_wall_clock_jump_naming_the_step_and_starts_no_server() {
    let out = fencesim(&[
        "check",
        "--code",
        "redis-set-nx",
        "--expect",
        "unsafe",
        "--jumps",
        "1",
        "--horizon-ms",
        "8",
        "--emit-live",
        std::env::temp_dir()
            .join("fencesim-to-live-jump")
            .to_str()
            .expect("utf-8"),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("cannot make this counterexample a live scenario"))
        .unwrap_or_else(|| panic!("a refusal:\n{text}"));
    assert!(
        line.contains("wall clock jumps") && line.contains("no clock fault"),
        "{line}"
    );
    assert!(
        !text.contains("redis-server on"),
        "no server started:\n{text}"
    );
}

#[test]
fn check_code_emit_live_of_a_protocol_without_a_live_recipe_is_bad_input() {
    let out = fencesim(&[
        "check",
        "--code",
        "pg-advisory-lock",
        "--expect",
        "unsafe",
        "--emit-live",
        std::env::temp_dir()
            .join("fencesim-to-live-pg")
            .to_str()
            .expect("utf-8"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("pg-advisory-lock has no live recipe"), "{err}");
    assert!(stdout(&out).is_empty(), "refused before the search");
}
