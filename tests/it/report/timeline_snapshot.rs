//! Snapshot of the article's run as `fencesim replay` draws it. A change
//! here is a change users see: review it, then refresh with
//! `UPDATE_EXPECT=1 cargo test --release --test it report::timeline_snapshot`.

use crate::common;

use expect_test::expect;
use fencesim::{check, report, sim};

#[test]
fn article_gc_pause_timeline_shows_the_stale_write_with_its_evidence() {
    let s = common::load(&common::scenario_path("article/gc-pause-stale-write.toml"));
    let out = sim::run(&s.options, 7, false);
    let r = check::check(&out.history);
    let text = report::timeline::render(&out.history, &report::replay::evidence_set(&r));
    expect![[r#"
           true time   worker/A                worker/B                lease (coord/0)         resource/0
                       ──────────────────────  ──────────────────────  ──────────────────────  ──────────────────────
        >> 0.001557s   │                       │                       grant g1                │
           0.004612s   acquired g1             │                       │                       │
        >> 0.006936s   read -> 0               │                       │                       │
           0.006936s   ── paused 12000ms ──    │                       │                       │
           10.001557s  ┆ paused                │                       expires g1              │
        >> 10.113265s  ┆ paused                │                       grant g2                │
           10.118185s  ┆ paused                acquired g2             │                       │
           10.123138s  ┆ paused                read -> 0               │                       │
           10.223138s  ┆ paused                write 2001              │                       │
        >> 10.227561s  ┆ paused                │                       │                       ✓ 2001 stored
           10.229888s  ┆ paused                release g2              │                       │
           10.233711s  ┆ paused                │                       released g2             │
           10.235144s  ┆ paused                done                    │                       │
           12.006936s  ── resumes ──           │                       │                       │
           12.006936s  write 1001              │                       │                       │
        >> 12.008015s  │                       │                       │                       ✓ 1001 stored
           12.010054s  release g1              │                       │                       │
           12.014168s  │                       │                       release g1: none        │
           12.017769s  done                    │                       │                       │
    "#]]
    .assert_eq(&text);
}

#[test]
fn article_gc_pause_verdict_explains_the_stale_write() {
    let s = common::load(&common::scenario_path("article/gc-pause-stale-write.toml"));
    let out = sim::run(&s.options, 7, false);
    let r = check::check(&out.history);
    expect![[r#"
        VIOLATION stale_write on key doc: resource/0 accepted op 1001 of generation 1 at 12.008015s after op 2001 of generation 2 (#168): the older holder overwrote the newer one
            #7        0.001557s coord/0      grant_issued grant=1 key=doc
            #152     10.113265s coord/0      grant_issued grant=2 key=doc
            #168     10.227561s resource/0   write_accepted op=2001 value=2001 key=doc
            #186     12.008015s resource/0   write_accepted op=1001 value=1001 key=doc
        VIOLATION lost_update on key doc: op 1001 read value 0 (#17) but its write replaced value 2001, which it never saw: op 2001's update is lost
            #17       0.006936s worker/A     read_ok op=1001 value=0 key=doc
            #168     10.227561s resource/0   write_accepted op=2001 value=2001 key=doc
            #186     12.008015s resource/0   write_accepted op=1001 value=1001 key=doc
        info: writes_accepted=2 stale_attempts=1 fence_rejected_total=0 fence_rejected_same_generation=0 late_writes=0 overlaps=1 overlap_ms=111
    "#]].assert_eq(&report::replay::violations(&out.history, &r));
}
