//! What the proxies saw a user's program do, one entry per thing, in the
//! order they saw it: the vocabulary shared by the observers that note it,
//! the lock's history and the conversation's records built from it.

/// What the proxies saw one worker do, in the order they saw it.
#[derive(Clone, Debug)]
pub(super) enum Seen {
    /// It sent a command naming the lock key (to take, renew, release or
    /// look at the lock: the server's account says which it was).
    LockSent,
    /// A reply passed to it of a command that may have touched the lock.
    LockReplied,
    /// The worker learned it holds this grant: the first lock reply it got
    /// after the server granted it (derived from the finished account by
    /// the lock's history; the proxies record only `LockReplied`).
    GrantLearned(u64),
    ReadSent,
    ReadOk(Option<i64>),
    WriteSent(Vec<i64>),
    /// Rows updated (None: the statement failed).
    WriteDone(Option<u64>),
    /// The UPDATE never reached the server (a fault lost it), and why.
    WriteLost(String),
    /// The UPDATE ran (rows updated, as `WriteDone`) but a fault lost its
    /// answer before the program saw it, and why.
    WriteUnanswered(Option<u64>, String),
}
