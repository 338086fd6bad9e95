//! Escaping for text placed in HTML, SVG and XML (the reports and JUnit).
//! They embed names, explanations and file paths that come from user
//! scenario files, so every piece of text goes through [`esc`] before it
//! lands in markup.

/// Escapes `&`, `<`, `>`, `"` and `'` for element text and attribute
/// values, and drops control characters XML 1.0 cannot carry at all.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn markup_characters_are_escaped_and_text_is_kept() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(esc("worker/A ✓"), "worker/A ✓");
    }
}
