//! Code-level checking throughput (issue #44): three searches of fenced-cas in one run, all
//! single-threaded, each reported as unique states/s and transitions/s.
//!
//! **code**: `fencesim check --code fenced-cas` (`src/codecheck/`, the DFS proof) over the
//! shipped sans-IO nodes at its default bounds: 2 workers, 2 grants, 1 pause of 11 ms, at most
//! 4 messages in flight, no timer after 16 ms of true time, no loss, duplication or crash.
//!
//! **actor**: the *same* shipped nodes (`src/protocol/`: the coordinator, two workers, the
//! resource, built by `codecheck::builtin` from the same roles) wrapped as stateright 0.31
//! `Actor`s (`Input::Start` / message / timer in, effects out as sends, timers and saves) and
//! checked by stateright's `ActorModel` BFS on one thread, with the code search's judge
//! (`codecheck::judge::Judge`) as the model's history and the same bounds where they mean
//! something: 2 grants, 4 messages in flight (an unordered, non-duplicating, lossless network).
//! stateright's actor checker has no clock: any set timer may fire at any moment. Each wrapper
//! keeps its node's own clock, which jumps to a timer's deadline when that timer fires (never
//! back), so every node runs on its own unboundedly drifting clock, and no node's clock may pass
//! 16 ms (the horizon, per node). A pause adds nothing there (timers already fire in any
//! order), so it has none. The spaces differ: both are printed.
//!
//! **abstract**: `fencesim check` of the fenced-cas spec (`src/model/`, 1 thread, no symmetry)
//! at 5 clients / 8 grants: its atomic-step space at 2 clients / 2 grants is 53 states, too few
//! to time, so the rates are per state and per transition of a different, far smaller space.
//!
//! Criterion times each once per sample ("thrpt" is unique states/s); then one pass alternates
//! the three `FENCESIM_BENCH_ROUNDS` times (default 3; 0 skips it) and prints each round's
//! rates and the ratios code/actor and code/abstract, per unique state and per transition.
//!
//! `cargo bench --bench codecheck -- --warm-up-time 1 --measurement-time 5` (about 2.5 minutes);
//! `FENCESIM_BENCH_ONCE=1` runs each search once and prints its line, without criterion.

#[path = "common/rounds.rs"]
mod rounds;

use criterion::{criterion_group, Criterion, Throughput};
use fencesim::codecheck::{self, Bounds};
use fencesim::model::{check, parse, CheckOptions};
use fencesim::protocol::ProtocolKind;
use std::path::Path;
use std::time::{Duration, Instant};

/// One search's counts and wall time.
#[derive(Clone, Copy, Debug)]
struct Run {
    unique: usize,
    transitions: u64,
    elapsed: Duration,
}

impl Run {
    fn states_per_sec(&self) -> f64 {
        self.unique as f64 / self.elapsed.as_secs_f64()
    }
    fn transitions_per_sec(&self) -> f64 {
        self.transitions as f64 / self.elapsed.as_secs_f64()
    }
}

/// `fencesim check --code fenced-cas` at the default bounds.
fn run_code() -> Run {
    let (_, outcome) = codecheck::check_protocol(ProtocolKind::FencedCas, Bounds::default())
        .expect("fenced-cas is driven at the code level");
    assert!(
        outcome.proved(),
        "fenced-cas is proved at the default bounds"
    );
    Run {
        unique: outcome.unique_states,
        transitions: outcome.transitions,
        elapsed: outcome.elapsed,
    }
}

const ABSTRACT_CLIENTS: u8 = 5;
const ABSTRACT_GRANTS: u8 = 8;

/// `fencesim check` of a fenced-cas spec, one thread.
fn run_abstract() -> Run {
    let text = format!(
        "schema_version = 1\nprotocol = \"fenced-cas\"\nclients = {ABSTRACT_CLIENTS}\n\
         grants_max = {ABSTRACT_GRANTS}\n\n[expect]\nverdict = \"safe\"\n"
    );
    let spec = parse(Path::new("bench.toml"), "bench", &text).expect("bench spec parses");
    let options = CheckOptions {
        threads: 1,
        progress: None,
        interrupt: None,
    };
    let started = Instant::now();
    let report = check(&spec, &options);
    let elapsed = started.elapsed();
    assert!(report.meets_expectation(), "{:?}", report.mismatches);
    let stats = report.proof.expect("a safe spec is proved").stats;
    Run {
        unique: stats.unique_states,
        transitions: stats.total_states as u64,
        elapsed,
    }
}

