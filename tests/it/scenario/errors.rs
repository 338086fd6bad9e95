//! Snapshot tests of what a user sees for a broken scenario file: file,
//! line, column, what was expected, and the offending line with a caret.
//! Refresh with `UPDATE_EXPECT=1 cargo test --release --test it scenario::errors`.

use expect_test::{expect, Expect};

const GOOD: &str = r#"schema_version = 1
name = "t"
max_time_ms = 1000
[protocol]
kind = "fenced-cas"
[lease]
ttl_ms = 100
[[worker]]
name = "A"
[[fault]]
kind = "pause"
node = "worker/A"
after = "worker/A:read_ok"
duration_ms = 10
[expect]
"#;

fn check(edit: impl Fn(&str) -> String, expected: Expect) {
    let source = edit(GOOD);
    let err = fencesim::scenario::parse(&source, "broken.toml").expect_err("must be rejected");
    expected.assert_eq(&err.to_string());
}

#[test]
fn good_file_parses() {
    fencesim::scenario::parse(GOOD, "good.toml").expect("the base file is valid");
}

#[test]
fn toml_syntax_error_points_at_the_character() {
    check(
        |s| s.replace("ttl_ms = 100", "ttl_ms = = 100"),
        expect![[r#"
            broken.toml:7:10: invalid string
            expected `"`, `'`
              |
              | ttl_ms = = 100
              |          ^"#]],
    );
}

#[test]
fn unknown_key_is_rejected_with_the_keys_expected() {
    check(
        |s| s.replace("ttl_ms = 100", "ttl_ms = 100\nttl_sec = 1"),
        expect![[r#"
            broken.toml:8:1: unknown field `ttl_sec`, expected `ttl_ms`
              |
              | ttl_sec = 1
              | ^"#]],
    );
}

#[test]
fn wrong_type_names_the_expected_type() {
    check(
        |s| s.replace("ttl_ms = 100", "ttl_ms = \"100\""),
        expect![[r#"
            broken.toml:7:10: invalid type: string "100", expected whole milliseconds from 0 to 31536000000 (one year)
              |
              | ttl_ms = "100"
              |          ^"#]],
    );
}

#[test]
fn a_number_beyond_toml_integers_says_what_was_expected() {
    check(
        |s| s.replace("ttl_ms = 100", "ttl_ms = 18446744073709551615"),
        expect![[r#"
            broken.toml:7:10: number too large: TOML integers are at most 9223372036854775807; expected a whole number in this field's range
              |
              | ttl_ms = 18446744073709551615
              |          ^"#]],
    );
}

#[test]
fn unknown_protocol_lists_the_catalogue() {
    check(
        |s| s.replace("kind = \"fenced-cas\"", "kind = \"fenced-cass\""),
        expect![[r#"
            broken.toml:5:8: unknown protocol "fenced-cass"; expected one of ttl-lease-del, redis-set-nx, check-before-write, fenced-cas, fenced-check-then-write, incr-beside-lease, consensus-generation, zk-sequential, dynamodb-heartbeat, redlock, etcd-mutex, etcd-mutex-no-recheck, pg-advisory-lock, github-2012-pair, effect-naive, effect-idempotency-key, effect-outbox, single-db, queue-claim, cache-lease, object-store-cas
              |
              | kind = "fenced-cass"
              |        ^"#]],
    );
}

#[test]
fn fault_on_unknown_node_lists_the_nodes() {
    check(
        |s| s.replace("node = \"worker/A\"", "node = \"worker/C\""),
        expect![[r#"
            broken.toml:12:8: no node named "worker/C"; expected one of worker/A, coord/0, resource/0
              |
              | node = "worker/C"
              |        ^"#]],
    );
}

#[test]
fn malformed_after_trigger_shows_the_expected_shape() {
    check(
        |s| {
            s.replace(
                "after = \"worker/A:read_ok\"",
                "after = \"worker/A read_ok\"",
            )
        },
        expect![[r#"
            broken.toml:13:9: expected "<node>:<history kind>" or "<node>:<history kind>#<n>", e.g. "worker/A:read_ok"
              |
              | after = "worker/A read_ok"
              |         ^"#]],
    );
}

#[test]
fn missing_required_field_is_named() {
    check(
        |s| s.replace("max_time_ms = 1000\n", ""),
        expect![[r#"
            broken.toml:1:1: missing field `max_time_ms`
              |
              | schema_version = 1
              | ^"#]],
    );
}

#[test]
fn field_that_does_not_apply_to_the_fault_kind_is_rejected() {
    check(
        |s| s.replace("duration_ms = 10", "duration_ms = 10\nnth = 2"),
        expect![[r#"
            broken.toml:10:1: a pause fault takes node, at_ms, after, duration_ms; `nth` does not apply
              |
              | [[fault]]
              | ^"#]],
    );
}

#[test]
fn probability_out_of_range_is_rejected() {
    check(
        |s| s.replace("[expect]", "[network]\nloss_probability = 1.5\n[expect]"),
        expect![[r#"
            broken.toml:16:20: probability 1.5 is out of range; expected a number from 0.0 to 1.0
              |
              | loss_probability = 1.5
              |                    ^"#]],
    );
}

#[test]
fn unknown_violation_kind_in_expectation_is_rejected() {
    check(
        |s| {
            s.replace(
                "[expect]\n",
                "[expect]\nmust_find = [{ kind = \"stale_writes\" }]\n",
            )
        },
        expect![[r#"
            broken.toml:16:23: unknown violation kind "stale_writes"; expected one of stale_write, lost_update, token_order, unsafe_release, liveness, duplicate_effect, two_actives, expired_renewal, superseded_effect, unissued_token
              |
              | must_find = [{ kind = "stale_writes" }]
              |                       ^"#]],
    );
}

#[test]
fn no_byte_sequence_makes_the_parser_panic() {
    // Truncations of a valid file hit every parser state; all must be errors or successes, never panics.
    for cut in 0..GOOD.len() {
        let _ = fencesim::scenario::parse(&GOOD[..cut], "cut.toml");
    }
}
