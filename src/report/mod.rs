//! What people read: the suite table, the replay text (options, timeline,
//! trace, violations with evidence, hash) and check-history output — and
//! the shareable report directory (`--report DIR`): a self-contained HTML
//! page with SVG timelines, a Markdown summary and `results.json`.
//!
//! This is the one home for rendering: the suite's text, JSON (writer and
//! reader of shard files), JUnit and Prometheus outputs, the trade-off
//! table and charts, `validate`'s text (header, table, per-seed verdicts,
//! store-claim violations), `check`'s counterexample steps and `live`'s
//! trial lines and live-vs-simulated table, `shrink`'s summary live
//! here; `suite/`,
//! `validate/`, `check/`, `model/` and `live/` hand over data, and `cli/`
//! prints what these functions return.

pub mod axis;
pub mod catalogue;
pub mod chart;
pub mod html;
pub mod json;
pub mod junit;
pub mod live;
pub mod markdown;
pub mod model_check;
pub mod production;
pub mod replay;
pub mod results;
pub mod scene;
pub mod shrink;
pub mod svg;
pub mod table;
pub mod text;
pub mod timeline;
pub mod tradeoff;
pub mod validate;
pub mod write;
pub mod xml;