/// The shipped nodes as stateright actors.
mod actors {
    use fencesim::codecheck::judge::{Judge, Notes};
    use fencesim::codecheck::topology::{builtin, MS};
    use fencesim::codecheck::{Bounds, Builtin, Topology};
    use fencesim::protocol::{
        Clocks, Durability, Effect, Input, Msg, Node, NodeId, ProtocolKind, Record, Role, TimerId,
    };
    use stateright::actor::{model_timeout, Actor, ActorModel, Id, Network, Out};
    use stateright::{Checker, Expectation, Model};
    use std::borrow::Cow;
    use std::cmp::Ordering;
    use std::hash::{Hash, Hasher};

    /// A protocol message on stateright's network (which needs `Ord` to sort its actions).
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    pub struct Wire(pub Msg);

    impl Ord for Wire {
        fn cmp(&self, other: &Self) -> Ordering {
            if self.0 == other.0 {
                return Ordering::Equal;
            }
            let key = |m: &Msg| (m.tag(), m.words());
            key(&self.0)
                .cmp(&key(&other.0))
                .then_with(|| format!("{:?}", self.0).cmp(&format!("{:?}", other.0)))
        }
    }

    impl PartialOrd for Wire {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }

    /// One shipped node at one address.
    pub struct CodeActor {
        role: Role,
        coord: NodeId,
        /// The coordinator is promoted at boot, as the code search's harness does.
        promote: bool,
    }

    /// The node as its code left it, its own clock, and its timers' deadlines on that clock.
    #[derive(Clone, PartialEq, Eq, Hash, Debug)]
    pub struct Local {
        node: Builtin,
        now_ns: u64,
        deadlines: Vec<(TimerId, u64)>,
    }

    fn node_id(id: Id) -> NodeId {
        NodeId(usize::from(id) as u16)
    }

    impl CodeActor {
        /// Hands `input` to the node at its clock and maps its effects to stateright's.
        fn step(&self, s: &mut Local, input: Input<'_>, o: &mut Out<Self>) {
            let clocks = Clocks {
                wall_ns: s.now_ns as i64,
                mono_ns: s.now_ns,
            };
            let mut fx = Vec::new();
            s.node.handle(clocks, input, &mut fx);
            for effect in fx {
                match effect {
                    Effect::Send { to, msg } => {
                        let to = if to == NodeId::COORD_GROUP {
                            self.coord
                        } else {
                            to
                        };
                        o.send(Id::from(to.0 as usize), Wire(msg));
                    }
                    Effect::SetTimer { timer, after_ns } => {
                        s.deadlines.retain(|d| d.0 != timer);
                        s.deadlines.push((timer, s.now_ns.saturating_add(after_ns)));
                        s.deadlines.sort();
                        o.set_timer(timer, model_timeout());
                    }
                    Effect::CancelTimer { timer } => {
                        s.deadlines.retain(|d| d.0 != timer);
                        o.cancel_timer(timer);
                    }
                    Effect::Persist {
                        durability: Durability::Synced,
                        record,
                    } => o.save(record),
                    Effect::Persist { .. } | Effect::Observe(_) => {}
                }
            }
        }
    }

    impl Actor for CodeActor {
        type Msg = Wire;
        type Timer = TimerId;
        type State = Local;
        type Storage = Record;
        type Random = ();

        fn on_start(&self, _id: Id, storage: &Option<Record>, o: &mut Out<Self>) -> Local {
            let mut s = Local {
                node: builtin(&self.role),
                now_ns: 0,
                deadlines: Vec::new(),
            };
            let recovered = storage.as_deref();
            self.step(&mut s, Input::Start { recovered }, o);
            if self.promote {
                let promote = Input::Message {
                    from: self.coord,
                    msg: Msg::Promote,
                };
                self.step(&mut s, promote, o);
            }
            s
        }

