//! etcd's documented v3 JSON gRPC-gateway (`POST /v3/...` on the client
//! port, keys and values base64): the client the built-in worker's lane
//! ([`super::lane`]), the account's reset and the cluster's health checks
//! talk to etcd through.
//!
//! Why the gateway and not the `etcd-client` crate: that crate generates its
//! gRPC code in a build script that needs `protoc` (etcd-client 0.21.1
//! `build.rs`: `tonic_prost_build::compile_protos`), and fencesim must build
//! on a fresh machine with `cargo build` alone. The gateway is part of
//! etcd's documented API (etcd.io "gRPC gateway"), served by etcd 3.4 on
//! the same port; requests and responses are the protobuf messages as JSON
//! (64-bit integers as strings).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::live::common::bytes::{base64, unbase64};

fn b64(s: &str) -> String {
    base64(s.as_bytes())
}

fn unb64(s: &str) -> Result<String> {
    let bytes = unbase64(s, "etcd key")?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A 64-bit integer field of a gateway response (sent as a string).
pub fn int(v: &Value, name: &str) -> Option<u64> {
    match v.get(name)? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// The smallest key greater than every key starting with `prefix`.
fn prefix_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    if let Some(last) = bytes.last_mut() {
        *last += 1;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A gateway client over a list of members: requests go to the current one
/// and move on to the next when it does not answer (killed, partitioned).
pub struct Etcd {
    endpoints: Vec<String>,
    pub(super) current: usize,
    agent: ureq::Agent,
}

impl Etcd {
    pub fn new(endpoints: Vec<String>, timeout: Duration) -> Result<Etcd> {
        if endpoints.is_empty() {
            bail!("no etcd endpoint");
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Etcd {
            endpoints,
            current: 0,
            agent,
        })
    }

    /// The member answering now (index into the endpoint list).
    pub fn current(&self) -> usize {
        self.current
    }

    /// One request to one member: Err when the member could not be
    /// reached (refused, reset, closed), Ok(Err) when it answered with an
    /// error or did not answer in time (a member cut off from the majority
    /// hangs; a client does not leave a connected member for being slow).
    fn post_to(&self, endpoint: &str, path: &str, body: &Value) -> Result<Result<Value>> {
        let sent = self
            .agent
            .post(format!("{endpoint}{path}"))
            .header("Content-Type", "application/json")
            .send(body.to_string());
        let mut resp = match sent {
            Ok(r) => r,
            Err(ureq::Error::Timeout(t)) => {
                return Ok(Err(anyhow::anyhow!(
                    "POST {endpoint}{path}: no answer ({t})"
                )))
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("POST {endpoint}{path}"))),
        };
        let status = resp.status();
        let text = resp
            .body_mut()
            .read_to_string()
            .with_context(|| format!("POST {endpoint}{path}: reading the answer"))?;
        Ok(match serde_json::from_str::<Value>(&text) {
            Ok(v) if status.is_success() && v.get("error").is_none() => Ok(v),
            _ => Err(anyhow::anyhow!("POST {endpoint}{path}: {status} {text}")),
        })
    }

    /// A request to the current member; only when it cannot be reached
    /// (killed) the next member is tried, as etcd's client balancer does.
    /// An error answer (no leader, request timed out: a member cut off from
    /// the majority) is returned as it is.
    pub fn call(&mut self, path: &str, body: &Value) -> Result<Value> {
        let mut last = None;
        for k in 0..self.endpoints.len() {
            let i = (self.current + k) % self.endpoints.len();
            match self.post_to(&self.endpoints[i], path, body) {
                Ok(answer) => {
                    self.current = i;
                    return answer;
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("no etcd endpoint")))
    }

    pub fn put(&mut self, key: &str, value: &str) -> Result<()> {
        self.call(
            "/v3/kv/put",
            &json!({ "key": b64(key), "value": b64(value) }),
        )
        .map(|_| ())
    }

    /// Deletes every key under `prefix`.
    pub fn delete_prefix(&mut self, prefix: &str) -> Result<()> {
        self.call(
            "/v3/kv/deleterange",
            &json!({ "key": b64(prefix), "range_end": b64(&prefix_end(prefix)) }),
        )
        .map(|_| ())
    }

    /// A lease of `ttl_s` seconds: its id.
    pub fn grant(&mut self, ttl_s: u64) -> Result<u64> {
        let v = self.call("/v3/lease/grant", &json!({ "TTL": ttl_s.to_string() }))?;
        int(&v, "ID").context("lease grant without ID")
    }

    /// One keep-alive of `lease`; the TTL the server reports (0: gone).
    pub fn keepalive(&mut self, lease: u64) -> Result<u64> {
        let v = self.call("/v3/lease/keepalive", &json!({ "ID": lease.to_string() }))?;
        Ok(v.get("result").and_then(|r| int(r, "TTL")).unwrap_or(0))
    }

    pub fn revoke(&mut self, lease: u64) -> Result<()> {
        self.call("/v3/lease/revoke", &json!({ "ID": lease.to_string() }))
            .map(|_| ())
    }

    /// The server-side lock: blocks until `lease` owns `name`; its key.
    pub fn lock(&mut self, name: &str, lease: u64) -> Result<String> {
        let v = self.call(
            "/v3/lock/lock",
            &json!({ "name": b64(name), "lease": lease.to_string() }),
        )?;
        unb64(
            v.get("key")
                .and_then(Value::as_str)
                .context("lock without key")?,
        )
    }

    pub fn unlock(&mut self, key: &str) -> Result<()> {
        self.call("/v3/lock/unlock", &json!({ "key": b64(key) }))
            .map(|_| ())
    }

    /// (create revision, mod revision) of `key`, None when it does not exist.
    pub fn revisions(&mut self, key: &str) -> Result<Option<(u64, u64)>> {
        let v = self.call("/v3/kv/range", &json!({ "key": b64(key) }))?;
        Ok(v.get("kvs")
            .and_then(Value::as_array)
            .and_then(|kvs| kvs.first())
            .and_then(|kv| Some((int(kv, "create_revision")?, int(kv, "mod_revision")?))))
    }
}

/// The index of the member that leads, asked of each member in turn.
pub fn leader(endpoints: &[String]) -> Option<usize> {
    let mut ids = vec![None; endpoints.len()];
    let mut leader = None;
    for (i, e) in endpoints.iter().enumerate() {
        let Ok(c) = Etcd::new(vec![e.clone()], Duration::from_millis(500)) else {
            continue;
        };
        if let Ok(Ok(v)) = c.post_to(e, "/v3/maintenance/status", &json!({})) {
            ids[i] = v.get("header").and_then(|h| int(h, "member_id"));
            leader = leader.or(int(&v, "leader"));
        }
    }
    let leader = leader?;
    ids.iter().position(|id| *id == Some(leader))
}
