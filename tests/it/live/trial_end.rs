//! A trial ends with its workers: whatever they left in flight at
//! PostgreSQL (a retried write still queued in a starved server) is ended
//! before the audit is read, so it can never land in the next trial's
//! fresh tables — and nothing else on the server is touched.

use crate::common::{live_servers_present, live_shared};
use fencesim::live::servers::{
    worker_backend_name, Postgres, Redis, Servers, TempRoot, UserServers,
};
use std::time::{Duration, Instant};

fn backends_named(pg: &mut postgres::Client, name: &str) -> i64 {
    pg.query_one(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
        &[&name],
    )
    .unwrap()
    .get(0)
}

#[test]
fn a_workers_backend_left_running_is_ended_before_the_audit_and_other_sessions_are_kept() {
    if !live_servers_present("a worker's backend left running") {
        return;
    }
    let _serial = live_shared();
    let root = TempRoot::new().unwrap();
    let redis = Redis::start(&root.path.join("redis"), Duration::from_secs(15)).unwrap();
    let (pg, _) = Postgres::start(&root.path.join("pg"), Duration::from_secs(15)).unwrap();
    let pg_url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
        pg.port
    );
    let servers = Servers::start(&UserServers {
        redis: Some(redis.url()),
        postgres: Some(pg_url.clone()),
    })
    .unwrap();
    let name = worker_backend_name(&servers.schema);

    // A worker's connection, busy with a statement that outlives the trial.
    let mut config: postgres::Config = pg_url.parse().unwrap();
    config.application_name(&name);
    let mut straggler = config.connect(postgres::NoTls).unwrap();
    let busy = std::thread::spawn(move || straggler.batch_execute("SELECT pg_sleep(600)"));
    // Someone else's session on the same server.
    let mut other = postgres::Client::connect(&pg_url, postgres::NoTls).unwrap();
    let seen = Instant::now();
    while backends_named(&mut other, &name) == 0 {
        assert!(
            seen.elapsed() < Duration::from_secs(20),
            "the worker's backend never showed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    servers.end_worker_backends().unwrap();

    assert_eq!(
        backends_named(&mut other, &name),
        0,
        "the worker's backend is gone"
    );
    let ended = busy.join().unwrap();
    assert!(
        ended.is_err(),
        "the straggler's statement was ended, not finished"
    );
    // The other session was not touched.
    let one: i32 = other.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
}