        fn on_msg(&self, _id: Id, s: &mut Cow<Local>, src: Id, msg: Wire, o: &mut Out<Self>) {
            let input = Input::Message {
                from: node_id(src),
                msg: msg.0,
            };
            self.step(s.to_mut(), input, o);
        }

        fn on_timeout(&self, _id: Id, s: &mut Cow<Local>, timer: &TimerId, o: &mut Out<Self>) {
            let s = s.to_mut();
            if let Some(&(_, deadline)) = s.deadlines.iter().find(|d| d.0 == *timer) {
                s.now_ns = s.now_ns.max(deadline);
            }
            s.deadlines.retain(|d| d.0 != *timer);
            self.step(s, Input::Timer { timer: *timer }, o);
        }
    }

    /// The code search's judge as the model's history, plus the message being handled (what
    /// `Judge::on_send` is told; not hashed: it is set again before every send it matters to).
    #[derive(Clone, Debug)]
    pub struct Judged {
        judge: Judge,
        violated: bool,
        handling: Option<Msg>,
    }

    impl Hash for Judged {
        fn hash<H: Hasher>(&self, state: &mut H) {
            self.judge.hash(state);
            self.violated.hash(state);
        }
    }

    impl PartialEq for Judged {
        fn eq(&self, other: &Self) -> bool {
            self.judge == other.judge && self.violated == other.violated
        }
    }

    /// The bounds the actor model checks within.
    pub struct Cfg {
        grants: usize,
        in_flight_max: usize,
        horizon_ns: u64,
    }

    fn record_in(_: &Cfg, h: &Judged, env: stateright::actor::Envelope<&Wire>) -> Option<Judged> {
        let mut h = h.clone();
        h.judge
            .on_deliver(node_id(env.dst), &env.msg.0, &mut Notes::default());
        h.handling = Some(env.msg.0);
        Some(h)
    }

    fn record_out(_: &Cfg, h: &Judged, env: stateright::actor::Envelope<&Wire>) -> Option<Judged> {
        let mut h = h.clone();
        let handling = h.handling;
        let found = h.judge.on_send(
            node_id(env.src),
            handling.as_ref(),
            &env.msg.0,
            &mut Notes::default(),
        );
        h.violated |= found.is_some();
        Some(h)
    }

    type CodeModel = ActorModel<CodeActor, Cfg, Judged>;

    /// `kind`'s nodes at the code search's addresses, bounded as `bounds` says.
    pub fn nodes(kind: ProtocolKind, bounds: &Bounds) -> CodeModel {
        let topology = Topology::lease(kind, bounds.workers, bounds.timing)
            .expect("a protocol the code search drives");
        let coord = topology.coord;
        let actors = topology
            .roles
            .iter()
            .enumerate()
            .map(|(i, role)| CodeActor {
                role: *role,
                coord,
                promote: NodeId(i as u16) == coord,
            });
        let cfg = Cfg {
            grants: bounds.grants,
            in_flight_max: bounds.in_flight_max,
            horizon_ns: bounds.horizon_ms * MS,
        };
        let history = Judged {
            judge: Judge::new(bounds.workers, false, false, false, false),
            violated: false,
            handling: None,
        };
        ActorModel::new(cfg, history)
            .actors(actors)
            .init_network(Network::new_unordered_nonduplicating([]))
            .record_msg_in(record_in)
            .record_msg_out(record_out)
            .within_boundary(|cfg, s| {
                s.history.judge.grants() <= cfg.grants
                    && s.network.len() <= cfg.in_flight_max
                    && s.actor_states.iter().all(|a| a.now_ns <= cfg.horizon_ns)
            })
            .property(Expectation::Always, "no violation", |_, s| {
                !s.history.violated
            })
            .property(Expectation::Sometimes, "write accepted", |_, s| {
                s.history.judge.accepted_max() > 0
            })
    }

