//! JUnit XML for CI (`fencesim run --junit FILE`): one `<testcase>` per
//! scenario, failed when its expectation is not met, with the problems and
//! the command that replays the first failing seed in the failure text.
//! Written by hand: the format needed is a dozen lines, and every string
//! that reaches the file goes through [`escape`].

use std::fmt::Write;

use super::xml::esc;
use crate::suite::ScenarioResult;

pub fn render(results: &[ScenarioResult]) -> String {
    let failures = results.iter().filter(|r| !r.met()).count();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"fencesim\" tests=\"{}\" failures=\"{failures}\">",
        results.len()
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"fencesim run\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        results.len()
    );
    for r in results {
        let _ = write!(
            s,
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\"",
            esc(&r.protocol),
            esc(&r.name),
            esc(&r.path)
        );
        if r.met() {
            let _ = writeln!(s, "/>");
            continue;
        }
        let mut text = r.problems.join("\n");
        if let Some(seed) = r.replay_seed {
            let _ = write!(text, "\nreplay: {}", r.repro(seed));
        }
        let _ = writeln!(
            s,
            ">\n      <failure message=\"{}\" type=\"expectation\">{}</failure>\n    </testcase>",
            esc(r.problems.first().map_or("", String::as_str)),
            esc(&text)
        );
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
