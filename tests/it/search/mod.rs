//! `fencesim search`: anchored faults placed at ownership events.

mod anchored_faults;
mod modes;
mod out;
mod partitions_shards;
mod placements;
