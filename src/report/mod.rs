//! What people read: the suite table, the replay text (options, timeline,
//! trace, violations with evidence, hash) and check-history output — and
//! the shareable report directory (`--report DIR`): a self-contained HTML
//! page with SVG timelines, a Markdown summary and `results.json`.
//!
//! This is the one home for rendering: the suite's text, JSON (writer and
//! reader of shard files), JUnit and Prometheus outputs, the trade-off
//! table and charts, and `validate`'s per-seed verdict text live here;
//! `suite/`, `validate/` and `check/` hand over data.

pub mod axis;
pub mod catalogue;
pub mod chart;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod model_check;
pub mod production;
pub mod replay;
pub mod results;
pub mod scene;
pub mod svg;
pub mod table;
pub mod text;
pub mod timeline;
pub mod tradeoff;
pub mod validate;
pub mod write;
pub mod xml;