    /// stateright's BFS of the model, one thread: (unique states, states generated, whether
    /// some path broke a property). It stops early once every property has a discovery.
    pub fn check_bfs(model: CodeModel) -> (usize, usize, bool) {
        let checker = model.checker().threads(1).spawn_bfs().join();
        assert!(checker.discovery("write accepted").is_some());
        let violated = checker.discovery("no violation").is_some();
        (
            checker.unique_state_count(),
            checker.state_count(),
            violated,
        )
    }
}

/// stateright's actor checker on the shipped fenced-cas nodes.
fn run_actor() -> Run {
    let model = actors::nodes(ProtocolKind::FencedCas, &Bounds::default());
    let started = Instant::now();
    let (unique, generated, violated) = actors::check_bfs(model);
    assert!(!violated, "fenced-cas's nodes break no property");
    Run {
        unique,
        transitions: generated as u64,
        elapsed: started.elapsed(),
    }
}

/// One of the three searches.
type Search = fn() -> Run;

fn searches(c: &mut Criterion) {
    let mut group = c.benchmark_group("fenced-cas searches");
    group.sample_size(10);
    let cases: [(&str, Search); 3] = [
        ("code (src/codecheck) 2w/2g/1pause", run_code),
        ("stateright actor (shipped nodes) 2w/2g", run_actor),
        ("abstract (src/model) 5c/8g", run_abstract),
    ];
    for (name, run) in cases {
        group.throughput(Throughput::Elements(run().unique as u64));
        group.bench_function(name, |b| b.iter(run));
    }
    group.finish();
}

fn line(name: &str, r: &Run) -> String {
    format!(
        "{name} {} unique, {} transitions in {:.2} s = {:.0} K states/s, {:.0} K transitions/s",
        r.unique,
        r.transitions,
        r.elapsed.as_secs_f64(),
        r.states_per_sec() / 1e3,
        r.transitions_per_sec() / 1e3
    )
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// The three searches alternately, one ratio per round.
fn alternating_rounds(rounds: usize) {
    let (mut actor_s, mut actor_t, mut abs_s, mut abs_t) = (vec![], vec![], vec![], vec![]);
    for round in 1..=rounds {
        let (code, actor, abs) = (run_code(), run_actor(), run_abstract());
        println!("round {round}: {}", line("code", &code));
        println!("round {round}: {}", line("stateright actor", &actor));
        println!("round {round}: {}", line("abstract", &abs));
        actor_s.push(code.states_per_sec() / actor.states_per_sec());
        actor_t.push(code.transitions_per_sec() / actor.transitions_per_sec());
        abs_s.push(code.states_per_sec() / abs.states_per_sec());
        abs_t.push(code.transitions_per_sec() / abs.transitions_per_sec());
    }
    if rounds == 0 {
        return;
    }
    for (what, ratios) in [
        ("code / stateright actor, per unique state", actor_s),
        ("code / stateright actor, per transition", actor_t),
        ("code / abstract, per unique state", abs_s),
        ("code / abstract, per transition", abs_t),
    ] {
        let (mid, low, high) = median(ratios);
        println!(
            "fenced-cas, 1 thread: {what}: {mid:.2}x (median of {rounds} alternating rounds; \
             range {low:.2}-{high:.2}x)"
        );
    }
}

criterion_group!(benches, searches);

/// The wrapping can see a violation: redis-set-nx's nodes (no fence) write stale under it.
fn actor_model_finds_redis_set_nx_stale_write() {
    let model = actors::nodes(ProtocolKind::RedisSetNx, &Bounds::default());
    assert!(
        actors::check_bfs(model).2,
        "redis-set-nx's stale write is found"
    );
}

fn main() {
    actor_model_finds_redis_set_nx_stale_write();
    if std::env::var_os("FENCESIM_BENCH_ONCE").is_some() {
        println!("{}", line("code", &run_code()));
        println!("{}", line("stateright actor", &run_actor()));
        println!("{}", line("abstract", &run_abstract()));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    let rounds = rounds::rounds();
    alternating_rounds(rounds);
}
