//! `fencesim search`: anchored faults placed at ownership events.

mod anchored_faults;
mod partitions_shards;
mod placements;
