//! The emulated communicator: NCCL's collectives between N ranks of one
//! process (usually one thread each), on the emulator's device memory, for
//! machines without NCCL or a GPU. `cuda-nccl` uses it when its context is
//! emulated; its semantics are NCCL's, made stricter where NCCL would hang
//! or corrupt memory.
//!
//! A [`Clique`] is the shared state of one communicator's ranks. A rank
//! [`post`](Clique::post)s an operation and gets a [`Ticket`]; the rank whose
//! post completes a match (the last rank of a collective, or the second
//! side of a send/recv pair) does the whole computation, under the clique's
//! lock, on every rank's buffers at once, and every participant's ticket is
//! done. [`wait`](Clique::wait) blocks until the ticket is done, the
//! clique is aborted, a rank the operation needs has left, or the timeout
//! passes, and says which ranks never came. Posting never blocks, so one
//! thread can drive several ranks by posting all of them before waiting (a
//! NCCL group call).
//!
//! Matching follows NCCL: the k-th collective of every rank forms round k
//! and must be the same collective with the same count, element type,
//! reduction and root everywhere (NCCL would hang or corrupt memory on a
//! mismatch; here every rank of the round gets [`CollectiveError::Mismatch`]).
//! Sends and receives between two ranks pair up in posting order and must
//! agree on count and element type.
//!
//! Reductions fold the ranks in rank order. Integers wrap; f16, bf16 and
//! fp8 are widened to f32 for each step and rounded back (to nearest even;
//! fp8 saturates to its largest finite value, as CUDA's default conversion
//! does). `Avg` divides the integer sum by the rank count, and multiplies
//! each float by `1/N` before summing, as NCCL does.
//!
//! ```
//! use cuda_emulator::collective::{Clique, Collective, Element, Reduce};
//! use std::time::Duration;
//!
//! let clique = Clique::new(2);
//! let (a, b) = ([1.0f32, 2.0], [10.0f32, 20.0]);
//! let (mut ra, mut rb) = ([0.0f32; 2], [0.0f32; 2]);
//! let op = |send: &[f32; 2], recv: &mut [f32; 2]| Collective::AllReduce {
//!     send: send.as_ptr() as u64, recv: recv.as_mut_ptr() as u64, count: 2, element: Element::F32, op: Reduce::Sum,
//! };
//! // One thread, two ranks: post both, then wait.
//! let (t0, t1) = (clique.post(0, op(&a, &mut ra)), clique.post(1, op(&b, &mut rb)));
//! clique.wait(&t0, Duration::from_secs(5)).unwrap();
//! clique.wait(&t1, Duration::from_secs(5)).unwrap();
//! assert_eq!((ra, rb), ([11.0, 22.0], [11.0, 22.0]));
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use cuda_device::half::{bf16, f16};

/// An element type NCCL reduces (its `ncclDataType_t`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Element {
    /// `i8`.
    I8,
    /// `u8`.
    U8,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// IEEE half.
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// bfloat16.
    Bf16,
    /// fp8 E4M3 (no infinities; NaN is `S.1111.111`).
    F8E4M3,
    /// fp8 E5M2.
    F8E5M2,
}

impl Element {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Element::I8 | Element::U8 | Element::F8E4M3 | Element::F8E5M2 => 1,
            Element::F16 | Element::Bf16 => 2,
            Element::I32 | Element::U32 | Element::F32 => 4,
            Element::I64 | Element::U64 | Element::F64 => 8,
        }
    }
}

/// A reduction (NCCL's `ncclRedOp_t`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Average over the ranks.
    Avg,
}

