//! The catalogue is one table (`PROTOCOLS`); docs/scenarios.md's protocol
//! table must say what it says, row for row, both ways.

use std::collections::BTreeMap;

use fencesim::protocol::{ProtocolDef, ProtocolKind, PROTOCOLS};

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The docs row the table implies for `d`, cells trimmed.
fn expected_cells(d: &ProtocolDef) -> Vec<String> {
    let replicas = match d.replicas_range {
        Some((low, high)) => format!("{} ({low}..{high})", d.replicas_default),
        None => format!("{} (masters)", d.replicas_default),
    };
    let options = if d.options.is_empty() {
        "-".to_string()
    } else {
        let quoted: Vec<String> = d.options.iter().map(|o| format!("`{o}`")).collect();
        quoted.join(", ")
    };
    vec![
        format!("`{}`", d.id),
        yes_no(d.fenced).into(),
        yes_no(d.client_decided).into(),
        yes_no(d.native_token).into(),
        yes_no(d.effect_sink).into(),
        replicas,
        options,
        d.layout.name().into(),
    ]
}

/// The rows of the `## Protocols` table, by kind id.
fn docs_rows() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(crate::common::root().join("docs/scenarios.md"))
        .expect("docs/scenarios.md is readable");
    let section = text
        .split("\n## Protocols\n")
        .nth(1)
        .expect("docs/scenarios.md has a `## Protocols` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<String> = l
                .trim()
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect();
            (cells[0].trim_matches('`').to_string(), cells)
        })
        .collect()
}

#[test]
fn every_catalogue_row_is_in_the_docs_table_as_the_code_states_it() {
    let docs = docs_rows();
    for d in PROTOCOLS {
        let row = docs
            .get(d.id)
            .unwrap_or_else(|| panic!("docs/scenarios.md's protocol table lacks {}", d.id));
        assert_eq!(row, &expected_cells(d), "docs row of {} differs", d.id);
    }
}

#[test]
fn every_docs_table_row_names_a_catalogue_protocol() {
    let docs = docs_rows();
    assert!(!docs.is_empty(), "the docs table has no rows");
    for id in docs.keys() {
        assert!(
            ProtocolKind::from_id(id).is_some(),
            "docs/scenarios.md lists {id}, which the catalogue does not have"
        );
    }
    assert_eq!(docs.len(), PROTOCOLS.len());
}

#[test]
fn each_kind_finds_its_own_row_and_the_list_order_is_the_tables() {
    for (i, k) in ProtocolKind::ALL.into_iter().enumerate() {
        assert_eq!(k.def().kind, k);
        assert_eq!(PROTOCOLS[i].kind, k);
        assert_eq!(ProtocolKind::from_id(k.id()), Some(k));
    }
}

#[test]
fn every_option_the_table_names_is_a_documented_protocol_key() {
    let text = std::fs::read_to_string(crate::common::root().join("docs/scenarios.md"))
        .expect("docs/scenarios.md is readable");
    for d in PROTOCOLS {
        for key in d.options {
            assert!(
                text.contains(&format!("# {key} ")) || text.contains(&format!("\n{key} ")),
                "{}'s option {key} is not in the [protocol] example of docs/scenarios.md",
                d.id
            );
        }
    }
}
