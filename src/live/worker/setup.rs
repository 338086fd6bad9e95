//! What every lane of a built-in worker shares: its arguments, its Redis
//! lane's settings, its gate (the protocol point it stops at for the
//! harness) and its PostgreSQL connection's set-up.

use std::io::BufRead;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::args::WorkerArgs;
use crate::live::emit::emit_line;
use crate::live::fault::Point;
use crate::live::record::Line;
use crate::live::redis::lane::RedisConfig;

pub(super) fn wait_line() -> Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading stdin")?;
    Ok(())
}

/// What every lane needs to turn a message into server calls.
pub(super) struct Setup {
    pub(super) args: WorkerArgs,
    /// The Redis lanes' settings (unused with another lock).
    pub(super) redis: Arc<RedisConfig>,
}

impl Setup {
    /// The pause/crash point: tell the harness, then wait until it has acted.
    pub(super) fn gate(&self, step: Point) -> Result<()> {
        if self.args.gate == Some(step) {
            emit_line(&Line::Gate { point: step });
            wait_line()?;
        }
        Ok(())
    }

    pub(super) fn connect_pg(&self) -> Result<postgres::Client> {
        let mut config: postgres::Config = (self.args.postgres.parse())
            .with_context(|| format!("PostgreSQL connection string {:?}", self.args.postgres))?;
        // The harness ends this trial's backends by this name when its workers are gone.
        let schema = self.args.schema.as_deref().unwrap_or("public");
        config.application_name(&crate::live::servers::worker_backend_name(schema));
        let mut pg = config
            .connect(postgres::NoTls)
            .context("connecting to PostgreSQL")?;
        if let Some(schema) = &self.args.schema {
            pg.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
        }
        Ok(pg)
    }
}
