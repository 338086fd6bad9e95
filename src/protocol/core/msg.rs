//! The lock domain's messages, shared by every built-in protocol.
//!
//! Three roles talk: workers ask the coordinator for leases and the resource
//! for reads and writes. Every message is a small `Copy` value so the
//! simulator can move millions of them per second without allocating.
//!
//! Identity versus order: `owner` is the lease holder's nonce (Redis's
//! "random value"). It says *which* acquisition a lease belongs to, but has
//! no order. `token` is the fencing token: an order the resource can check.
//! Protocols without fencing send `token: None`.

/// A lock key / protected document. Scenarios name keys; ids are indexes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Key(pub u16);

/// An operation id. Every write carries its op id as the value it stores, so
/// a read tells exactly which write it saw. `OpId(0)` is the initial value.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct OpId(pub u64);

impl OpId {
    pub const INITIAL: OpId = OpId(0);
}

/// A fencing token (a lock generation as the coordinator numbers it).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Token(pub u64);

/// A request id, echoed in replies so a client can drop stale ones.
pub type ReqId = u32;

/// Request ids carry the sender's incarnation (bits 20..31; bit 31 is left
/// to the worker's renewals) above a per-incarnation counter: a node that
/// restarts and counts again from 1 must never take a reply meant for its
/// previous incarnation — matched on the id alone, it would act on an
/// answer to a request it never sent. The first incarnation (0) keeps the
/// plain ids 1, 2, 3…
pub const REQ_INCARNATION_SHIFT: u32 = 20;
const REQ_COUNTER_MASK: ReqId = (1 << REQ_INCARNATION_SHIFT) - 1;
const REQ_INCARNATION_MASK: ReqId = (1 << (31 - REQ_INCARNATION_SHIFT)) - 1;

/// The first request id of `incarnation` (0 on first boot).
pub fn first_req(incarnation: u32) -> ReqId {
    ((incarnation & REQ_INCARNATION_MASK) << REQ_INCARNATION_SHIFT) | 1
}

