//! The checkers (`src/check/`, `src/oracle/`) on hand-written histories
//! and on generated ones, where a second checker must agree.

mod differential;
mod histories;
mod regressions;
