//! Text for `fencesim validate`: one judged seed of an implementation under
//! test — the store's own claims, then the checker's violations with their
//! evidence records and its counters. `validate/` judges; this renders (an
//! inherent method defined here, so the judging room imports no renderer).

use crate::validate::Judged;

impl Judged {
    /// Violations with their evidence records, then the checker's counters.
    pub fn render(&self) -> String {
        let mut s = self.claims.render(&self.history);
        let checker = super::replay::violations(&self.history, &self.report);
        if self.report.is_clean() && !self.claims.is_clean() {
            // "no violations" would contradict the store-claim lines above.
            s.push_str(checker.trim_start_matches("no violations\n"));
        } else {
            s.push_str(&checker);
        }
        s
    }
}
