//! JUnit XML for CI (`fencesim run --junit FILE`): one `<testcase>` per
//! scenario, failed when its expectation is not met, with the problems and
//! the command that replays the first failing seed in the failure text.
//! Written by hand: the format needed is a dozen lines, and every string
//! that reaches the file goes through [`escape`].

use std::fmt::Write;

use super::ScenarioResult;

/// XML-escapes text for attributes and element content; drops characters
/// XML 1.0 cannot carry at all.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

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
            escape(&r.protocol),
            escape(&r.name),
            escape(&r.path)
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
            escape(r.problems.first().map_or("", String::as_str)),
            escape(&text)
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
            escape("a<b & \"c\" 'd'>\u{1}"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
    }
}
