//! Writing a run back out as a fully scripted scenario: the original file
//! with its random faults replaced by the faults the run actually had
//! (random pauses/crashes/partitions resolved at start, per-message loss
//! and delay drawn while it ran). Network latency stays random per seed —
//! it is not a fault — but under the same seed the scripted file replays
//! the same run.
//!
//! Comments and key order of the original are not preserved (the TOML is
//! re-serialized); a header comment says where the file came from.

use toml::{Table, Value};

use crate::protocol::NodeId;
use crate::sim::options::{Fault, Options, When};

const MS: u64 = 1_000_000;

fn ms(ns: u64) -> Value {
    Value::Integer((ns / MS) as i64)
}

fn name(o: &Options, id: crate::protocol::NodeId) -> Value {
    Value::String(o.node_name(id).to_string())
}

fn fault_table(o: &Options, f: &Fault) -> Table {
    let mut t = Table::new();
    let when = |t: &mut Table, w: &When| match w {
        When::At(at) => {
            t.insert("at_ms".into(), ms(*at));
        }
        When::After { node, kind, nth } => {
            t.insert(
                "after".into(),
                Value::String(format!("{}:{}#{}", o.node_name(*node), kind, nth)),
            );
        }
    };
    match f {
        Fault::Pause {
            node,
            when: w,
            duration_ns,
        } => {
            t.insert("kind".into(), "pause".into());
            t.insert("node".into(), name(o, *node));
            when(&mut t, w);
            t.insert("duration_ms".into(), ms(*duration_ns));
        }
        Fault::Crash {
            node,
            when: w,
            restart_after_ns,
        } => {
            t.insert("kind".into(), "crash".into());
            t.insert("node".into(), name(o, *node));
            when(&mut t, w);
            if let Some(r) = restart_after_ns {
                t.insert("restart_after_ms".into(), ms(*r));
            }
        }
        Fault::Partition {
            when: w,
            duration_ns,
            side_a,
            side_b,
            one_way,
        } => {
            t.insert("kind".into(), "partition".into());
            when(&mut t, w);
            t.insert("duration_ms".into(), ms(*duration_ns));
            let side = |s: &Vec<NodeId>| Value::Array(s.iter().map(|&n| name(o, n)).collect());
            t.insert(
                "groups".into(),
                Value::Array(vec![side(side_a), side(side_b)]),
            );
            t.insert("one_way".into(), Value::Boolean(*one_way));
        }
        Fault::Delay {
            from,
            to,
            nth,
            delay_ns,
        } => {
            message_fault(&mut t, o, "delay", (*from, *to, *nth));
            t.insert("delay_ms".into(), ms(*delay_ns));
        }
        Fault::Drop { from, to, nth } => {
            message_fault(&mut t, o, "drop", (*from, *to, *nth));
        }
        Fault::Duplicate {
            from,
            to,
            nth,
            delay_ns,
        } => {
            message_fault(&mut t, o, "duplicate", (*from, *to, *nth));
            t.insert("delay_ms".into(), ms(*delay_ns));
        }
        Fault::ClockJump {
            node,
            when: w,
            by_ns,
        } => {
            t.insert("kind".into(), "clock_jump".into());
            t.insert("node".into(), name(o, *node));
            when(&mut t, w);
            t.insert("by_ms".into(), Value::Integer(by_ns / MS as i64));
        }
        Fault::Failover {
            when: w,
            restart_after_ns,
        } => {
            t.insert("kind".into(), "failover".into());
            when(&mut t, w);
            if let Some(r) = restart_after_ns {
                t.insert("restart_after_ms".into(), ms(*r));
            }
        }
    }
    t
}

/// A message fault's `kind`, `from`, `to` and `nth` (the link and which
/// message on it).
fn message_fault(t: &mut Table, o: &Options, kind: &str, (from, to, nth): (NodeId, NodeId, u32)) {
    t.insert("kind".into(), kind.into());
    t.insert("from".into(), name(o, from));
    t.insert("to".into(), name(o, to));
    t.insert("nth".into(), Value::Integer(nth as i64));
}

fn clock_table(c: &crate::sim::ClockSpec) -> Table {
    let mut t = Table::new();
    if c.offset_ns != 0 {
        t.insert("offset_ms".into(), Value::Integer(c.offset_ns / MS as i64));
    }
    if c.drift_ppm != 0 {
        t.insert("drift_ppm".into(), Value::Integer(c.drift_ppm));
    }
    if c.jumps.is_empty() {
        return t;
    }
    let jumps = c.jumps.iter().map(|&(at, by)| {
        let mut j = Table::new();
        j.insert("at_ms".into(), ms(at));
        j.insert("by_ms".into(), Value::Integer(by / MS as i64));
        Value::Table(j)
    });
    t.insert("jumps".into(), Value::Array(jumps.collect()));
    t
}

/// The scripted scenario text for `script` (every fault of one run).
pub fn scripted(source: &str, o: &Options, script: &[Fault], seed: u64) -> Result<String, String> {
    let mut doc: Table = toml::from_str(source).map_err(|e| e.message().to_string())?;
    doc.remove("random");
    if let Some(Value::Table(net)) = doc.get_mut("network") {
        net.remove("loss_probability");
        net.remove("delay_probability");
        net.remove("delay_max_ms");
        net.remove("duplicate_probability");
    }
    let faults: Vec<Value> = script
        .iter()
        .map(|f| Value::Table(fault_table(o, f)))
        .collect();
    if !faults.is_empty() {
        doc.insert("fault".into(), Value::Array(faults));
    }
    // The run's clocks, which `--swarm` may have drifted or stepped.
    let clocks: Table = o
        .nodes
        .iter()
        .filter(|n| n.clock != crate::sim::ClockSpec::default())
        .map(|n| (n.name.clone(), Value::Table(clock_table(&n.clock))))
        .collect();
    if !clocks.is_empty() {
        doc.insert("clock".into(), Value::Table(clocks));
    }
    if let Some(Value::String(name)) = doc.get_mut("name") {
        name.push_str(&format!("-seed-{seed}-scripted"));
    }
    let seed_value =
        i64::try_from(seed).map_err(|_| format!("seed {seed} does not fit a TOML integer"))?;
    doc.insert("seed_start".into(), Value::Integer(seed_value));
    let body = toml::to_string(&doc).map_err(|e| e.to_string())?;
    Ok(format!("# Fully scripted from seed {seed} by `fencesim replay --emit-scenario`: every fault is listed, none random.\n{body}"))
}