/// A collective, with the addresses of this rank's buffers (the emulator's
/// device memory is host memory). Counts are in elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Collective {
    /// Every rank's `recv` = the reduction of every rank's `send`.
    AllReduce {
        /// This rank's input.
        send: u64,
        /// This rank's output (may equal `send`).
        recv: u64,
        /// Elements in each.
        count: usize,
        /// Element type.
        element: Element,
        /// Reduction.
        op: Reduce,
    },
    /// Every rank's `recv` = the root's `send`.
    Broadcast {
        /// The root's input (ignored elsewhere).
        send: u64,
        /// This rank's output.
        recv: u64,
        /// Elements.
        count: usize,
        /// Element type.
        element: Element,
        /// The rank whose data is sent.
        root: usize,
    },
    /// The root's `recv` = the reduction of every rank's `send`.
    Reduce {
        /// This rank's input.
        send: u64,
        /// The output (only the root's is written).
        recv: u64,
        /// Elements.
        count: usize,
        /// Element type.
        element: Element,
        /// Reduction.
        op: Reduce,
        /// The rank receiving the result.
        root: usize,
    },
    /// Every rank's `recv` = every rank's `send`, concatenated in rank order.
    AllGather {
        /// This rank's `count` elements.
        send: u64,
        /// `count × ranks` elements.
        recv: u64,
        /// Elements each rank sends.
        count: usize,
        /// Element type.
        element: Element,
    },
    /// Rank r's `recv` = block r of the reduction of every rank's `send`.
    ReduceScatter {
        /// `count × ranks` elements.
        send: u64,
        /// This rank's `count` elements.
        recv: u64,
        /// Elements each rank receives.
        count: usize,
        /// Element type.
        element: Element,
        /// Reduction.
        op: Reduce,
    },
    /// `count` elements to rank `peer` (pairs with its [`Collective::Recv`]).
    Send {
        /// The data.
        send: u64,
        /// Elements.
        count: usize,
        /// Element type.
        element: Element,
        /// The receiving rank.
        peer: usize,
    },
    /// `count` elements from rank `peer`.
    Recv {
        /// Where they go.
        recv: u64,
        /// Elements.
        count: usize,
        /// Element type.
        element: Element,
        /// The sending rank.
        peer: usize,
    },
    /// `ncclCommSplit`: ranks of one `color` (`None`: no new communicator)
    /// form a new clique, ordered by `key` then by their rank here.
    Split {
        /// The group this rank joins.
        color: Option<u32>,
        /// Its order in that group.
        key: i32,
    },
}

impl Collective {
    /// The collective's name, as NCCL's function is called.
    pub fn name(&self) -> &'static str {
        match self {
            Collective::AllReduce { .. } => "ncclAllReduce",
            Collective::Broadcast { .. } => "ncclBroadcast",
            Collective::Reduce { .. } => "ncclReduce",
            Collective::AllGather { .. } => "ncclAllGather",
            Collective::ReduceScatter { .. } => "ncclReduceScatter",
            Collective::Send { .. } => "ncclSend",
            Collective::Recv { .. } => "ncclRecv",
            Collective::Split { .. } => "ncclCommSplit",
        }
    }

    /// What must agree between the ranks of one round (buffers and split
    /// colours may differ).
    fn signature(&self) -> (&'static str, usize, Option<Element>, Option<Reduce>, Option<usize>) {
        match *self {
            Collective::AllReduce { count, element, op, .. } => (self.name(), count, Some(element), Some(op), None),
            Collective::Broadcast { count, element, root, .. } => (self.name(), count, Some(element), None, Some(root)),
            Collective::Reduce { count, element, op, root, .. } => (self.name(), count, Some(element), Some(op), Some(root)),
            Collective::AllGather { count, element, .. } => (self.name(), count, Some(element), None, None),
            Collective::ReduceScatter { count, element, op, .. } => (self.name(), count, Some(element), Some(op), None),
            Collective::Send { count, element, .. } | Collective::Recv { count, element, .. } => {
                (self.name(), count, Some(element), None, None)
            }
            Collective::Split { .. } => (self.name(), 0, None, None, None),
        }
    }
}

