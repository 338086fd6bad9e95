//! Shrinking a failing seed into a small scripted scenario.

mod regression;
