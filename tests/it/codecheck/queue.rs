//! queue-claim's nodes against the queue-claim model (`--refine`): the
//! shipped queue refines it with a crash of any node (a restarted queue
//! has forgotten its claims: every job is visible again); the default
//! bounds are in `refine.rs`'s every-protocol test. A copy of the queue
//! that keeps every result for the head job, the last one overwriting
//! (`ON CONFLICT DO UPDATE` instead of `DO NOTHING`), diverges where it
//! keeps a second result; the same copy with the rule refines the model,
//! so the divergence is the rule's, not the copy's.

use super::refine::passes;
use fencesim::codecheck::{builtin, refine, refine_protocol, Bounds, Builtin, Inspect};
use fencesim::codecheck::{Harness, QueueView, Topology};
use fencesim::protocol::alt_role::AltRole;
use fencesim::protocol::coordinator::Coordinator;
use fencesim::protocol::node::{Clocks, Effect, Input, Node};
use fencesim::protocol::resource::Resource;
use fencesim::protocol::single_db::{serve, Server, Txn};
use fencesim::protocol::{Key, Msg, OpId, ProtocolKind, Role, Token};

#[test]
fn queue_claim_refines_its_model_with_a_crash_of_any_node() {
    let bounds = Bounds {
        crashes: 1,
        pauses: 0,
        horizon_ms: 12,
        ..super::small()
    };
    let (_, r) = refine_protocol(ProtocolKind::QueueClaim, bounds).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
    assert_eq!(r.outcome.unique_states, 269_470, "{:?}", r.counts);
    // The claim ended by the queue's restart is the model's Expire; a
    // deletion (DeleteJob) is counted among the other actions.
    let [acquire, expire, send, deliver, .., deletes] = r.counts.by_action;
    assert!(
        acquire > 0 && expire > 0 && send > 0 && deliver > 0 && deletes > 0,
        "{:?}",
        r.counts
    );
}

/// A copy of the shipped queue (one group, claims in memory, nothing
/// persisted: these bounds crash nothing). `overwrite`: a result for the
/// head job is kept even if the job has one already.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct QueueCopy {
    visibility_timeout_ns: u64,
    overwrite: bool,
    job: u64,
    result: bool,
    value: u64,
    claim: Option<Txn>,
    /// (delivery number, job), in delivery order.
    delivered: Vec<(u64, u64)>,
}

impl QueueView for QueueCopy {
    fn head(&self, _: Key) -> (u64, bool, OpId, Option<Txn>) {
        (self.job, self.result, OpId(self.value), self.claim)
    }
    fn job_of(&self, delivery: u64) -> Option<u64> {
        self.delivered.iter().find(|d| d.0 == delivery).map(|d| d.1)
    }
}

impl QueueCopy {
    fn grant(&mut self, clocks: Clocks, req: u32, key: Key, owner: u64) -> Msg {
        let delivery = self.delivered.len() as u64 + 1;
        let vt = self.visibility_timeout_ns;
        self.claim = Some(Txn {
            owner,
            id: delivery,
            deadline_wall_ns: clocks.wall_ns.saturating_add(vt as i64),
        });
        self.delivered.push((delivery, self.job));
        Msg::Granted {
            req,
            key,
            owner,
            token: Some(Token(delivery)),
            ttl_ns: vt,
        }
    }
}

impl Server for QueueCopy {
    fn reset(&mut self, _: Option<&[u8]>) {
        self.claim = None;
    }

