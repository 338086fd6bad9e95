//! JUnit XML for CI (`fencesim run --junit FILE`): one `<testcase>` per
//! scenario, failed when its expectation is not met, with the problems and
//! the command that replays the first failing seed in the failure text.
//! Written by hand: the format needed is a dozen lines, and every string
//! that reaches the file goes through [`esc`]. [`suite`] is shared with
//! `fencesim live` and the live search, which fill [`Case`]s of their own.

use std::fmt::Write;

use super::xml::esc;
use crate::suite::ScenarioResult;

pub fn render(results: &[ScenarioResult]) -> String {
    let cases: Vec<Case> = results
        .iter()
        .map(|r| Case {
            classname: r.protocol.clone(),
            name: r.name.clone(),
            file: r.path.clone(),
            failure: (!r.met()).then(|| {
                let mut text = r.problems.join("\n");
                if let Some(seed) = r.replay_seed {
                    let _ = write!(text, "\nreplay: {}", r.repro(seed));
                }
                let message = r.problems.first().cloned().unwrap_or_default();
                (message, text)
            }),
            skipped: None,
        })
        .collect();
    suite("fencesim run", &cases)
}

/// One `<testcase>`: failed when `failure` holds (message, text).
pub struct Case {
    pub classname: String,
    pub name: String,
    pub file: String,
    pub failure: Option<(String, String)>,
    /// Why the case has no verdict (a live trial that could not be judged):
    /// `<skipped>`, so a CI page neither passes nor fails it.
    pub skipped: Option<String>,
}

/// A whole JUnit file: one `<testsuite>` named `suite` holding `cases`.
pub fn suite(name: &str, cases: &[Case]) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let skipped = cases
        .iter()
        .filter(|c| c.failure.is_none() && c.skipped.is_some())
        .count();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"fencesim\" tests=\"{}\" failures=\"{failures}\">",
        cases.len()
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\"{}>",
        esc(name),
        cases.len(),
        // Only a live run has cases without a verdict; other files stay as they were.
        if skipped > 0 {
            format!(" skipped=\"{skipped}\"")
        } else {
            String::new()
        }
    );
    for c in cases {
        let _ = write!(
            s,
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\"",
            esc(&c.classname),
            esc(&c.name),
            esc(&c.file)
        );
        match (&c.failure, &c.skipped) {
            (None, None) => {
                let _ = writeln!(s, "/>");
            }
            (None, Some(why)) => {
                let _ = writeln!(
                    s,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    esc(why)
                );
            }
            (Some((message, text)), _) => {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"{}\" type=\"expectation\">{}</failure>\n    </testcase>",
                    esc(message),
                    esc(text)
                );
            }
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_cannot_break_the_xml() {
        assert_eq!(
            esc("a<b & \"c\" 'd'>\u{1}"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
    }
}