/// Why an emulated operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CollectiveError {
    /// The ranks of one round called different collectives, or with
    /// different counts, element types, reductions or roots.
    Mismatch {
        /// The round (the how-manieth collective of each rank, from 0).
        round: u64,
        /// `rank: call` for each rank, e.g. `0: ncclAllReduce of 16 F32 Sum`.
        calls: Vec<String>,
    },
    /// Ranks did not join within the timeout.
    Timeout {
        /// The operation waited for.
        call: &'static str,
        /// The ranks that never posted theirs.
        missing: Vec<usize>,
        /// How long was waited.
        waited: Duration,
    },
    /// A rank aborted the communicator.
    Aborted {
        /// Which rank.
        rank: usize,
    },
    /// A rank the operation needs destroyed its communicator first.
    PeerLeft {
        /// The operation.
        call: &'static str,
        /// The rank that left.
        rank: usize,
    },
    /// A rank joined a communicator whose size or ranks disagree.
    BadJoin(String),
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectiveError::Mismatch { round, calls } => write!(
                f,
                "the ranks disagree on collective #{round} ({}); every rank must call the same collectives in the \
                 same order with the same count, element type, reduction and root",
                calls.join("; ")
            ),
            CollectiveError::Timeout { call, missing, waited } => write!(
                f,
                "{call}: rank(s) {missing:?} did not join within {waited:?}; a rank has stopped, failed, or calls \
                 collectives in another order (one thread driving several ranks must put their calls in a group)"
            ),
            CollectiveError::Aborted { rank } => {
                write!(f, "rank {rank} aborted the communicator; make a new one to continue")
            }
            CollectiveError::PeerLeft { call, rank } => {
                write!(f, "{call}: rank {rank} destroyed its communicator before joining this operation")
            }
            CollectiveError::BadJoin(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for CollectiveError {}

/// What a done operation gives back.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A collective or point-to-point transfer: its buffers are written.
    Done,
    /// A split: this rank's place in its new clique (`None` without a colour).
    Split(Option<(Arc<Clique>, usize)>),
}

/// A posted operation; [`Clique::wait`] for it.
#[derive(Debug)]
pub struct Ticket {
    id: u64,
    rank: usize,
}

#[derive(Debug)]
enum Pending {
    Round(u64),
    Pair { from: usize, to: usize },
}

#[derive(Debug, Default)]
struct Round {
    posts: Vec<Option<(Collective, u64)>>,
}

#[derive(Debug, Default)]
struct State {
    joined: Vec<bool>,
    left: Vec<bool>,
    aborted: Option<usize>,
    next_ticket: u64,
    /// Per rank: the round its next collective joins.
    next_round: Vec<u64>,
    rounds: HashMap<u64, Round>,
    /// Unmatched sends and receives per (from, to), in posting order.
    sends: HashMap<(usize, usize), VecDeque<(Collective, u64)>>,
    recvs: HashMap<(usize, usize), VecDeque<(Collective, u64)>>,
    pending: HashMap<u64, Pending>,
    done: HashMap<u64, Result<Outcome, CollectiveError>>,
}

/// The shared state of one emulated communicator's ranks.
#[derive(Debug)]
pub struct Clique {
    size: usize,
    state: Mutex<State>,
    changed: Condvar,
}

/// Cliques being joined by id (`ncclCommInitRank`), so that ranks on
/// different threads that hold the same unique id meet.
fn registry() -> &'static Mutex<HashMap<[u8; 16], Weak<Clique>>> {
    static REGISTRY: std::sync::OnceLock<Mutex<HashMap<[u8; 16], Weak<Clique>>>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

impl Clique {
    /// A clique of `size` ranks, all joined (`ncclCommInitAll`).
    pub fn new(size: usize) -> Arc<Clique> {
        let state = State {
            joined: vec![true; size],
            left: vec![false; size],
            next_round: vec![0; size],
            ..State::default()
        };
        Arc::new(Clique { size, state: Mutex::new(state), changed: Condvar::new() })
    }

