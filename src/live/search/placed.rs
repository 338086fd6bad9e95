//! A placement of faults made into what runs it: the base scenario with
//! those faults (or why the live mode cannot apply them together), and
//! the text of the file a finding or a nemesis's schedule is written as.

use std::path::Path;

use super::catalogue::placement_text;
use crate::check::ViolationKind;
use crate::live::fault::{conflict, Fault};
use crate::live::scenario::LiveScenario;

/// What every placement's scenario is made from.
pub struct Placer<'a> {
    /// The scenario searched, as read.
    pub path: &'a Path,
    pub s0: &'a LiveScenario,
    /// Its file as a table, faults and expectation taken out.
    pub base: &'a toml::Table,
    /// Its workers' names (a fault holds their indices).
    pub names: &'a [String],
    /// A user's program run as every worker (None: the built-in worker).
    pub worker_cmd: Option<&'a str>,
    /// The catalogue of single faults: placements are indices into it.
    pub singles: &'a [Fault],
}

impl Placer<'_> {
    /// `faults` on the base scenario (named `name`, expecting `find`), or
    /// why the live mode cannot apply them together: the loader's rule
    /// for a combination ([`conflict`]), and for a user's program what it
    /// cannot be given.
    pub fn placed(
        &self,
        faults: &[Fault],
        name: &str,
        find: &[ViolationKind],
    ) -> Result<LiveScenario, String> {
        if let Some(c) = conflict(faults, self.names) {
            return Err(c.why);
        }
        let s = LiveScenario {
            name: name.to_string(),
            find: find.to_vec(),
            faults: faults.to_vec(),
            worker_cmd: self.worker_cmd.map(str::to_string),
            ..self.s0.clone()
        };
        match self
            .worker_cmd
            .and_then(|_| crate::live::client::refusal(&s))
        {
            Some(why) => Err(why),
            None => Ok(s),
        }
    }

    /// Whether the live mode can apply these faults together.
    pub fn expressible(&self, faults: &[Fault]) -> bool {
        self.placed(faults, &self.s0.name, &[]).is_ok()
    }

    /// The faults of a placement (indices into the catalogue).
    pub fn faults(&self, placement: &[usize]) -> Vec<Fault> {
        placement.iter().map(|&i| self.singles[i]).collect()
    }

    /// Faults as a report names them, `+` between.
    pub fn labels_of(&self, faults: &[Fault]) -> String {
        let labels: Vec<String> = faults.iter().map(|f| f.label(self.names)).collect();
        labels.join(" + ")
    }

    /// A placement as a report names it.
    pub fn labels(&self, placement: &[usize]) -> String {
        self.labels_of(&self.faults(placement))
    }

    /// The base scenario for a file written at `out`: the twin's path is
    /// relative to the file, so one written elsewhere names it from where
    /// the scenario came from.
    fn base_at(&self, out: &Path) -> toml::Table {
        let mut base = self.base.clone();
        if out.parent() != self.path.parent() {
            if let Some(twin) = base.get("twin").and_then(toml::Value::as_str) {
                let dir = self.path.parent().unwrap_or(Path::new("."));
                let abs = std::fs::canonicalize(dir.join(twin)).unwrap_or(dir.join(twin));
                base.insert("twin".into(), abs.display().to_string().into());
            }
        }
        base
    }

    /// The text of the file at `at` that runs `faults` (named `name`,
    /// expecting `find`, `header` as its comment).
    pub fn text(
        &self,
        faults: &[Fault],
        (name, find): (&str, &[ViolationKind]),
        header: &str,
        at: &Path,
    ) -> String {
        let base = self.base_at(at);
        placement_text(
            &base,
            name,
            self.worker_cmd,
            (faults, self.names),
            find,
            header,
        )
    }
}
