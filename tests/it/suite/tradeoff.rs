//! The article's trade-off, measured: TTL moves availability (takeover
//! time, false lease loss) but only fencing moves safety.

use crate::common;

#[test]
fn fencing_separates_the_ttl_tradeoff_from_data_safety() {
    let s = common::load(&common::scenario_path("tradeoff/ttl-tradeoff.toml"));
    let rows = fencesim::suite::tradeoff::sweep(&s, &[1_000, 5_000, 20_000], 0..60, 2);
    assert_eq!(rows.len(), 6);
    let fenced: Vec<_> = rows.iter().filter(|r| r.fencing).collect();
    let unfenced: Vec<_> = rows.iter().filter(|r| !r.fencing).collect();
    assert!(fenced.iter().all(|r| r.corrupted_writes == 0), "{fenced:?}");
    assert!(
        unfenced.iter().any(|r| r.corrupted_writes > 0),
        "the unfenced twin must corrupt data: {unfenced:?}"
    );
    // Same faults, same seeds: availability does not depend on the fence.
    for (u, f) in unfenced.iter().zip(&fenced) {
        assert_eq!(
            (u.takeover_ms, u.false_lease_loss),
            (f.takeover_ms, f.false_lease_loss)
        );
    }
    // Longer TTL: slower takeover after a crash, fewer false losses under pauses.
    assert!(
        unfenced
            .windows(2)
            .all(|w| w[0].takeover_ms < w[1].takeover_ms),
        "{unfenced:?}"
    );
    assert!(
        unfenced[0].false_lease_loss > unfenced[2].false_lease_loss,
        "{unfenced:?}"
    );
    let text = fencesim::report::tradeoff::table(&rows, 60);
    assert!(
        text.contains("fenced-cas") && text.lines().count() == 7,
        "{text}"
    );
}