    /// Joins the clique named `id` as `rank` of `size` (`ncclCommInitRank`),
    /// waiting until all `size` ranks have joined, at most `timeout`.
    pub fn join(id: [u8; 16], size: usize, rank: usize, timeout: Duration) -> Result<Arc<Clique>, CollectiveError> {
        if rank >= size {
            return Err(CollectiveError::BadJoin(format!("rank {rank} is not below the communicator's size {size}")));
        }
        let clique = {
            let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
            reg.retain(|_, w| w.strong_count() > 0);
            match reg.get(&id).and_then(Weak::upgrade) {
                Some(c) => c,
                None => {
                    let c = Clique::new(size);
                    c.lock().joined.iter_mut().for_each(|j| *j = false);
                    reg.insert(id, Arc::downgrade(&c));
                    c
                }
            }
        };
        if clique.size != size {
            return Err(CollectiveError::BadJoin(format!(
                "rank {rank} joins with {size} ranks, but the communicator of this unique id has {}",
                clique.size
            )));
        }
        let start = Instant::now();
        let mut st = clique.lock();
        if st.joined[rank] {
            return Err(CollectiveError::BadJoin(format!("rank {rank} joined this communicator twice")));
        }
        st.joined[rank] = true;
        clique.changed.notify_all();
        while !st.joined.iter().all(|&j| j) {
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                let missing = (0..size).filter(|&r| !st.joined[r]).collect();
                st.joined[rank] = false;
                return Err(CollectiveError::Timeout { call: "ncclCommInitRank", missing, waited: timeout });
            }
            st = clique.changed.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        drop(st);
        Ok(clique)
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts `op` for `rank` without waiting; the rank whose post completes
    /// a match runs it. Buffers must stay valid until the ticket is done.
    pub fn post(&self, rank: usize, op: Collective) -> Ticket {
        let mut st = self.lock();
        let id = st.next_ticket;
        st.next_ticket += 1;
        if let Some(by) = st.aborted {
            st.done.insert(id, Err(CollectiveError::Aborted { rank: by }));
            return Ticket { id, rank };
        }
        match op {
            Collective::Send { peer, .. } | Collective::Recv { peer, .. } if peer >= self.size => {
                st.done.insert(id, Err(CollectiveError::BadJoin(format!("{}: peer {peer} is not a rank", op.name()))));
            }
            Collective::Send { peer, .. } => {
                st.sends.entry((rank, peer)).or_default().push_back((op, id));
                st.pending.insert(id, Pending::Pair { from: rank, to: peer });
                self.match_pair(&mut st, rank, peer);
            }
            Collective::Recv { peer, .. } => {
                st.recvs.entry((peer, rank)).or_default().push_back((op, id));
                st.pending.insert(id, Pending::Pair { from: peer, to: rank });
                self.match_pair(&mut st, peer, rank);
            }
            _ => {
                let round = st.next_round[rank];
                st.next_round[rank] += 1;
                let size = self.size;
                let r = st.rounds.entry(round).or_insert_with(|| Round { posts: vec![None; size] });
                r.posts[rank] = Some((op, id));
                st.pending.insert(id, Pending::Round(round));
                if st.rounds[&round].posts.iter().all(Option::is_some) {
                    let r = st.rounds.remove(&round).expect("present");
                    self.complete_round(&mut st, round, r);
                }
            }
        }
        self.changed.notify_all();
        Ticket { id, rank }
    }

    /// Waits for `ticket` at most `timeout`.
    pub fn wait(&self, ticket: &Ticket, timeout: Duration) -> Result<Outcome, CollectiveError> {
        let start = Instant::now();
        let mut st = self.lock();
        loop {
            if let Some(result) = st.done.remove(&ticket.id) {
                return result;
            }
            if let Some(rank) = st.aborted {
                st.pending.remove(&ticket.id);
                return Err(CollectiveError::Aborted { rank });
            }
            let missing = self.missing(&st, ticket);
            if let Some(&gone) = missing.iter().find(|&&r| st.left[r]) {
                let call = self.call_of(&st, ticket);
                return Err(CollectiveError::PeerLeft { call, rank: gone });
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                let call = self.call_of(&st, ticket);
                return Err(CollectiveError::Timeout { call, missing, waited: timeout });
            }
            st = self.changed.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Aborts the clique: every pending and later operation of every rank
    /// fails with [`CollectiveError::Aborted`].
    pub fn abort(&self, rank: usize) {
        let mut st = self.lock();
        st.aborted.get_or_insert(rank);
        self.changed.notify_all();
    }

    /// `rank` destroyed its communicator: operations that still need it fail.
    pub fn leave(&self, rank: usize) {
        let mut st = self.lock();
        if let Some(l) = st.left.get_mut(rank) {
            *l = true;
        }
        self.changed.notify_all();
    }

    /// The ranks `ticket` still waits for.
    fn missing(&self, st: &State, ticket: &Ticket) -> Vec<usize> {
        match st.pending.get(&ticket.id) {
            Some(Pending::Round(round)) => match st.rounds.get(round) {
                Some(r) => (0..self.size).filter(|&i| r.posts[i].is_none()).collect(),
                None => Vec::new(),
            },
            Some(&Pending::Pair { from, to }) => vec![if ticket.rank == from { to } else { from }],
            None => Vec::new(),
        }
    }

    fn call_of(&self, st: &State, ticket: &Ticket) -> &'static str {
        match st.pending.get(&ticket.id) {
            Some(Pending::Round(round)) => st
                .rounds
                .get(round)
                .and_then(|r| r.posts[ticket.rank].as_ref())
                .map_or("a collective", |(op, _)| op.name()),
            Some(&Pending::Pair { from, .. }) => {
                if ticket.rank == from {
                    "ncclSend"
                } else {
                    "ncclRecv"
                }
            }
            None => "an operation",
        }
    }

    fn finish(&self, st: &mut State, id: u64, result: Result<Outcome, CollectiveError>) {
        st.pending.remove(&id);
        st.done.insert(id, result);
    }

    fn match_pair(&self, st: &mut State, from: usize, to: usize) {
        let key = (from, to);
        while st.sends.get(&key).is_some_and(|q| !q.is_empty()) && st.recvs.get(&key).is_some_and(|q| !q.is_empty()) {
            let (send, sid) = st.sends.get_mut(&key).and_then(VecDeque::pop_front).expect("non-empty");
            let (recv, rid) = st.recvs.get_mut(&key).and_then(VecDeque::pop_front).expect("non-empty");
            let (Collective::Send { send: src, count: sc, element: se, .. }, Collective::Recv { recv: dst, count: rc, element: re, .. }) =
                (send, recv)
            else {
                unreachable!("queues hold sends and receives")
            };
            let result = if sc != rc || se != re {
                Err(CollectiveError::Mismatch {
                    round: 0,
                    calls: vec![format!("{from}: ncclSend of {sc} {se:?} to {to}"), format!("{to}: ncclRecv of {rc} {re:?} from {from}")],
                })
            } else {
                // SAFETY: the caller of `post` keeps both buffers valid for
                // `count` elements until the tickets are done; a send and a
                // receive of different ranks never share memory the other
                // writes (the receive is a mutable borrow).
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, sc * se.size()) };
                Ok(Outcome::Done)
            };
            self.finish(st, sid, result.clone());
            self.finish(st, rid, result);
        }
    }