/// The id after `req` within the same incarnation (the counter wraps, the
/// incarnation bits stay).
pub fn next_req(req: ReqId) -> ReqId {
    (req & !REQ_COUNTER_MASK) | (req.wrapping_add(1) & REQ_COUNTER_MASK)
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Msg {
    // worker -> coordinator
    Acquire {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    Release {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    /// Heartbeat: extend the lease held under `owner` by a full TTL.
    Renew {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    // coordinator -> worker
    Granted {
        req: ReqId,
        key: Key,
        owner: u64,
        token: Option<Token>,
        ttl_ns: u64,
    },
    Busy {
        req: ReqId,
        key: Key,
    },
    /// `removed` is the owner nonce of the lease record the release deleted.
    Released {
        req: ReqId,
        key: Key,
        removed: Option<u64>,
    },
    /// The lease of `owner` now runs `ttl_ns` from the coordinator's step.
    Renewed {
        req: ReqId,
        key: Key,
        owner: u64,
        ttl_ns: u64,
    },
    /// The lease is gone (expired, or someone else's now): the holder lost it.
    RenewFailed {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    // worker -> resource
    Read {
        req: ReqId,
        key: Key,
        op: OpId,
        token: Option<Token>,
    },
    Write {
        req: ReqId,
        key: Key,
        op: OpId,
        token: Option<Token>,
        value: OpId,
    },
    // resource -> worker
    ReadOk {
        req: ReqId,
        key: Key,
        op: OpId,
        value: OpId,
    },
    ReadRejected {
        req: ReqId,
        key: Key,
        op: OpId,
        fence: Token,
    },
    WriteOk {
        req: ReqId,
        key: Key,
        op: OpId,
    },
    WriteRejected {
        req: ReqId,
        key: Key,
        op: OpId,
        fence: Token,
    },
    // coordinator replica <-> replica
    /// Asynchronous replication (Redis primary -> replica): the primary's
    /// INCR counter and its lease on `key` (owner 0: none), as of now.
    Replicate {
        key: Key,
        counter: u64,
        owner: u64,
        token: Option<Token>,
        expires_wall_ns: i64,
    },
    /// Quorum commit of a generation before it is handed out (Chubby).
    Propose {
        gen: u64,
    },
    Accepted {
        gen: u64,
        ok: bool,
    },
    /// A newly promoted primary asks every replica for the highest
    /// generation it accepted; it serves only after a majority answered.
    QueryMax,
    MaxIs {
        gen: u64,
    },
    /// The failover orchestrator (Sentinel, an election) makes a backup
    /// primary. Sent by the harness on a `failover` fault.
    Promote,
    // ZooKeeper (src/protocol/zookeeper.rs). A session is the client's
    // acquisition nonce; any request from it keeps it alive.
    /// `create(lock/lock-, EPHEMERAL_SEQUENTIAL)`; idempotent per session
    /// (Curator's protected mode), so a retransmission makes no second node.
    ZkCreate {
        req: ReqId,
        key: Key,
        session: u64,
    },
    ZkCreated {
        req: ReqId,
        key: Key,
        session: u64,
        seq: u64,
    },
    /// `getChildren(lock, watch)` as seen by the owner of node `seq`.
    ZkGetChildren {
        req: ReqId,
        key: Key,
        session: u64,
        seq: u64,
        watch: bool,
    },
    /// The children as the recipe reads them: the lowest sequence, the
    /// highest one below `seq` (0: none), and whether `seq` still exists.
    ZkChildren {
        req: ReqId,
        key: Key,
        lowest: u64,
        pred: u64,
        mine: bool,
    },
    /// `exists(lock/<seq>, watch = true)`.
    ZkExists {
        req: ReqId,
        key: Key,
        session: u64,
        seq: u64,
    },
    ZkStat {
        req: ReqId,
        key: Key,
        seq: u64,
        exists: bool,
    },
    /// A watch fired: node `seq` was deleted (a child of the lock node changed).
    ZkWatch {
        key: Key,
        seq: u64,
    },
    /// Client heartbeat.
    ZkPing {
        key: Key,
        session: u64,
    },
    /// `delete(lock/<seq>)` and close the session: the release.
    ZkDelete {
        req: ReqId,
        key: Key,
        session: u64,
        seq: u64,
    },
    ZkDeleted {
        req: ReqId,
        key: Key,
    },
    /// The session expired on the server: its ephemeral nodes are gone.
    ZkSessionExpired {
        req: ReqId,
        key: Key,
        session: u64,
    },
    // DynamoDB lock table (src/protocol/dynamodb.rs).
    /// `GetItem` (consistent read) of the lock item.
    DdbGet {
        req: ReqId,
        key: Key,
    },
    /// The item: its owner (0: no item) and record version number.
    DdbItem {
        req: ReqId,
        key: Key,
        owner: u64,
        rvn: u64,
    },
    /// Conditional `PutItem`: only if the item's RVN is `expect_rvn`
    /// (0: only if there is no item).
    DdbPut {
        req: ReqId,
        key: Key,
        owner: u64,
        rvn: u64,
        expect_rvn: u64,
    },
    /// `fence`: the key's owner-change counter after the put.
    DdbPutResult {
        req: ReqId,
        key: Key,
        ok: bool,
        fence: u64,
    },
    /// Conditional `DeleteItem` on owner and RVN: the release.
    DdbDelete {
        req: ReqId,
        key: Key,
        owner: u64,
        rvn: u64,
    },
    DdbDeleted {
        req: ReqId,
        key: Key,
        ok: bool,
    },
    // Redlock: client <-> each independent Redis master (src/protocol/redlock.rs).
    /// `SET key <owner> NX PX <ttl>`.
    RedisSetNx {
        req: ReqId,
        key: Key,
        owner: u64,
        ttl_ns: u64,
    },
    /// `OK` (`ok`) or nil: the key exists and has not expired on the master's clock.
    RedisSetNxResult {
        req: ReqId,
        key: Key,
        ok: bool,
    },
    /// The compare-and-delete script: `DEL key` only if its value is `owner`.
    RedisCad {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    RedisCadResult {
        req: ReqId,
        key: Key,
        deleted: bool,
    },
    // etcd (src/protocol/etcd.rs). A lease id is the client's acquisition
    // nonce (`LeaseGrant` lets the client choose the ID); a revision is the
    // store's global revision counter.
    /// `LeaseGrant(TTL, ID)`: the lock session's lease.
    EtcdLeaseGrant {
        req: ReqId,
        key: Key,
        lease: u64,
        ttl_ns: u64,
    },
    /// `ttl_ns` 0: refused (the ID belonged to a lease that is gone).
    EtcdLeaseGranted {
        req: ReqId,
        key: Key,
        lease: u64,
        ttl_ns: u64,
    },
    /// The Mutex's Lock transaction: if `prefix/<lease>` does not exist, put
    /// it bound to the lease; read its create revision and the lowest create
    /// revision under the prefix (the owner).
    EtcdLockTxn {
        req: ReqId,
        key: Key,
        lease: u64,
    },
    /// `my_rev` 0: the put failed, the lease was not found.
    EtcdTxnResult {
        req: ReqId,
        key: Key,
        my_rev: u64,
        owner_rev: u64,
    },
    /// waitDeletes: `Get(prefix, WithLastCreate, WithMaxCreateRev(my_rev - 1))`
    /// and a watch, from that read's revision, on the key it returns.
    EtcdWaitDeletes {
        req: ReqId,
        key: Key,
        my_rev: u64,
    },
    /// The create revision of the key just before mine (0: none left —
    /// waitDeletes returns).
    EtcdPredecessor {
        req: ReqId,
        key: Key,
        pred_rev: u64,
    },
    /// A watch event: the key created at `rev` was deleted.
    EtcdDeleteEvent {
        key: Key,
        rev: u64,
    },
    /// The re-check of etcd PR #11408: `Get(prefix/<lease>)`.
    EtcdGetOwn {
        req: ReqId,
        key: Key,
        lease: u64,
    },
    /// The own key's create revision (0: it is gone).
    EtcdOwnKey {
        req: ReqId,
        key: Key,
        create_rev: u64,
    },
    /// `LeaseKeepAlive`.
    EtcdKeepAlive {
        key: Key,
        lease: u64,
    },
    /// `LeaseRevoke`, deleting the keys bound to the lease: Unlock and
    /// Session.Close in one request.
    EtcdRevoke {
        req: ReqId,
        key: Key,
        lease: u64,
    },
    EtcdRevoked {
        req: ReqId,
        key: Key,
    },
    // worker or outbox dispatcher -> effect sink (email / payment provider)
    /// Perform the irreversible effect of `op`; `idem_key` is the provider's
    /// idempotency key (`None`: the caller sends none).
    Effect {
        req: ReqId,
        key: Key,
        op: OpId,
        idem_key: Option<u64>,
    },
    /// `performed`: false when the provider recognised the key and did nothing.
    EffectOk {
        req: ReqId,
        key: Key,
        op: OpId,
        performed: bool,
    },
    // outbox dispatcher <-> store
    /// Mark `delivered` delivered (`OpId::INITIAL`: nothing), then ask for
    /// the oldest undelivered outbox entry — one round trip, so an
    /// acknowledgement can never arrive after the poll that follows it.
    OutboxPoll {
        req: ReqId,
        delivered: OpId,
    },
    /// The oldest undelivered entry (`op` = `OpId::INITIAL`: none).
    OutboxEntry {
        req: ReqId,
        key: Key,
        op: OpId,
    },
    // active/passive pair (src/protocol/active_passive.rs), node <-> peer
    /// The active's heartbeat, with the epoch it acts under.
    PairHeartbeat {
        key: Key,
        epoch: u64,
    },
    /// STONITH ("shoot the other node in the head"): the fencing command a
    /// passive sends before it takes over; its receiver powers off.
    Stonith {
        key: Key,
        epoch: u64,
    },
    // pair node -> storage: SCSI-3 persistent reservation PREEMPT
    /// Raise the storage's fence for `key` to `epoch` (if not below it):
    /// from now on, writes under older epochs are refused.
    Reserve {
        req: ReqId,
        key: Key,
        epoch: u64,
    },
    /// `ok`: the fence is now `fence` = the reserved epoch; otherwise a
    /// newer epoch holds it.
    Reserved {
        req: ReqId,
        key: Key,
        ok: bool,
        fence: u64,
    },
}

impl Msg {
    /// The wire name, as in the trace and the JSON-lines protocol.
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Acquire { .. } => "acquire",
            Msg::Release { .. } => "release",
            Msg::Granted { .. } => "acquire_ok",
            Msg::Busy { .. } => "acquire_busy",
            Msg::Released { .. } => "release_ok",
            Msg::Read { .. } => "read",
            Msg::Write { .. } => "write",
            Msg::ReadOk { .. } => "read_ok",
            Msg::ReadRejected { .. } => "read_rejected",
            Msg::WriteOk { .. } => "write_ok",
            Msg::WriteRejected { .. } => "write_rejected",
            Msg::Renew { .. } => "renew",
            Msg::Renewed { .. } => "renew_ok",
            Msg::RenewFailed { .. } => "renew_failed",
            Msg::Replicate { .. } => "replicate",
            Msg::Propose { .. } => "propose",
            Msg::Accepted { .. } => "accepted",
            Msg::QueryMax => "query_max",
            Msg::MaxIs { .. } => "max_is",
            Msg::Promote => "promote",
            Msg::ZkCreate { .. } => "zk_create",
            Msg::ZkCreated { .. } => "zk_created",
            Msg::ZkGetChildren { .. } => "zk_get_children",
            Msg::ZkChildren { .. } => "zk_children",
            Msg::ZkExists { .. } => "zk_exists",
            Msg::ZkStat { .. } => "zk_stat",
            Msg::ZkWatch { .. } => "zk_watch",
            Msg::ZkPing { .. } => "zk_ping",
            Msg::ZkDelete { .. } => "zk_delete",
            Msg::ZkDeleted { .. } => "zk_deleted",
            Msg::ZkSessionExpired { .. } => "zk_session_expired",
            Msg::DdbGet { .. } => "ddb_get",
            Msg::DdbItem { .. } => "ddb_item",
            Msg::DdbPut { .. } => "ddb_put",
            Msg::DdbPutResult { .. } => "ddb_put_result",
            Msg::DdbDelete { .. } => "ddb_delete",
            Msg::DdbDeleted { .. } => "ddb_deleted",
            Msg::RedisSetNx { .. } => "redis_set_nx",
            Msg::RedisSetNxResult { .. } => "redis_set_nx_result",
            Msg::RedisCad { .. } => "redis_cad",
            Msg::RedisCadResult { .. } => "redis_cad_result",
            Msg::EtcdLeaseGrant { .. } => "etcd_lease_grant",
            Msg::EtcdLeaseGranted { .. } => "etcd_lease_granted",
            Msg::EtcdLockTxn { .. } => "etcd_lock_txn",
            Msg::EtcdTxnResult { .. } => "etcd_txn_result",
            Msg::EtcdWaitDeletes { .. } => "etcd_wait_deletes",
            Msg::EtcdPredecessor { .. } => "etcd_predecessor",
            Msg::EtcdDeleteEvent { .. } => "etcd_delete_event",
            Msg::EtcdGetOwn { .. } => "etcd_get_own",
            Msg::EtcdOwnKey { .. } => "etcd_own_key",
            Msg::EtcdKeepAlive { .. } => "etcd_keepalive",
            Msg::EtcdRevoke { .. } => "etcd_revoke",
            Msg::EtcdRevoked { .. } => "etcd_revoked",
            Msg::Effect { .. } => "effect",
            Msg::EffectOk { .. } => "effect_ok",
            Msg::OutboxPoll { .. } => "outbox_poll",
            Msg::OutboxEntry { .. } => "outbox_entry",
            Msg::PairHeartbeat { .. } => "pair_heartbeat",
            Msg::Stonith { .. } => "stonith",
            Msg::Reserve { .. } => "reserve",
            Msg::Reserved { .. } => "reserved",
        }
    }

    /// A stable small integer per variant, used by the binary trace encoding.
    pub fn tag(&self) -> u8 {
        match self {
            Msg::Acquire { .. } => 1,
            Msg::Release { .. } => 2,
            Msg::Granted { .. } => 3,
            Msg::Busy { .. } => 4,
            Msg::Released { .. } => 5,
            Msg::Read { .. } => 6,
            Msg::Write { .. } => 7,
            Msg::ReadOk { .. } => 8,
            Msg::ReadRejected { .. } => 9,
            Msg::WriteOk { .. } => 10,
            Msg::WriteRejected { .. } => 11,
            Msg::Renew { .. } => 12,
            Msg::Renewed { .. } => 13,
            Msg::RenewFailed { .. } => 14,
            Msg::Replicate { .. } => 15,
            Msg::Propose { .. } => 16,
            Msg::Accepted { .. } => 17,
            Msg::QueryMax => 18,
            Msg::MaxIs { .. } => 19,
            Msg::Promote => 20,
            Msg::ZkCreate { .. } => 21,
            Msg::ZkCreated { .. } => 22,
            Msg::ZkGetChildren { .. } => 23,
            Msg::ZkChildren { .. } => 24,
            Msg::ZkExists { .. } => 25,
            Msg::ZkStat { .. } => 26,
            Msg::ZkWatch { .. } => 27,
            Msg::ZkPing { .. } => 28,
            Msg::ZkDelete { .. } => 29,
            Msg::ZkDeleted { .. } => 30,
            Msg::ZkSessionExpired { .. } => 31,
            Msg::DdbGet { .. } => 32,
            Msg::DdbItem { .. } => 33,
            Msg::DdbPut { .. } => 34,
            Msg::DdbPutResult { .. } => 35,
            Msg::DdbDelete { .. } => 36,
            Msg::DdbDeleted { .. } => 37,
            // New tags, so existing golden trace hashes do not move.
            Msg::RedisSetNx { .. } => 60,
            Msg::RedisSetNxResult { .. } => 61,
            Msg::RedisCad { .. } => 62,
            Msg::RedisCadResult { .. } => 63,
            Msg::EtcdLeaseGrant { .. } => 70,
            Msg::EtcdLeaseGranted { .. } => 71,
            Msg::EtcdLockTxn { .. } => 72,
            Msg::EtcdTxnResult { .. } => 73,
            Msg::EtcdWaitDeletes { .. } => 74,
            Msg::EtcdPredecessor { .. } => 75,
            Msg::EtcdDeleteEvent { .. } => 76,
            Msg::EtcdGetOwn { .. } => 77,
            Msg::EtcdOwnKey { .. } => 78,
            Msg::EtcdKeepAlive { .. } => 79,
            Msg::EtcdRevoke { .. } => 80,
            Msg::EtcdRevoked { .. } => 81,
            Msg::Effect { .. } => 40,
            Msg::EffectOk { .. } => 41,
            Msg::OutboxPoll { .. } => 42,
            Msg::OutboxEntry { .. } => 43,
            Msg::PairHeartbeat { .. } => 44,
            Msg::Stonith { .. } => 45,
            Msg::Reserve { .. } => 46,
            Msg::Reserved { .. } => 47,
        }
    }

    /// The key a message is about (`Key(0)` for replica-internal messages,
    /// which are about the coordinator's state as a whole).
    pub fn key(&self) -> Key {
        match *self {
            Msg::Propose { .. }
            | Msg::Accepted { .. }
            | Msg::QueryMax
            | Msg::MaxIs { .. }
            | Msg::Promote
            | Msg::OutboxPoll { .. } => Key(0),
            Msg::Acquire { key, .. }
            | Msg::Release { key, .. }
            | Msg::Granted { key, .. }
            | Msg::Busy { key, .. }
            | Msg::Released { key, .. }
            | Msg::Read { key, .. }
            | Msg::Write { key, .. }
            | Msg::ReadOk { key, .. }
            | Msg::ReadRejected { key, .. }
            | Msg::WriteOk { key, .. }
            | Msg::WriteRejected { key, .. }
            | Msg::Renew { key, .. }
            | Msg::Renewed { key, .. }
            | Msg::RenewFailed { key, .. }
            | Msg::Replicate { key, .. }
            | Msg::ZkCreate { key, .. }
            | Msg::ZkCreated { key, .. }
            | Msg::ZkGetChildren { key, .. }
            | Msg::ZkChildren { key, .. }
            | Msg::ZkExists { key, .. }
            | Msg::ZkStat { key, .. }
            | Msg::ZkWatch { key, .. }
            | Msg::ZkPing { key, .. }
            | Msg::ZkDelete { key, .. }
            | Msg::ZkDeleted { key, .. }
            | Msg::ZkSessionExpired { key, .. }
            | Msg::DdbGet { key, .. }
            | Msg::DdbItem { key, .. }
            | Msg::DdbPut { key, .. }
            | Msg::DdbPutResult { key, .. }
            | Msg::DdbDelete { key, .. }
            | Msg::DdbDeleted { key, .. }
            | Msg::RedisSetNx { key, .. }
            | Msg::RedisSetNxResult { key, .. }
            | Msg::RedisCad { key, .. }
            | Msg::RedisCadResult { key, .. }
            | Msg::EtcdLeaseGrant { key, .. }
            | Msg::EtcdLeaseGranted { key, .. }
            | Msg::EtcdLockTxn { key, .. }
            | Msg::EtcdTxnResult { key, .. }
            | Msg::EtcdWaitDeletes { key, .. }
            | Msg::EtcdPredecessor { key, .. }
            | Msg::EtcdDeleteEvent { key, .. }
            | Msg::EtcdGetOwn { key, .. }
            | Msg::EtcdOwnKey { key, .. }
            | Msg::EtcdKeepAlive { key, .. }
            | Msg::EtcdRevoke { key, .. }
            | Msg::EtcdRevoked { key, .. }
            | Msg::Effect { key, .. }
            | Msg::EffectOk { key, .. }
            | Msg::OutboxEntry { key, .. }
            | Msg::PairHeartbeat { key, .. }
            | Msg::Stonith { key, .. }
            | Msg::Reserve { key, .. }
            | Msg::Reserved { key, .. } => key,
        }
    }

    /// The names of [`Msg::words`] for the real-system protocols' messages,
    /// which the trace renders generically (`""`: not shown). Other
    /// messages have hand-written renderings and answer all blanks.
    pub fn field_names(&self) -> [&'static str; 5] {
        match self {
            Msg::ZkCreate { .. } | Msg::ZkSessionExpired { .. } => ["req", "", "session", "", ""],
            Msg::ZkCreated { .. } | Msg::ZkExists { .. } | Msg::ZkDelete { .. } => {
                ["req", "", "session", "seq", ""]
            }
            Msg::ZkGetChildren { .. } => ["req", "", "session", "seq", "watch"],
            Msg::ZkChildren { .. } => ["req", "", "lowest", "pred", "mine"],
            Msg::ZkStat { .. } => ["req", "", "seq", "exists", ""],
            Msg::ZkWatch { .. } => ["", "deleted", "", "", ""],
            Msg::ZkPing { .. } => ["", "session", "", "", ""],
            Msg::ZkDeleted { .. } | Msg::DdbGet { .. } => ["req", "", "", "", ""],
            Msg::DdbItem { .. } | Msg::DdbDelete { .. } => ["req", "", "owner", "rvn", ""],
            Msg::DdbPut { .. } => ["req", "", "owner", "rvn", "expect_rvn"],
            Msg::DdbPutResult { .. } => ["req", "", "ok", "fence", ""],
            Msg::DdbDeleted { .. } => ["req", "", "ok", "", ""],
            Msg::RedisSetNx { .. } => ["req", "", "owner", "ttl_ns", ""],
            Msg::RedisSetNxResult { .. } => ["req", "", "ok", "", ""],
            Msg::RedisCad { .. } => ["req", "", "owner", "", ""],
            Msg::RedisCadResult { .. } => ["req", "", "deleted", "", ""],
            Msg::EtcdLeaseGrant { .. } | Msg::EtcdLeaseGranted { .. } => {
                ["req", "", "lease", "ttl_ns", ""]
            }
            Msg::EtcdLockTxn { .. } | Msg::EtcdGetOwn { .. } | Msg::EtcdRevoke { .. } => {
                ["req", "", "lease", "", ""]
            }
            Msg::EtcdTxnResult { .. } => ["req", "", "my_rev", "owner_rev", ""],
            Msg::EtcdWaitDeletes { .. } => ["req", "", "my_rev", "", ""],
            Msg::EtcdPredecessor { .. } => ["req", "", "pred_rev", "", ""],
            Msg::EtcdDeleteEvent { .. } => ["", "deleted_rev", "", "", ""],
            Msg::EtcdOwnKey { .. } => ["req", "", "create_rev", "", ""],
            Msg::EtcdKeepAlive { .. } => ["", "lease", "", "", ""],
            Msg::EtcdRevoked { .. } => ["req", "", "", "", ""],
            Msg::PairHeartbeat { .. } | Msg::Stonith { .. } => ["", "epoch", "", "", ""],
            Msg::Reserve { .. } => ["req", "", "epoch", "", ""],
            Msg::Reserved { .. } => ["req", "", "ok", "fence", ""],
            _ => [""; 5],
        }
    }

    /// Every field as a fixed list of words, in declaration order; absent
    /// options encode as 0 (tokens start at 1). The trace hash and the
    /// text renderer both read this, so they can never disagree.
    pub fn words(&self) -> [u64; 5] {
        let tok = |t: Option<Token>| t.map_or(0, |t| t.0);
        match *self {
            Msg::Acquire { req, key, owner } | Msg::Release { req, key, owner } => {
                [req as u64, key.0 as u64, owner, 0, 0]
            }
            Msg::Granted {
                req,
                key,
                owner,
                token,
                ttl_ns,
            } => [req as u64, key.0 as u64, owner, tok(token), ttl_ns],
            Msg::Busy { req, key } => [req as u64, key.0 as u64, 0, 0, 0],
            Msg::Released { req, key, removed } => [
                req as u64,
                key.0 as u64,
                removed.unwrap_or(0),
                removed.is_some() as u64,
                0,
            ],
            Msg::Read {
                req,
                key,
                op,
                token,
            } => [req as u64, key.0 as u64, op.0, tok(token), 0],
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => [req as u64, key.0 as u64, op.0, tok(token), value.0],
            Msg::ReadOk {
                req,
                key,
                op,
                value,
            } => [req as u64, key.0 as u64, op.0, value.0, 0],
            Msg::ReadRejected {
                req,
                key,
                op,
                fence,
            }
            | Msg::WriteRejected {
                req,
                key,
                op,
                fence,
            } => [req as u64, key.0 as u64, op.0, fence.0, 0],
            Msg::WriteOk { req, key, op } => [req as u64, key.0 as u64, op.0, 0, 0],
            Msg::Renew { req, key, owner } | Msg::RenewFailed { req, key, owner } => {
                [req as u64, key.0 as u64, owner, 0, 0]
            }
            Msg::Renewed {
                req,
                key,
                owner,
                ttl_ns,
            } => [req as u64, key.0 as u64, owner, ttl_ns, 0],
            Msg::Replicate {
                key,
                counter,
                owner,
                token,
                expires_wall_ns,
            } => [
                key.0 as u64,
                counter,
                owner,
                tok(token),
                expires_wall_ns as u64,
            ],
            Msg::Propose { gen } | Msg::MaxIs { gen } => [gen, 0, 0, 0, 0],
            Msg::Accepted { gen, ok } => [gen, ok as u64, 0, 0, 0],
            Msg::QueryMax | Msg::Promote => [0; 5],
            Msg::ZkCreate { req, key, session } => [req as u64, key.0 as u64, session, 0, 0],
            Msg::ZkCreated {
                req,
                key,
                session,
                seq,
            } => [req as u64, key.0 as u64, session, seq, 0],
            Msg::ZkGetChildren {
                req,
                key,
                session,
                seq,
                watch,
            } => [req as u64, key.0 as u64, session, seq, watch as u64],
            Msg::ZkChildren {
                req,
                key,
                lowest,
                pred,
                mine,
            } => [req as u64, key.0 as u64, lowest, pred, mine as u64],
            Msg::ZkExists {
                req,
                key,
                session,
                seq,
            }
            | Msg::ZkDelete {
                req,
                key,
                session,
                seq,
            } => [req as u64, key.0 as u64, session, seq, 0],
            Msg::ZkStat {
                req,
                key,
                seq,
                exists,
            } => [req as u64, key.0 as u64, seq, exists as u64, 0],
            Msg::ZkWatch { key, seq } => [key.0 as u64, seq, 0, 0, 0],
            Msg::ZkPing { key, session } => [key.0 as u64, session, 0, 0, 0],
            Msg::ZkDeleted { req, key } => [req as u64, key.0 as u64, 0, 0, 0],
            Msg::ZkSessionExpired { req, key, session } => {
                [req as u64, key.0 as u64, session, 0, 0]
            }
            Msg::DdbGet { req, key } => [req as u64, key.0 as u64, 0, 0, 0],
            Msg::DdbItem {
                req,
                key,
                owner,
                rvn,
            }
            | Msg::DdbDelete {
                req,
                key,
                owner,
                rvn,
            } => [req as u64, key.0 as u64, owner, rvn, 0],
            Msg::DdbPut {
                req,
                key,
                owner,
                rvn,
                expect_rvn,
            } => [req as u64, key.0 as u64, owner, rvn, expect_rvn],
            Msg::DdbPutResult {
                req,
                key,
                ok,
                fence,
            } => [req as u64, key.0 as u64, ok as u64, fence, 0],
            Msg::DdbDeleted { req, key, ok } => [req as u64, key.0 as u64, ok as u64, 0, 0],
            Msg::RedisSetNx {
                req,
                key,
                owner,
                ttl_ns,
            } => [req as u64, key.0 as u64, owner, ttl_ns, 0],
            Msg::RedisSetNxResult { req, key, ok } => [req as u64, key.0 as u64, ok as u64, 0, 0],
            Msg::RedisCad { req, key, owner } => [req as u64, key.0 as u64, owner, 0, 0],
            Msg::RedisCadResult { req, key, deleted } => {
                [req as u64, key.0 as u64, deleted as u64, 0, 0]
            }
            Msg::EtcdLeaseGrant {
                req,
                key,
                lease,
                ttl_ns,
            }
            | Msg::EtcdLeaseGranted {
                req,
                key,
                lease,
                ttl_ns,
            } => [req as u64, key.0 as u64, lease, ttl_ns, 0],
            Msg::EtcdLockTxn { req, key, lease }
            | Msg::EtcdGetOwn { req, key, lease }
            | Msg::EtcdRevoke { req, key, lease } => [req as u64, key.0 as u64, lease, 0, 0],
            Msg::EtcdTxnResult {
                req,
                key,
                my_rev,
                owner_rev,
            } => [req as u64, key.0 as u64, my_rev, owner_rev, 0],
            Msg::EtcdWaitDeletes {
                req,
                key,
                my_rev: rev,
            }
            | Msg::EtcdPredecessor {
                req,
                key,
                pred_rev: rev,
            }
            | Msg::EtcdOwnKey {
                req,
                key,
                create_rev: rev,
            } => [req as u64, key.0 as u64, rev, 0, 0],
            Msg::EtcdDeleteEvent { key, rev } => [key.0 as u64, rev, 0, 0, 0],
            Msg::EtcdKeepAlive { key, lease } => [key.0 as u64, lease, 0, 0, 0],
            Msg::EtcdRevoked { req, key } => [req as u64, key.0 as u64, 0, 0, 0],
            Msg::Effect {
                req,
                key,
                op,
                idem_key,
            } => [
                req as u64,
                key.0 as u64,
                op.0,
                idem_key.unwrap_or(0),
                idem_key.is_some() as u64,
            ],
            Msg::EffectOk {
                req,
                key,
                op,
                performed,
            } => [req as u64, key.0 as u64, op.0, performed as u64, 0],
            Msg::OutboxPoll { req, delivered } => [req as u64, delivered.0, 0, 0, 0],
            Msg::OutboxEntry { req, key, op } => [req as u64, key.0 as u64, op.0, 0, 0],
            Msg::PairHeartbeat { key, epoch } | Msg::Stonith { key, epoch } => {
                [key.0 as u64, epoch, 0, 0, 0]
            }
            Msg::Reserve { req, key, epoch } => [req as u64, key.0 as u64, epoch, 0, 0],
            Msg::Reserved {
                req,
                key,
                ok,
                fence,
            } => [req as u64, key.0 as u64, ok as u64, fence, 0],
        }
    }
}
