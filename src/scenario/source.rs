//! Reading an input file (scenario, model spec, history) as text, refusing
//! what would hang or mislead rather than failing later: a FIFO or device
//! (opening it for reading blocks until a writer appears, possibly never),
//! a file larger than the format can sensibly be, and bytes that are not
//! UTF-8 — reported at the line and column of the first bad byte, so the
//! message looks like every other parse error.

use std::io::Read;
use std::path::Path;

/// Why an input file could not be read as text.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a regular file ({what}); expected a file to read")]
    NotAFile { path: String, what: &'static str },
    #[error("{path}: {size} bytes is too large; expected at most {max} bytes")]
    TooLarge { path: String, size: u64, max: u64 },
    #[error("{path}:{line}:{column}: invalid UTF-8 (byte 0x{byte:02x}); expected UTF-8 text")]
    Utf8 {
        path: String,
        line: usize,
        column: usize,
        byte: u8,
    },
}

/// Reads `path` as UTF-8 text of at most `max_bytes` (None: no limit).
pub fn read_text(path: &Path, max_bytes: Option<u64>) -> Result<String, SourceError> {
    let shown = || path.display().to_string();
    let io = |source| SourceError::Io {
        path: shown(),
        source,
    };
    // Follows symlinks: the question is what opening it would do.
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(SourceError::NotAFile {
            path: shown(),
            what: kind_of(&meta),
        });
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    match max_bytes {
        Some(max) => {
            file.take(max + 1).read_to_end(&mut bytes).map_err(io)?;
            if bytes.len() as u64 > max {
                return Err(SourceError::TooLarge {
                    path: shown(),
                    size: meta.len().max(max + 1),
                    max,
                });
            }
        }
        None => {
            let mut file = file;
            file.read_to_end(&mut bytes).map_err(io)?;
        }
    }
    decode(bytes, &shown())
}

/// `bytes` as a `String`, or where the first invalid byte is.
pub fn decode(bytes: Vec<u8>, path: &str) -> Result<String, SourceError> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let good = e.utf8_error().valid_up_to();
        // The prefix is valid by definition.
        let before = std::str::from_utf8(&bytes[..good]).unwrap_or("");
        let (line, column) = line_column(before, before.len());
        SourceError::Utf8 {
            path: path.to_string(),
            line,
            column,
            byte: bytes[good],
        }
    })
}

/// 1-based line and column (in characters) of byte offset `at` in `text`.
pub fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A serde/TOML parser message in the file format's words: Rust types
/// (`u64`, `struct ProtocolSection`) and serde's data-model names
/// (`sequence`, `map`) become what the user writes. `tables` names each
/// schema struct (`("ProtocolSection", "a [protocol] table")`); an
/// unlisted struct is "a table". An empty message (the parser stopped at
/// the end of the file) becomes one that says what was expected.
pub fn plain_words(message: &str, tables: &[(&str, &str)]) -> String {
    let message = message.trim();
    if message.is_empty() {
        return "unexpected end of the file; expected a value (a string, number, boolean, array or table)".into();
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("struct ") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "struct ".len()..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..end];
        out.push_str(
            tables
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("a table", |(_, text)| text),
        );
        rest = &after[end..];
    }
    out.push_str(rest);
    const WORDS: [(&str, &str); 16] = [
        // The TOML reader's own words for an integer beyond i64.
        (
            "number too large to fit in target type",
            "number too large: TOML integers are at most 9223372036854775807; expected a whole number in this field's range",
        ),
        (
            "number too small to fit in target type",
            "number too small: TOML integers are at least -9223372036854775808; expected a whole number in this field's range",
        ),
        (
            "expected u64",
            "expected a whole number from 0 to 18446744073709551615",
        ),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected usize", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected a table"),
        ("invalid type: sequence", "invalid type: array"),
        ("invalid type: map", "invalid type: table (or date)"),
        ("wanted exactly 1 element", "expected exactly one value"),
        ("unit value", "nothing"),
    ];
    for (from, to) in WORDS {
        if out.contains(from) {
            out = out.replace(from, to);
        }
    }
    out
}

#[cfg(unix)]
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a plain file"
    }
}

#[cfg(not(unix))]
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    if meta.is_dir() {
        "a directory"
    } else {
        "not a plain file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_located_at_its_line_and_column() {
        let err = decode(b"ab\ncd\xffe".to_vec(), "f.toml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.toml:2:3: invalid UTF-8 (byte 0xff); expected UTF-8 text"
        );
        let err = decode(b"\xc3(".to_vec(), "f.toml").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("f.toml:1:1: invalid UTF-8 (byte 0xc3)"));
        assert_eq!(decode(b"caf\xc3\xa9".to_vec(), "f").unwrap(), "café");
    }

    #[test]
    fn parser_messages_lose_rust_type_names() {
        let tables = [("ProtocolSection", "a [protocol] table")];
        assert_eq!(
            plain_words(
                "invalid type: string \"x\", expected struct ProtocolSection",
                &tables
            ),
            "invalid type: string \"x\", expected a [protocol] table"
        );
        assert_eq!(
            plain_words("invalid value: integer `-1`, expected u64", &tables),
            "invalid value: integer `-1`, expected a whole number from 0 to 18446744073709551615"
        );
        assert_eq!(
            plain_words("expected struct Other", &tables),
            "expected a table"
        );
        assert!(plain_words("  ", &tables).contains("expected a value"));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(line_column("é=x\nab", 2), (1, 2));
        assert_eq!(line_column("é=x\nab", 6), (2, 2));
        assert_eq!(line_column("é", 1), (1, 1));
    }
}
