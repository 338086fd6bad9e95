//! The simulator's pause, in the code-level search (`Bounds::pause_holds`):
//! for `pause_ms` a paused worker handles nothing; every message that
//! reaches it and every timer of it that falls due is held, in that order,
//! and at the pause's end the worker runs what it holds, in that order, at
//! that one instant — as `sim::simulator` holds a paused node's events and
//! runs them at its resume. The default pause of the search instead only
//! delays the worker's timers and lets it handle messages meanwhile; the
//! two explore different paths, and only this one's are the simulator's
//! pauses step for step. A held timer the worker re-arms or cancels before
//! its turn is dropped from the queue (the simulator's timer generations),
//! and a crash drops the queue with the pause (the simulator's crash).
//!
//! The resume is one step, as the simulator's resume runs the whole queue
//! inline, with no other event between two held inputs (the others' events
//! at that instant come before or after it).

use std::hash::Hash;

use super::harness::Harness;
use super::judge::{Finding, Notes};
use super::state::{Held, Hold, State};
use crate::protocol::{Input, Node, NodeId, TimerId};

impl<N> State<N> {
    /// `node`'s pause, while it is paused (holding pauses only).
    pub fn hold(&self, node: NodeId) -> Option<&Hold> {
        self.held.iter().find(|h| h.node == node)
    }

    fn hold_mut(&mut self, node: NodeId) -> Option<&mut Hold> {
        self.held.iter_mut().find(|h| h.node == node)
    }

    /// The earliest pause's end, if a worker is paused.
    pub fn next_resume_ns(&self) -> Option<u64> {
        self.held.iter().map(|h| h.until_ns).min()
    }

    /// `node` starts a holding pause now.
    pub fn start_hold(&mut self, node: NodeId, pause_ns: u64) {
        debug_assert!(
            self.hold(node).is_none(),
            "a paused worker is not paused again"
        );
        let until_ns = self.now_ns.saturating_add(pause_ns);
        let at = self.held.partition_point(|h| h.node < node);
        self.held.insert(
            at,
            Hold {
                node,
                until_ns,
                inputs: Vec::new(),
            },
        );
    }

    /// `input` reached paused `node`: held. False if `node` is not paused.
    pub fn hold_input(&mut self, node: NodeId, input: Held) -> bool {
        let now_ns = self.now_ns;
        match self.hold_mut(node) {
            Some(h) => {
                debug_assert!(h.until_ns >= now_ns, "held before the pause's end");
                h.inputs.push(input);
                true
            }
            None => false,
        }
    }

    /// `node` re-armed or cancelled `timer`: a held firing of it is stale.
    pub fn forget_held_timer(&mut self, node: NodeId, timer: TimerId) {
        if let Some(h) = self.hold_mut(node) {
            h.inputs.retain(|i| *i != Held::Timer(timer));
        }
    }

    /// A crash ends `node`'s pause and drops what it held.
    pub fn drop_hold(&mut self, node: NodeId) {
        self.held.retain(|h| h.node != node);
    }
}

impl<N: Node + Clone + Hash + Eq> Harness<N> {
    /// `node`'s pause ends: time moves to its end and the worker runs what
    /// it held, in order, until one input's step finds a violation.
    pub(super) fn resume(
        &self,
        s: &mut State<N>,
        node: NodeId,
        notes: &mut Notes,
        mut log: Option<&mut Vec<super::harness::Did>>,
    ) -> Option<Finding> {
        let until_ns = s.hold(node).map(|h| h.until_ns)?;
        debug_assert!(until_ns >= s.now_ns, "time does not go back");
        s.now_ns = until_ns;
        // The queue stays in the state while it runs, so that a timer the
        // worker re-arms on the way is dropped from it.
        loop {
            let h = s.hold_mut(node)?;
            if h.inputs.is_empty() {
                s.drop_hold(node);
                return None;
            }
            let input = h.inputs.remove(0);
            let found = match input {
                Held::Message(p) => {
                    s.judge.on_deliver(p.to, &p.msg, notes);
                    let input = Input::Message {
                        from: p.from,
                        msg: p.msg,
                    };
                    self.handle(s, node, input, notes, log.as_deref_mut())
                }
                Held::Timer(timer) => {
                    let input = Input::Timer { timer };
                    self.handle(s, node, input, notes, log.as_deref_mut())
                }
            };
            if found.is_some() {
                s.drop_hold(node);
                return found;
            }
        }
    }
}
