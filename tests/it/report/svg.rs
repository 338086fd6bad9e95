//! The timeline SVG, checked structurally: it parses as XML, has one lane
//! per node, draws lease bars, pauses, messages and writes, and highlights
//! exactly the records the checker cited — no more, no fewer.

use std::collections::BTreeSet;
use std::path::Path;

use fencesim::report::{replay::evidence_set, scene, svg};
use fencesim::sim::trace::What;
use fencesim::{check, scenario, sim};

struct Drawn {
    svg: String,
    evidence: BTreeSet<u64>,
    nodes: usize,
    sends: usize,
    report: check::Report,
}

fn draw(file: &str, seed: u64) -> Drawn {
    let s = scenario::load(Path::new(file)).expect("bundled scenario loads");
    let out = sim::run(&s.options, seed, true);
    let report = check::check(&out.history);
    let sc = scene::build(&out.history, &out.trace, &report, out.end_ns);
    let sends = out
        .trace
        .iter()
        .filter(|e| matches!(e.what, What::Send { .. }))
        .count();
    Drawn {
        svg: svg::render(&sc, "t", file),
        evidence: evidence_set(&report),
        nodes: out.history.nodes.len(),
        sends,
        report,
    }
}

fn groups<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| {
            n.has_tag_name("g")
                && n.attribute("class")
                    .is_some_and(|c| c.split(' ').any(|w| w == class))
        })
        .collect()
}

#[test]
fn the_stale_write_timeline_has_a_lane_per_node_and_rings_exactly_the_evidence() {
    let d = draw("scenarios/article/gc-pause-stale-write.toml", 0);
    assert!(!d.report.is_clean(), "the unsafe scenario must fail");
    let doc = roxmltree::Document::parse(&d.svg).expect("the SVG is well-formed XML");
    assert_eq!(groups(&doc, "lane").len(), d.nodes);
    let ringed: BTreeSet<u64> = groups(&doc, "evidence")
        .iter()
        .map(|g| g.attribute("data-seq").unwrap().parse().unwrap())
        .collect();
    assert!(!ringed.is_empty());
    assert_eq!(ringed, d.evidence, "highlighted == what the checker proved");
    for g in groups(&doc, "evidence") {
        assert!(
            g.children()
                .any(|c| c.has_tag_name("circle") && c.attribute("r") == Some("10")),
            "each evidence record carries a ring"
        );
    }
    assert_eq!(
        groups(&doc, "citation").len(),
        d.report.violations.len(),
        "every violation is explained under the lanes"
    );
    assert!(d.svg.contains("the older holder overwrote the newer one"));
}

#[test]
fn the_stale_write_timeline_draws_leases_the_pause_messages_and_both_accepted_writes() {
    let d = draw("scenarios/article/gc-pause-stale-write.toml", 0);
    let doc = roxmltree::Document::parse(&d.svg).unwrap();
    assert!(groups(&doc, "held").len() >= 2, "A's and B's leases");
    assert_eq!(
        groups(&doc, "expired").len(),
        1,
        "A acts on an expired lease"
    );
    assert_eq!(groups(&doc, "paused").len(), 1, "A's 12 s pause");
    assert_eq!(groups(&doc, "msg").len(), d.sends, "one arrow per send");
    assert_eq!(
        groups(&doc, "accepted").len(),
        2,
        "B's write and A's stale one"
    );
    assert!(groups(&doc, "rejected").is_empty());
}

#[test]
fn the_fenced_twin_shows_the_rejected_stale_write_and_no_evidence() {
    let d = draw("scenarios/article/gc-pause-fenced-cas.toml", 0);
    assert!(d.report.is_clean());
    assert_eq!(d.report.info.fence_rejected_total, 1);
    let doc = roxmltree::Document::parse(&d.svg).unwrap();
    assert!(
        groups(&doc, "evidence").is_empty(),
        "nothing to highlight in a clean run"
    );
    assert!(groups(&doc, "citation").is_empty());
    let rejected = groups(&doc, "rejected");
    assert!(
        rejected.iter().any(|g| g
            .children()
            .any(|c| c.text().is_some_and(|t| t.contains("rejected (fence 2)")))),
        "the resource's refusal of token 1 is labelled"
    );
    assert!(d.svg.contains("token 2"), "lease bars carry their tokens");
}

#[test]
fn dropped_messages_end_in_a_cross_instead_of_an_arrowhead() {
    // Seeds of the random-faults scenario lose messages; find one that does.
    let file = "scenarios/random/random-faults-redis-set-nx.toml";
    let s = scenario::load(Path::new(file)).unwrap();
    let seed = (0..50)
        .find(|&seed| {
            sim::run(&s.options, seed, true)
                .trace
                .iter()
                .any(|e| matches!(e.what, What::Drop { .. }))
        })
        .expect("some seed drops a message");
    let d = draw(file, seed);
    let doc = roxmltree::Document::parse(&d.svg).unwrap();
    let dropped = groups(&doc, "dropped");
    assert!(!dropped.is_empty());
    for g in dropped {
        let line = g.children().find(|c| c.has_tag_name("line")).unwrap();
        assert!(line.attribute("marker-end").is_none());
        assert!(g.children().any(|c| c.text() == Some("✗")));
    }
}