    fn complete_round(&self, st: &mut State, round: u64, r: Round) {
        let posts: Vec<(Collective, u64)> = r.posts.into_iter().map(|p| p.expect("complete")).collect();
        let sig = posts[0].0.signature();
        let result = if posts.iter().any(|(op, _)| op.signature() != sig) {
            Err(CollectiveError::Mismatch {
                round,
                calls: posts.iter().enumerate().map(|(i, (op, _))| format!("{i}: {}", describe(op))).collect(),
            })
        } else if let Collective::Split { .. } = posts[0].0 {
            for (rank, outcome) in self.split(&posts).into_iter().enumerate() {
                self.finish(st, posts[rank].1, Ok(Outcome::Split(outcome)));
            }
            return;
        } else {
            let ops: Vec<Collective> = posts.iter().map(|(op, _)| *op).collect();
            // SAFETY: every rank's buffers are valid for the counts its
            // collective names (the callers of `post`), until the tickets
            // are done, which is after this returns.
            unsafe { run(&ops) };
            Ok(Outcome::Done)
        };
        for (_, id) in posts {
            self.finish(st, id, result.clone());
        }
    }

    fn split(&self, posts: &[(Collective, u64)]) -> Vec<Option<(Arc<Clique>, usize)>> {
        let mut out = vec![None; posts.len()];
        let mut groups: HashMap<u32, Vec<(i32, usize)>> = HashMap::new();
        for (rank, (op, _)) in posts.iter().enumerate() {
            if let Collective::Split { color: Some(c), key } = *op {
                groups.entry(c).or_default().push((key, rank));
            }
        }
        for mut members in groups.into_values() {
            members.sort();
            let clique = Clique::new(members.len());
            for (new_rank, &(_, rank)) in members.iter().enumerate() {
                out[rank] = Some((clique.clone(), new_rank));
            }
        }
        out
    }
}