    fn answer(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        Some(match msg {
            Msg::Acquire { req, key, owner } => match Txn::live(&mut self.claim, clocks, key, fx) {
                Some(t) => t.answer(clocks, req, key, owner),
                None => self.grant(clocks, req, key, owner),
            },
            Msg::Read { req, key, op, .. } => Msg::ReadOk {
                req,
                key,
                op,
                value: OpId(self.value),
            },
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => {
                let job = token.and_then(|t| self.job_of(t.0));
                if job != Some(self.job) || (self.result && !self.overwrite) {
                    let fence = Token(self.job);
                    return Some(Msg::WriteRejected {
                        req,
                        key,
                        op,
                        fence,
                    });
                }
                self.result = true;
                self.value = value.0;
                Msg::WriteOk { req, key, op }
            }
            Msg::Release { req, key, owner } => {
                let removed = Txn::release(&mut self.claim, clocks, key, owner, fx);
                if removed.is_some() && self.result {
                    self.job += 1;
                    self.result = false;
                }
                Msg::Released { req, key, removed }
            }
            Msg::Renew { req, key, owner } => Msg::RenewFailed { req, key, owner },
            _ => return None,
        })
    }
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum CopiedQueue {
    Builtin(Builtin),
    Queue(QueueCopy),
}

impl Node for CopiedQueue {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match self {
            CopiedQueue::Builtin(n) => n.handle(clocks, input, fx),
            CopiedQueue::Queue(q) => serve(q, clocks, input, fx),
        }
    }
}

impl Inspect for CopiedQueue {
    fn coordinator(&self) -> Option<&Coordinator> {
        None
    }
    fn resource(&self) -> Option<&Resource> {
        None
    }
    fn queue(&self) -> Option<&dyn QueueView> {
        match self {
            CopiedQueue::Builtin(n) => n.queue(),
            CopiedQueue::Queue(q) => Some(q),
        }
    }
}

fn copy(role: &Role, overwrite: bool) -> CopiedQueue {
    match *role {
        Role::Alt(AltRole::Queue(cfg)) => CopiedQueue::Queue(QueueCopy {
            visibility_timeout_ns: cfg.visibility_timeout_ns,
            overwrite,
            job: 1,
            result: false,
            value: 0,
            claim: None,
            delivered: Vec::new(),
        }),
        _ => CopiedQueue::Builtin(builtin(role)),
    }
}

fn overwriting(role: &Role) -> CopiedQueue {
    copy(role, true)
}

fn first_result_wins(role: &Role) -> CopiedQueue {
    copy(role, false)
}

/// The copied queue at the default bounds without the pause: a claim runs
/// out while its result waits in flight and other workers' timers move
/// time on.
fn harness(factory: fn(&Role) -> CopiedQueue) -> Harness<CopiedQueue> {
    let bounds = Bounds {
        pauses: 0,
        ..super::small()
    };
    Harness {
        topology: Topology::lease(ProtocolKind::QueueClaim, bounds.workers, bounds.timing)
            .expect("queue-claim is supported"),
        factory,
        bounds,
    }
}

#[test]
fn a_queue_that_keeps_a_second_result_for_a_job_diverges_where_it_keeps_it() {
    // A's result is kept at 8 ms, its claim runs out at 10 ms before it
    // deletes the job, B is handed the job again and its result (step 16)
    // overwrites A's. The judge finds nothing there (generation 2 after 1,
    // computed from the current value): the refinement does.
    let r = refine(&harness(overwriting)).expect("mapped");
    assert!(
        r.outcome.counterexample.is_none(),
        "no violation on the way"
    );
    let from = r.divergence.as_ref().and_then(|d| d.from);
    assert!(
        from.is_some_and(|a| a.job_done),
        "the head job had a result: {from:?}"
    );
    let (steps, expected) = super::refine::diverges_delivering_a_write(r);
    assert_eq!(steps, 16, "B's result's delivery");
    assert!(
        expected
            .step
            .contains("queue refuses the write of generation 2")
            && expected.step.contains("its job already has a result")
            && expected
                .differences
                .iter()
                .any(|f| f == "value (generation): model 1, code 2"),
        "the model refuses that result: {expected:?}"
    );
}

#[test]
fn the_same_copy_keeping_the_first_result_only_refines_the_model() {
    let r = refine(&harness(first_result_wins)).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
    let deliver = r.counts.by_action[3];
    assert!(deliver > 0, "{:?}", r.counts);
}
