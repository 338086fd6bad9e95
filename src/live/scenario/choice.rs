//! A field that names one of a fixed set of words (a lock recipe, a write,
//! a fault kind, a protocol point, a violation kind): the word's value, or
//! an error at the field's place listing the words the live mode supports.
//! Shared by the scenario file's reading ([`super`]) and its fault tables
//! ([`super::fault`]).

use toml::Spanned;

use crate::scenario::ScenarioError;

pub(super) fn one_of<T: Copy>(
    file: &str,
    src: &str,
    v: &Spanned<String>,
    what: &str,
    names: &[(&str, T)],
) -> Result<T, ScenarioError> {
    names
        .iter()
        .find(|(n, _)| *n == v.get_ref())
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            ScenarioError::at(
                file,
                src,
                v.span(),
                format!(
                    "unsupported {what} {:?}; the live mode supports: {}",
                    v.get_ref(),
                    list.join(", ")
                ),
            )
        })
}