fn describe(op: &Collective) -> String {
    let (name, count, element, reduce, root) = op.signature();
    let mut s = name.to_string();
    if let Some(e) = element {
        s += &format!(" of {count} {e:?}");
    }
    if let Some(r) = reduce {
        s += &format!(" {r:?}");
    }
    if let Some(root) = root {
        s += &format!(" root {root}");
    }
    s
}

/// Runs one matched round.
///
/// # Safety
/// Every op's buffers are valid for the element counts its kind implies.
unsafe fn run(ops: &[Collective]) {
    let n = ops.len();
    match ops[0] {
        Collective::AllReduce { count, element, op, .. } => {
            let sends: Vec<u64> = ops.iter().map(|o| if let Collective::AllReduce { send, .. } = o { *send } else { 0 }).collect();
            let out = reduce(&sends, 0, count, element, op);
            for o in ops {
                if let Collective::AllReduce { recv, .. } = o {
                    // SAFETY: `recv` holds `count` elements (caller).
                    unsafe { std::ptr::copy(out.as_ptr(), *recv as *mut u8, out.len()) };
                }
            }
        }
        Collective::Reduce { count, element, op, root, .. } => {
            let sends: Vec<u64> = ops.iter().map(|o| if let Collective::Reduce { send, .. } = o { *send } else { 0 }).collect();
            let out = reduce(&sends, 0, count, element, op);
            if let Collective::Reduce { recv, .. } = ops[root] {
                // SAFETY: as above, for the root.
                unsafe { std::ptr::copy(out.as_ptr(), recv as *mut u8, out.len()) };
            }
        }
        Collective::Broadcast { count, element, root, .. } => {
            let bytes = count * element.size();
            let Collective::Broadcast { send, .. } = ops[root] else { return };
            // Copied first: the root's send may be another rank's recv.
            // SAFETY: the root's send holds `count` elements (caller).
            let data = unsafe { std::slice::from_raw_parts(send as *const u8, bytes) }.to_vec();
            for o in ops {
                if let Collective::Broadcast { recv, .. } = o {
                    // SAFETY: each recv holds `count` elements (caller).
                    unsafe { std::ptr::copy(data.as_ptr(), *recv as *mut u8, bytes) };
                }
            }
        }
        Collective::AllGather { count, element, .. } => {
            let bytes = count * element.size();
            let mut all = Vec::with_capacity(bytes * n);
            for o in ops {
                if let Collective::AllGather { send, .. } = o {
                    // SAFETY: each send holds `count` elements (caller).
                    all.extend_from_slice(unsafe { std::slice::from_raw_parts(*send as *const u8, bytes) });
                }
            }
            for o in ops {
                if let Collective::AllGather { recv, .. } = o {
                    // SAFETY: each recv holds `count × n` elements (caller).
                    unsafe { std::ptr::copy(all.as_ptr(), *recv as *mut u8, all.len()) };
                }
            }
        }
        Collective::ReduceScatter { count, element, op, .. } => {
            let sends: Vec<u64> =
                ops.iter().map(|o| if let Collective::ReduceScatter { send, .. } = o { *send } else { 0 }).collect();
            let blocks: Vec<Vec<u8>> = (0..n).map(|r| reduce(&sends, r * count, count, element, op)).collect();
            for (r, o) in ops.iter().enumerate() {
                if let Collective::ReduceScatter { recv, .. } = o {
                    // SAFETY: each recv holds `count` elements (caller).
                    unsafe { std::ptr::copy(blocks[r].as_ptr(), *recv as *mut u8, blocks[r].len()) };
                }
            }
        }
        Collective::Send { .. } | Collective::Recv { .. } | Collective::Split { .. } => {}
    }
}

