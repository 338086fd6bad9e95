//! What people read: the suite table, the replay text (options, timeline,
//! trace, violations with evidence, hash) and check-history output — and
//! the shareable report directory (`--report DIR`): a self-contained HTML
//! page with SVG timelines, a Markdown summary and `results.json`.

pub mod axis;
pub mod chart;
pub mod html;
pub mod markdown;
pub mod replay;
pub mod results;
pub mod scene;
pub mod svg;
pub mod table;
pub mod timeline;
pub mod tradeoff;
pub mod write;
pub mod xml;
