//! What people read: the suite table, the replay text (options, timeline,
//! trace, violations with evidence, hash) and check-history output — and
//! the shareable report directory (`--report DIR`): a self-contained HTML
//! page with SVG timelines, a Markdown summary and `results.json`.
//!
//! This is the one home for rendering: the suite's text, JSON (writer and
//! reader of shard files), JUnit and Prometheus outputs, the trade-off
//! table and charts, `validate`'s text (header, table, per-seed verdicts,
//! store-claim violations), `check`'s counterexample steps (and `check
//! --code`'s), `live`'s trial
//! lines and live-vs-simulated table, `shrink`'s summary and `search`'s
//! coverage and findings live here; `suite/`, `validate/`, `check/`,
//! `model/`, `search/` and `live/` hand over data, and `cli/` prints what
//! these functions return.

pub(crate) mod axis;
pub(crate) mod campaign;
pub(crate) mod catalogue;
pub(crate) mod chart;
pub mod code_check;
pub(crate) mod doc;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod live;
pub(crate) mod live_reports;
pub(crate) mod markdown;
pub(crate) mod model_check;
pub(crate) mod production;
pub mod replay;
pub(crate) mod results;
pub mod scene;
pub mod search;
pub(crate) mod shrink;
pub mod svg;
pub(crate) mod table;
pub(crate) mod text;
pub mod timeline;
pub mod tradeoff;
pub(crate) mod validate;
pub(crate) mod write;
pub(crate) mod xml;