/// The reduction of `count` elements from element `offset` of every buffer
/// in `sends`, folded in rank order, as bytes.
fn reduce(sends: &[u64], offset: usize, count: usize, element: Element, op: Reduce) -> Vec<u8> {
    let size = element.size();
    let n = sends.len();
    let mut out = vec![0u8; count * size];
    for i in 0..count {
        let at = |r: usize| -> &[u8] {
            // SAFETY: every send holds `offset + count` elements (callers of
            // `run`); the bytes are read, never kept past this round.
            unsafe { std::slice::from_raw_parts((sends[r] as *const u8).add((offset + i) * size), size) }
        };
        let value = fold(element, op, n, at);
        out[i * size..(i + 1) * size].copy_from_slice(&value[..size]);
    }
    out
}

fn fold<'a>(element: Element, op: Reduce, n: usize, at: impl Fn(usize) -> &'a [u8]) -> [u8; 8] {
    macro_rules! int {
        ($t:ty) => {{
            let get = |r: usize| <$t>::from_le_bytes(at(r).try_into().expect("size"));
            let mut acc = get(0);
            for r in 1..n {
                let x = get(r);
                acc = match op {
                    Reduce::Sum | Reduce::Avg => acc.wrapping_add(x),
                    Reduce::Prod => acc.wrapping_mul(x),
                    Reduce::Max => acc.max(x),
                    Reduce::Min => acc.min(x),
                };
            }
            if op == Reduce::Avg {
                acc /= n as $t;
            }
            let mut b = [0u8; 8];
            b[..std::mem::size_of::<$t>()].copy_from_slice(&acc.to_le_bytes());
            b
        }};
    }
    // Floats: each step in `$w` (the type, or f32 for the narrow ones),
    // rounded back to the element after every step.
    macro_rules! float {
        ($w:ty, $load:expr, $store:expr) => {{
            let load = $load;
            let store = $store;
            let round = |x: $w| load(&store(x));
            let scale = |x: $w| if op == Reduce::Avg { round(x * round(1.0 / n as $w)) } else { x };
            let mut acc = scale(load(at(0)));
            for r in 1..n {
                let x = scale(load(at(r)));
                acc = round(match op {
                    Reduce::Sum | Reduce::Avg => acc + x,
                    Reduce::Prod => acc * x,
                    Reduce::Max => nan_max(acc as f64, x as f64) as $w,
                    Reduce::Min => nan_min(acc as f64, x as f64) as $w,
                });
            }
            let bytes = store(acc);
            let mut b = [0u8; 8];
            b[..bytes.len()].copy_from_slice(&bytes);
            b
        }};
    }
    match element {
        Element::I8 => int!(i8),
        Element::U8 => int!(u8),
        Element::I32 => int!(i32),
        Element::U32 => int!(u32),
        Element::I64 => int!(i64),
        Element::U64 => int!(u64),
        Element::F32 => float!(f32, |b: &[u8]| f32::from_le_bytes(b.try_into().expect("size")), |x: f32| x.to_le_bytes().to_vec()),
        Element::F64 => float!(f64, |b: &[u8]| f64::from_le_bytes(b.try_into().expect("size")), |x: f64| x.to_le_bytes().to_vec()),
        Element::F16 => float!(
            f32,
            |b: &[u8]| f16::from_bits(u16::from_le_bytes(b.try_into().expect("size"))).to_f32(),
            |x: f32| f16::from_f32(x).to_bits().to_le_bytes().to_vec()
        ),
        Element::Bf16 => float!(
            f32,
            |b: &[u8]| bf16::from_bits(u16::from_le_bytes(b.try_into().expect("size"))).to_f32(),
            |x: f32| bf16::from_f32(x).to_bits().to_le_bytes().to_vec()
        ),
        Element::F8E4M3 => float!(f32, |b: &[u8]| fp8::decode(fp8::E4M3, b[0]), |x: f32| vec![fp8::encode(fp8::E4M3, x)]),
        Element::F8E5M2 => float!(f32, |b: &[u8]| fp8::decode(fp8::E5M2, b[0]), |x: f32| vec![fp8::encode(fp8::E5M2, x)]),
    }
}

/// The GPU's `max.f32`/`min.f32`: a NaN operand yields the other operand.
fn nan_max(a: f64, b: f64) -> f64 {
    a.max(b)
}
fn nan_min(a: f64, b: f64) -> f64 {
    a.min(b)
}

/// The two fp8 formats of CUDA (`__nv_fp8_e4m3`, `__nv_fp8_e5m2`):
/// decoding, and encoding to nearest even with saturation to the largest
/// finite value (CUDA's default `__NV_SATFINITE`).
pub mod fp8 {
    /// A format: exponent and mantissa bits, and whether the all-ones
    /// exponent is infinity/NaN (E5M2) or only `S.1111.111` is NaN (E4M3).
    #[derive(Clone, Copy, Debug)]
    pub struct Format {
        exp_bits: u32,
        man_bits: u32,
        ieee_special: bool,
    }

    /// E4M3: bias 7, largest finite 448, no infinities.
    pub const E4M3: Format = Format { exp_bits: 4, man_bits: 3, ieee_special: false };
    /// E5M2: bias 15, largest finite 57344, with infinities.
    pub const E5M2: Format = Format { exp_bits: 5, man_bits: 2, ieee_special: true };

    impl Format {
        fn bias(self) -> i32 {
            (1 << (self.exp_bits - 1)) - 1
        }
        /// The largest finite magnitude's code.
        fn max_code(self) -> u8 {
            if self.ieee_special {
                (((1u32 << self.exp_bits) - 2) << self.man_bits | ((1 << self.man_bits) - 1)) as u8
            } else {
                0x7e
            }
        }
    }

    /// The value of `code`.
    pub fn decode(f: Format, code: u8) -> f32 {
        let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
        let mag = u32::from(code & 0x7f);
        let e = mag >> f.man_bits;
        let m = mag & ((1 << f.man_bits) - 1);
        let emax = (1 << f.exp_bits) - 1;
        if f.ieee_special && e == emax {
            return if m == 0 { sign * f32::INFINITY } else { f32::NAN };
        }
        if !f.ieee_special && mag == 0x7f {
            return f32::NAN;
        }
        let frac = m as f32 / (1u32 << f.man_bits) as f32;
        let v = if e == 0 { frac * 2f32.powi(1 - f.bias()) } else { (1.0 + frac) * 2f32.powi(e as i32 - f.bias()) };
        sign * v
    }

    /// `x` rounded to the nearest code (ties to an even mantissa),
    /// saturating to the largest finite value; NaN stays NaN.
    pub fn encode(f: Format, x: f32) -> u8 {
        if x.is_nan() {
            return 0x7f;
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = x.abs();
        let max = f.max_code();
        if a >= decode(f, max) {
            return sign | max;
        }
        // The codes of one sign increase with their value: find the pair
        // around `a` and take the nearer one.
        let mut lo = 0u8;
        while lo < max && decode(f, lo + 1) <= a {
            lo += 1;
        }
        let (vlo, vhi) = (decode(f, lo), decode(f, lo + 1));
        let pick = if a - vlo < vhi - a || (a - vlo == vhi - a && lo.is_multiple_of(2)) { lo } else { lo + 1 };
        sign | pick
    }
}
