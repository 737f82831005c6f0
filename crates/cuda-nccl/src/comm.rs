//! [`Communicator`]: one rank of an NCCL communicator, its collectives and
//! point-to-point calls; [`UniqueId`]; group calls ([`Group`]).

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void, CStr};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use cuda_core::{CudaContext, CudaStream, DeviceSlice, DeviceSliceMut};
use cuda_emulator::collective::{Clique, Collective, CollectiveError, Outcome, Reduce, Ticket};

use crate::element::{is_fp8, NcclElement};
use crate::result::{NcclError, NcclResult, Operand};
use crate::sys::{self, ncclComm_t, ncclResult_t, NcclApi};

static API: OnceLock<Result<NcclApi, sys::LoadError>> = OnceLock::new();

/// The NCCL table of this process, loaded on first use.
#[inline]
pub fn nccl_api() -> Result<&'static NcclApi, NcclError> {
    match API.get() {
        Some(Ok(api)) => Ok(api),
        _ => load_api(),
    }
}

/// [`nccl_api`]'s first call, and its error (out of line: a loaded table
/// is one load and a compare).
#[cold]
#[inline(never)]
fn load_api() -> Result<&'static NcclApi, NcclError> {
    API.get_or_init(NcclApi::load).as_ref().map_err(|e| e.clone().into())
}

/// The version of the NCCL library this process loads (e.g. 22809 for
/// 2.28.9), loading it if need be.
pub fn version() -> Result<i32, NcclError> {
    Ok(nccl_api()?.version)
}

/// A reduction (`ncclRedOp_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `ncclSum`. Integers wrap.
    Sum,
    /// `ncclProd`. Integers wrap.
    Prod,
    /// `ncclMax`.
    Max,
    /// `ncclMin`.
    Min,
    /// `ncclAvg`: the sum divided by the number of ranks (integers: the
    /// wrapped sum divided, rounding toward zero; floats: each value
    /// multiplied by `1/ranks` before the sum).
    Avg,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg];

    /// Whether NCCL reduces elements of `T` with this operation: every
    /// operation of every type, except [`Avg`](Self::Avg) of fp8 (a
    /// collective asked for it returns [`NcclError::AvgOfFp8`]).
    pub fn is_available_for<T: NcclElement>(self) -> bool {
        !(self == ReduceOp::Avg && is_fp8::<T>())
    }

    fn raw(self) -> sys::ncclRedOp_t {
        match self {
            ReduceOp::Sum => sys::ncclSum,
            ReduceOp::Prod => sys::ncclProd,
            ReduceOp::Max => sys::ncclMax,
            ReduceOp::Min => sys::ncclMin,
            ReduceOp::Avg => sys::ncclAvg,
        }
    }

    fn emulated(self) -> Reduce {
        match self {
            ReduceOp::Sum => Reduce::Sum,
            ReduceOp::Prod => Reduce::Prod,
            ReduceOp::Max => Reduce::Max,
            ReduceOp::Min => Reduce::Min,
            ReduceOp::Avg => Reduce::Avg,
        }
    }
}

/// The 16 bytes that open an emulator's unique id.
const EMULATED_MAGIC: &[u8; 16] = b"oxide-emulated\0\0";

/// An NCCL unique id (`ncclUniqueId`): made by one rank (usually rank 0)
/// and given to every rank's [`Communicator::init_rank`]; see
/// [`Bootstrap`](crate::Bootstrap) for the ways to hand it over. Its text
/// form ([`Display`](fmt::Display), [`FromStr`](std::str::FromStr)) is 256
/// hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId([u8; sys::NCCL_UNIQUE_ID_BYTES]);

impl UniqueId {
    /// A new id (`ncclGetUniqueId`; under the emulator, random bytes that
    /// name an emulated communicator of this process).
    pub fn new(ctx: &Arc<CudaContext>) -> Result<UniqueId, NcclError> {
        if ctx.backend().is_emulated() {
            let mut bytes = [0u8; sys::NCCL_UNIQUE_ID_BYTES];
            bytes[..16].copy_from_slice(EMULATED_MAGIC);
            bytes[16..32].copy_from_slice(&random_key());
            return Ok(UniqueId(bytes));
        }
        let api = nccl_api()?;
        let mut id = sys::ncclUniqueId { internal: [0; sys::NCCL_UNIQUE_ID_BYTES] };
        // SAFETY: out-pointer to a local of the C layout.
        let r = unsafe { (api.ncclGetUniqueId)(&mut id) };
        NcclError::check("ncclGetUniqueId", r, || last_error(api, std::ptr::null_mut()))?;
        Ok(UniqueId(id.internal.map(|c| c as u8)))
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8; sys::NCCL_UNIQUE_ID_BYTES] {
        &self.0
    }

    /// An id from its bytes (as another rank's [`as_bytes`](Self::as_bytes)).
    pub fn from_bytes(bytes: [u8; sys::NCCL_UNIQUE_ID_BYTES]) -> UniqueId {
        UniqueId(bytes)
    }

    /// Whether the id names an emulated communicator.
    pub fn is_emulated(&self) -> bool {
        self.0[..16] == EMULATED_MAGIC[..]
    }

    fn key(&self) -> [u8; 16] {
        self.0[16..32].try_into().expect("16 bytes")
    }

    fn raw(&self) -> sys::ncclUniqueId {
        sys::ncclUniqueId { internal: self.0.map(|b| b as std::ffi::c_char) }
    }
}

impl fmt::Display for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId({}{})", if self.is_emulated() { "emulated " } else { "" }, &self.to_string()[..16])
    }
}

impl std::str::FromStr for UniqueId {
    type Err = NcclError;
    fn from_str(s: &str) -> Result<UniqueId, NcclError> {
        let s = s.trim();
        let bad = || {
            NcclError::Bootstrap(format!(
                "`{}` is not a unique id (one is {} hex digits, as UniqueId's Display writes it)",
                s.chars().take(40).collect::<String>(),
                2 * sys::NCCL_UNIQUE_ID_BYTES
            ))
        };
        if s.len() != 2 * sys::NCCL_UNIQUE_ID_BYTES || !s.is_ascii() {
            return Err(bad());
        }
        let mut bytes = [0u8; sys::NCCL_UNIQUE_ID_BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(UniqueId(bytes))
    }
}

/// 16 bytes no other id of this or another process is likely to have.
fn random_key() -> [u8; 16] {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = [0u8; 16];
    for half in out.chunks_mut(8) {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u32(std::process::id());
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

/// `ncclGetLastError`'s text (empty if none).
fn last_error(api: &NcclApi, comm: ncclComm_t) -> String {
    // SAFETY: NCCL returns a NUL-terminated string of its own (or null),
    // copied at once.
    unsafe {
        let p = (api.ncclGetLastError)(comm);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// The error of `call`, which answered `r` (not `ncclSuccess`).
#[cold]
#[inline(never)]
fn nccl_error(call: &'static str, r: ncclResult_t, api: &NcclApi, comm: ncclComm_t) -> NcclError {
    let result = NcclResult::from_raw(r).unwrap_or(NcclResult::InternalError);
    NcclError::Nccl { call, result, detail: last_error(api, comm) }
}

/// The default limit of a wait: `OXIDE_NCCL_TIMEOUT` seconds, else 300 s,
/// read once per process (every group's end asks for it).
fn default_timeout() -> Duration {
    static TIMEOUT: OnceLock<Duration> = OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        std::env::var("OXIDE_NCCL_TIMEOUT")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| *s > 0.0 && s.is_finite())
            .map_or(Duration::from_secs(300), Duration::from_secs_f64)
    })
}

enum Engine {
    /// NCCL's communicator.
    Gpu { api: &'static NcclApi, comm: ncclComm_t },
    /// The emulator's clique (crates/cuda-emulator, `collective`).
    Emulated { clique: Arc<Clique> },
}

#[derive(Default)]
struct CommState {
    /// The first asynchronous failure (emulated: of a queued operation).
    failed: Option<NcclError>,
    /// Aborted (by this rank, or after a timeout).
    aborted: bool,
}

/// A communicator's health, shared with its emulated operations' host
/// functions (which record their failures in it).
#[derive(Default)]
struct Health {
    /// Set, after `state` says why, once the communicator has failed or is
    /// aborted. A GPU communicator's calls read its own copy instead
    /// ([`Communicator::broken`], in the line they read anyway); an
    /// emulated one's read this one too, which its host functions raise.
    broken: AtomicBool,
    state: Mutex<CommState>,
}

impl Health {
    /// Records `f` in the state and raises the flag.
    fn update<R>(&self, f: impl FnOnce(&mut CommState) -> R) -> R {
        let mut st = lock(&self.state);
        let r = f(&mut st);
        if st.aborted || st.failed.is_some() {
            self.broken.store(true, Ordering::Release);
        }
        r
    }
}

/// The lock that serialises the NCCL calls of one communicator.
///
/// Taken by one compare-and-swap of a word and released by one swap when
/// no other thread waits. `std::sync::Mutex` would do the same work plus a
/// read of the process's panic count at each lock and unlock, for its
/// poisoning: that count sits in a cache line of its own, which a call
/// after NCCL's own work (which evicts it) fetches twice from memory. This
/// lock guards no data, so poisoning means nothing here. A thread that finds
/// it held sleeps on a condition variable until the holder lets go.
struct CallLock {
    /// [`FREE`](Self::FREE), [`HELD`](Self::HELD) or
    /// [`CONTENDED`](Self::CONTENDED).
    state: AtomicU32,
    /// Held by a waiter from its claim of `state` until it sleeps, and by
    /// the releaser while it wakes one: no wake-up is lost between them.
    waiters: Mutex<()>,
    wake: Condvar,
}

impl CallLock {
    const FREE: u32 = 0;
    const HELD: u32 = 1;
    /// Held, and another thread may be asleep waiting for it.
    const CONTENDED: u32 = 2;

    const fn new() -> CallLock {
        CallLock { state: AtomicU32::new(Self::FREE), waiters: Mutex::new(()), wake: Condvar::new() }
    }

    /// Takes the lock, waiting while another thread holds it.
    #[inline]
    fn lock(&self) -> CallGuard<'_> {
        if self.state.compare_exchange(Self::FREE, Self::HELD, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
        CallGuard(self)
    }

    /// [`lock`](Self::lock) when the lock is held: marks it contended (so
    /// that its holder wakes a waiter when it lets go) and sleeps until a
    /// claim finds it free. A lock taken here stays marked contended, which
    /// at worst wakes no one once.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut waiting = lock(&self.waiters);
        while self.state.swap(Self::CONTENDED, Ordering::Acquire) != Self::FREE {
            waiting = self.wake.wait(waiting).unwrap_or_else(|e| e.into_inner());
        }
    }

    #[inline]
    fn unlock(&self) {
        if self.state.swap(Self::FREE, Ordering::Release) == Self::CONTENDED {
            self.wake_one();
        }
    }

    /// Wakes a waiter: taking `waiters` first, the wake cannot fall between
    /// a waiter's claim and its sleep.
    #[cold]
    #[inline(never)]
    fn wake_one(&self) {
        let _waiters = lock(&self.waiters);
        self.wake.notify_one();
    }
}

/// A held [`CallLock`], released on drop.
#[must_use]
struct CallGuard<'a>(&'a CallLock);

impl Drop for CallGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.unlock();
    }
}

/// One rank of an NCCL communicator, bound to one device (its context).
///
/// Made by [`init_all`](Self::init_all) (one process drives every rank),
/// [`init_rank`](Self::init_rank) (one process, or thread, per rank, with a
/// [`UniqueId`] shared through a [`Bootstrap`](crate::Bootstrap)) or
/// [`split`](Self::split). Each collective takes the stream it is queued
/// on (a stream of the communicator's context) and returns without waiting;
/// [`wait`](Self::wait) waits for a stream with the communicator's timeout,
/// polling NCCL's asynchronous error, and aborts on either, so that a dead
/// peer is an error and never a hang.
///
/// Every length, device and rank is checked before NCCL is called; on
/// error nothing is queued. Buffers are ordered like kernel operands
/// (cuda-core's stream-ordered tracking): inputs as reads, outputs as writes.
///
/// Calls on one communicator are serialised (it is `Sync`, so an
/// `Arc<Communicator>` can be shared with [`ops`](crate::ops)); as with
/// NCCL, every rank must issue the same collectives in the same order.
///
/// Dropping it destroys the NCCL communicator (`ncclCommDestroy`, which
/// waits for its queued work); an aborted or failed one is not waited for.
// The fields every collective reads come first, in one cache line (the
// struct is aligned to one): after NCCL's own work between two calls has
// evicted them, a call fetches that line and no other of the communicator.
#[repr(C, align(64))]
pub struct Communicator {
    ctx: Arc<CudaContext>,
    engine: Engine,
    size: usize,
    calls: CallLock,
    /// A copy of `health.broken`, raised with it by this communicator's
    /// own methods ([`update_health`](Self::update_health)): every call
    /// reads this flag, and only a raised one looks further.
    broken: AtomicBool,
    // The rest, read off the collectives' path.
    rank: usize,
    timeout: Mutex<Duration>,
    health: Arc<Health>,
}

// SAFETY: the NCCL communicator is used by one thread at a time (`calls`
// serialises every NCCL call on it); the other fields are Send and Sync.
unsafe impl Send for Communicator {}
// SAFETY: as above.
unsafe impl Sync for Communicator {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Communicator {
    fn new(ctx: Arc<CudaContext>, rank: usize, size: usize, engine: Engine, timeout: Duration) -> Communicator {
        Communicator {
            ctx,
            engine,
            size,
            calls: CallLock::new(),
            broken: AtomicBool::new(false),
            rank,
            timeout: Mutex::new(timeout),
            health: Arc::default(),
        }
    }

    /// Records `f` in the health state ([`Health::update`]) and raises this
    /// communicator's flag with the state's.
    fn update_health<R>(&self, f: impl FnOnce(&mut CommState) -> R) -> R {
        let r = self.health.update(f);
        if self.health.broken.load(Ordering::Acquire) {
            self.broken.store(true, Ordering::Release);
        }
        r
    }

    /// One communicator over `contexts`, driven by this process
    /// (`ncclCommInitAll`): rank `i` is on `contexts[i]`'s device. On a
    /// GPU every device must differ ([`NcclError::DuplicateDevice`]); under
    /// the emulator any number of ranks share its device. Use a
    /// [`Group`] to issue one collective on every rank from one thread.
    pub fn init_all(contexts: &[Arc<CudaContext>]) -> Result<Vec<Communicator>, NcclError> {
        let Some(first) = contexts.first() else {
            return Err(NcclError::BadWorld("Communicator::init_all needs at least one context".into()));
        };
        let emulated = first.backend().is_emulated();
        if contexts.iter().any(|c| c.backend().is_emulated() != emulated) {
            return Err(NcclError::MixedBackends);
        }
        let n = contexts.len();
        let timeout = default_timeout();
        if emulated {
            let clique = Clique::new(n);
            return Ok(contexts
                .iter()
                .enumerate()
                .map(|(r, c)| Communicator::new(c.clone(), r, n, Engine::Emulated { clique: clique.clone() }, timeout))
                .collect());
        }
        let devices: Vec<c_int> = contexts.iter().map(|c| c.ordinal() as c_int).collect();
        for (i, d) in devices.iter().enumerate() {
            if devices[..i].contains(d) {
                return Err(NcclError::DuplicateDevice { device: *d as usize });
            }
        }
        let api = nccl_api()?;
        first.bind_to_thread()?;
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); n];
        // SAFETY: `comms` has room for `n` handles and `devices` holds `n`
        // distinct device ordinals.
        let r = unsafe { (api.ncclCommInitAll)(comms.as_mut_ptr(), n as c_int, devices.as_ptr()) };
        NcclError::check("ncclCommInitAll", r, || last_error(api, std::ptr::null_mut()))?;
        Ok(contexts
            .iter()
            .zip(comms)
            .enumerate()
            .map(|(r, (c, comm))| Communicator::new(c.clone(), r, n, Engine::Gpu { api, comm }, timeout))
            .collect())
    }

    /// Rank `rank` of a communicator of `size` ranks named by `id`
    /// (`ncclCommInitRank`), on `ctx`'s device. Every rank calls this with
    /// the same id and size; it returns when all have joined, or fails
    /// after the timeout ([`set_timeout`](Self::set_timeout)'s default,
    /// `OXIDE_NCCL_TIMEOUT` seconds or 300 s) with the communicator aborted.
    ///
    /// On a GPU the communicator is non-blocking (`ncclConfig_t.blocking =
    /// 0`), so that every later call can be bounded by the timeout too.
    pub fn init_rank(ctx: &Arc<CudaContext>, id: &UniqueId, rank: usize, size: usize) -> Result<Communicator, NcclError> {
        Communicator::init_rank_with_timeout(ctx, id, rank, size, default_timeout())
    }

    /// [`init_rank`](Self::init_rank) with `timeout` for the join and as
    /// the communicator's timeout.
    pub fn init_rank_with_timeout(
        ctx: &Arc<CudaContext>,
        id: &UniqueId,
        rank: usize,
        size: usize,
        timeout: Duration,
    ) -> Result<Communicator, NcclError> {
        if size == 0 || rank >= size {
            return Err(NcclError::BadWorld(format!("rank {rank} of a communicator of {size} ranks does not exist")));
        }
        if size > c_int::MAX as usize {
            return Err(NcclError::BadWorld(format!("{size} ranks are more than NCCL counts")));
        }
        let emulated = ctx.backend().is_emulated();
        if id.is_emulated() != emulated {
            return Err(NcclError::IdKind { id_emulated: id.is_emulated() });
        }
        if emulated {
            let clique = Clique::join(id.key(), size, rank, timeout)?;
            return Ok(Communicator::new(ctx.clone(), rank, size, Engine::Emulated { clique }, timeout));
        }
        let api = nccl_api()?;
        ctx.bind_to_thread()?;
        let mut comm: ncclComm_t = std::ptr::null_mut();
        let mut config = sys::ncclConfig_t::new(false);
        // SAFETY: out-pointer to a local; the id is the C layout; the
        // configuration is initialised as NCCL_CONFIG_INITIALIZER does.
        let r = unsafe { (api.ncclCommInitRankConfig)(&mut comm, size as c_int, id.raw(), rank as c_int, &mut config) };
        if comm.is_null() {
            NcclError::check("ncclCommInitRankConfig", r, || last_error(api, comm))?;
            let detail = "NCCL returned no communicator".to_string();
            return Err(NcclError::Nccl { call: "ncclCommInitRankConfig", result: NcclResult::InternalError, detail });
        }
        let made = Communicator::new(ctx.clone(), rank, size, Engine::Gpu { api, comm }, timeout);
        made.settle("ncclCommInitRankConfig", r)?;
        Ok(made)
    }

    /// The rank of this communicator.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The context (device) this rank runs on.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Whether this is the emulator's communicator.
    pub fn is_emulated(&self) -> bool {
        matches!(self.engine, Engine::Emulated { .. })
    }

    /// The limit of every wait of this communicator.
    pub fn timeout(&self) -> Duration {
        *lock(&self.timeout)
    }

    /// Sets the limit of every later wait (init of a split, [`wait`](Self::wait),
    /// the emulator's rendezvous).
    pub fn set_timeout(&self, timeout: Duration) {
        *lock(&self.timeout) = timeout;
    }

    /// Aborts the communicator (`ncclCommAbort`): its queued work is
    /// dropped and, emulated, every peer's pending and later call fails.
    pub fn abort(self) {
        self.abort_in_place();
    }

    fn abort_in_place(&self) {
        // The flag is up before the lock below is taken: a call that holds
        // `calls` now finishes first, and any later one sees the flag under
        // the lock and is refused (NCCL frees an aborted communicator).
        if self.update_health(|st| std::mem::replace(&mut st.aborted, true)) {
            return;
        }
        match &self.engine {
            Engine::Gpu { api, comm } => {
                let _ = self.ctx.bind_to_thread();
                let _g = self.calls.lock();
                // SAFETY: a live communicator, aborted once (`aborted`).
                unsafe { (api.ncclCommAbort)(*comm) };
            }
            Engine::Emulated { clique } => clique.abort(self.rank),
        }
    }

    /// Whether an earlier operation failed asynchronously
    /// (`ncclCommGetAsyncError`); `Ok` while none has.
    pub fn async_error(&self) -> Result<(), NcclError> {
        self.usable()?;
        if let Engine::Gpu { api, comm } = &self.engine {
            let mut r: ncclResult_t = 0;
            let _g = self.calls.lock();
            // Again under the lock: an abort on another thread since the
            // first check has freed the communicator.
            self.usable()?;
            // SAFETY: a live communicator; out-pointer to a local.
            let q = unsafe { (api.ncclCommGetAsyncError)(*comm, &mut r) };
            NcclError::check("ncclCommGetAsyncError", q, || last_error(api, *comm))?;
            if r != sys::ncclInProgress {
                NcclError::check("an earlier NCCL operation", r, || last_error(api, *comm))?;
            }
        }
        Ok(())
    }

    /// Waits until `stream` has finished everything queued on it, at most
    /// the communicator's timeout, polling NCCL's asynchronous error. On an
    /// error or the timeout the communicator is aborted (so that the
    /// stream's NCCL kernels end) and the error returned: a peer that died
    /// is an error here, never a hang.
    pub fn wait(&self, stream: &CudaStream) -> Result<(), NcclError> {
        let timeout = self.timeout();
        let start = Instant::now();
        loop {
            if let Err(e) = self.async_error() {
                self.abort_in_place();
                return Err(e);
            }
            if stream.is_complete()? {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                self.abort_in_place();
                return Err(NcclError::Timeout { call: "Communicator::wait", waited: timeout, missing: Vec::new() });
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Splits the communicator (`ncclCommSplit`, a collective of every
    /// rank): ranks that pass the same `color` form a new communicator,
    /// ordered by `key` (ties by their rank here); `None` takes no part and
    /// gets `None`.
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>, NcclError> {
        self.usable()?;
        if color.is_some_and(|c| c > c_int::MAX as u32) {
            return Err(NcclError::BadWorld(format!("split colour {} is larger than NCCL's int", color.unwrap_or(0))));
        }
        let timeout = self.timeout();
        match &self.engine {
            Engine::Emulated { clique } => {
                let ticket = clique.post(self.rank, Collective::Split { color, key });
                match clique.wait(&ticket, timeout) {
                    Ok(Outcome::Split(Some((clique, rank)))) => {
                        let size = clique.size();
                        Ok(Some(Communicator::new(self.ctx.clone(), rank, size, Engine::Emulated { clique }, timeout)))
                    }
                    Ok(_) => Ok(None),
                    Err(e) => Err(self.emulated_failure(clique, e)),
                }
            }
            Engine::Gpu { api, comm } => {
                self.ctx.bind_to_thread()?;
                // Atomic: NCCL may write it from its own thread (below).
                let new = std::sync::atomic::AtomicPtr::<c_void>::new(std::ptr::null_mut());
                let mut config = sys::ncclConfig_t::new(false);
                let c = color.map_or(sys::NCCL_SPLIT_NOCOLOR, |c| c as c_int);
                let r = {
                    let _g = self.calls.lock();
                    // Again under the lock, as in `submit`.
                    self.usable()?;
                    // SAFETY: a live communicator; an out-pointer to a local
                    // that outlives the split (awaited below), with the
                    // layout of a pointer; an initialised configuration.
                    unsafe { (api.ncclCommSplit)(*comm, c, key, new.as_ptr().cast(), &mut config) }
                };
                self.settle("ncclCommSplit", r)?;
                if color.is_none() {
                    return Ok(None);
                }
                // A non-blocking split finishes in the background, and NCCL
                // writes `new` only then: 2.28 on an H200 answered
                // ncclSuccess with it still null. A rank with a colour gets a
                // communicator, so wait for it (bounded, and failing with the
                // parent if the split does).
                let start = Instant::now();
                let new: ncclComm_t = loop {
                    let p = new.load(std::sync::atomic::Ordering::Acquire);
                    if !p.is_null() {
                        break p;
                    }
                    self.async_error()?;
                    if start.elapsed() >= timeout {
                        self.abort_in_place();
                        return Err(NcclError::Timeout { call: "ncclCommSplit", waited: timeout, missing: Vec::new() });
                    }
                    std::thread::sleep(Duration::from_micros(50));
                };
                let mut rank: c_int = 0;
                let mut size: c_int = 0;
                let mut child = Communicator::new(self.ctx.clone(), 0, 0, Engine::Gpu { api, comm: new }, timeout);
                child.settle("ncclCommSplit", sys::ncclInProgress)?;
                // SAFETY: a live communicator; out-pointers to locals.
                unsafe {
                    NcclError::check("ncclCommUserRank", (api.ncclCommUserRank)(new, &mut rank), || last_error(api, new))?;
                    NcclError::check("ncclCommCount", (api.ncclCommCount)(new, &mut size), || last_error(api, new))?;
                }
                child.rank = rank as usize;
                child.size = size as usize;
                Ok(Some(child))
            }
        }
    }

    /// After a GPU call returned `r`: `ncclInProgress` (a non-blocking
    /// communicator) is polled until done, at most the timeout; an error
    /// aborts the communicator.
    fn settle(&self, call: &'static str, r: ncclResult_t) -> Result<(), NcclError> {
        let Engine::Gpu { api, comm } = &self.engine else { return Ok(()) };
        let (api, comm) = (*api, *comm);
        let fail = |e: NcclError| {
            self.abort_in_place();
            Err(e)
        };
        if r != sys::ncclInProgress {
            if let Err(e) = NcclError::check(call, r, || last_error(api, comm)) {
                return fail(e);
            }
            // Done: only a call answered `ncclInProgress` goes on in the
            // background.
            return Ok(());
        }
        let timeout = self.timeout();
        let start = Instant::now();
        loop {
            let mut state: ncclResult_t = 0;
            let q = {
                let _g = self.calls.lock();
                // Under the lock, as in `submit`: aborted meanwhile (by
                // another thread) is freed.
                self.usable()?;
                // SAFETY: a live communicator; out-pointer to a local.
                unsafe { (api.ncclCommGetAsyncError)(comm, &mut state) }
            };
            if let Err(e) = NcclError::check("ncclCommGetAsyncError", q, || last_error(api, comm)) {
                return fail(e);
            }
            match state {
                sys::ncclSuccess => return Ok(()),
                sys::ncclInProgress if start.elapsed() < timeout => std::thread::sleep(Duration::from_micros(100)),
                sys::ncclInProgress => return fail(NcclError::Timeout { call, waited: timeout, missing: Vec::new() }),
                other => return fail(NcclError::Nccl { call, result: NcclResult::from_raw(other).expect("not success"), detail: last_error(api, comm) }),
            }
        }
    }

    /// Refuses work on an aborted or failed communicator.
    #[inline]
    fn usable(&self) -> Result<(), NcclError> {
        if self.is_broken() {
            return self.refused();
        }
        Ok(())
    }

    /// Whether the communicator has failed or is aborted.
    #[inline]
    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire) || self.emulated_broken()
    }

    /// [`usable`](Self::usable)'s refusal, built out of line straight into
    /// the caller's result (no error-sized temporary in its frame).
    #[cold]
    #[inline(never)]
    fn refused(&self) -> Result<(), NcclError> {
        Err(self.unusable())
    }

    /// Whether an emulated communicator's operations have recorded a
    /// failure (their host functions raise the shared flag only).
    #[inline]
    fn emulated_broken(&self) -> bool {
        matches!(self.engine, Engine::Emulated { .. }) && self.health.broken.load(Ordering::Acquire)
    }

    /// Why the communicator may not be used (its flag is up).
    #[cold]
    #[inline(never)]
    fn unusable(&self) -> NcclError {
        let st = lock(&self.health.state);
        match &st.failed {
            Some(first) if !st.aborted => NcclError::CommFailed { first: Box::new(first.clone()) },
            _ => NcclError::Aborted { by: None },
        }
    }

    /// An emulated failure: recorded as the communicator's, and a timeout
    /// aborts it (as [`wait`](Self::wait) does on a GPU).
    fn emulated_failure(&self, clique: &Clique, e: CollectiveError) -> NcclError {
        record_failure(clique, self.rank, &self.health, e)
    }

    #[inline]
    fn check_context(&self, call: &'static str, operand: Operand, ctx: &Arc<CudaContext>) -> Result<(), NcclError> {
        if Arc::ptr_eq(ctx, &self.ctx) || ctx.raw() == self.ctx.raw() {
            Ok(())
        } else {
            Err(self.wrong_context(call, operand, ctx))
        }
    }

    #[cold]
    #[inline(never)]
    fn wrong_context(&self, call: &'static str, operand: Operand, ctx: &CudaContext) -> NcclError {
        NcclError::WrongContext { call, operand, expected: self.ctx.ordinal(), actual: ctx.ordinal() }
    }

    #[inline]
    fn check_rank(&self, call: &'static str, rank: usize) -> Result<(), NcclError> {
        if rank < self.size {
            Ok(())
        } else {
            Err(NcclError::RankOutOfRange { call, rank, size: self.size })
        }
    }

    #[inline]
    fn check_element<T: NcclElement>(&self) -> Result<(), NcclError> {
        if let Engine::Gpu { api, .. } = &self.engine {
            if is_fp8::<T>() && api.version < sys::FP8_VERSION {
                return Err(NcclError::Fp8Unsupported { version: api.version });
            }
        }
        Ok(())
    }

    /// The operation handed to NCCL for `op` on elements of `T`, or the
    /// reason NCCL cannot do it (checked before anything is queued, on the
    /// emulator too, so that a program refused on a GPU is refused there).
    ///
    /// - NCCL has no average of fp8 values: it answers `ncclInvalidArgument`
    ///   without a reason (2.28 on an H200).
    /// - On one rank every reduction is the identity, and `Avg` is asked of
    ///   NCCL as `Sum`: NCCL 2.28.3's one-rank average of f64 leaves the
    ///   last element of a 65,537-element buffer unwritten (a C program
    ///   calling NCCL directly shows the same), while its one-rank sum is a
    ///   plain copy.
    #[inline]
    fn reduction<T: NcclElement>(&self, call: &'static str, op: ReduceOp) -> Result<sys::ncclRedOp_t, NcclError> {
        if !op.is_available_for::<T>() {
            return Err(NcclError::AvgOfFp8 { call, element: T::NAME });
        }
        Ok(self.raw_op(op))
    }

    /// NCCL's operation for `op` on this communicator, unchecked (see
    /// [`reduction`](Self::reduction)): `Avg` on one rank is `Sum`.
    #[inline]
    fn raw_op(&self, op: ReduceOp) -> sys::ncclRedOp_t {
        if op == ReduceOp::Avg && self.size == 1 {
            sys::ncclSum
        } else {
            op.raw()
        }
    }

    /// The checks every call shares: usable, the stream's context, the
    /// element type.
    #[inline]
    fn prologue<T: NcclElement>(&self, call: &'static str, stream: &CudaStream) -> Result<(), NcclError> {
        self.usable()?;
        self.check_context(call, Operand::Stream, stream.context())?;
        self.check_element::<T>()
    }

    /// Queues one checked operation on `stream`: `gpu` calls NCCL, `op`
    /// makes the emulator's description of the same.
    ///
    /// The thread's current context is left as it is: NCCL makes the
    /// communicator's device current itself where it launches work, and
    /// needs no device set for a call (NCCL's group calls drive several
    /// devices from one thread that way); a one-rank communicator's copy
    /// runs on the stream's device whatever the current one.
    #[inline]
    fn submit(
        &self,
        call: &'static str,
        stream: &Arc<CudaStream>,
        op: impl FnOnce() -> Collective,
        gpu: impl FnOnce(&'static NcclApi, ncclComm_t, sys::cudaStream_t) -> ncclResult_t,
    ) -> Result<(), NcclError> {
        match &self.engine {
            Engine::Gpu { api, comm } => self.submit_gpu(call, api, *comm, stream, gpu),
            Engine::Emulated { clique } => self.submit_emulated(clique, stream, op()),
        }
    }

    /// [`submit`](Self::submit) on a GPU communicator: `gpu` called under
    /// the lock, after the state's second check and the group's note.
    /// Always inlined, as [`collective`](Self::collective) is: the usual
    /// call is then one body with no call of oxide's own.
    #[inline(always)]
    fn submit_gpu(
        &self,
        call: &'static str,
        api: &'static NcclApi,
        comm: ncclComm_t,
        stream: &CudaStream,
        gpu: impl FnOnce(&'static NcclApi, ncclComm_t, sys::cudaStream_t) -> ncclResult_t,
    ) -> Result<(), NcclError> {
        let held = self.calls.lock();
        // Again under the lock: an abort on another thread between the
        // first check and here has freed the communicator. (The refusal is
        // built after the lock is let go, straight into the result.)
        if self.is_broken() {
            drop(held);
            return self.refused();
        }
        let grouped = group_note_gpu(api, comm);
        let r = gpu(api, comm, stream.raw());
        drop(held);
        if r == sys::ncclSuccess {
            return Ok(());
        }
        self.answered(call, r, grouped, api, comm)
    }

    /// NCCL's answer `r` (not success) to `call`, made in a group or not.
    #[cold]
    #[inline(never)]
    fn answered(&self, call: &'static str, r: ncclResult_t, grouped: bool, api: &'static NcclApi, comm: ncclComm_t) -> Result<(), NcclError> {
        if grouped {
            // Inside a group NCCL answers at ncclGroupEnd.
            return if r == sys::ncclInProgress { Ok(()) } else { Err(nccl_error(call, r, api, comm)) };
        }
        self.settle(call, r)
    }

    /// The usual call's checks in one inlined test, for the path that
    /// skips the general one: a GPU communicator, not failed nor aborted,
    /// `stream` of its context (the same `Arc`), an element type that is
    /// no fp8 (whose version check and lack of `Avg` the general path
    /// makes). The table and the communicator; `None` where the general
    /// path must decide.
    #[inline]
    fn usual<T: NcclElement>(&self, stream: &CudaStream) -> Option<(&'static NcclApi, ncclComm_t)> {
        let Engine::Gpu { api, comm } = self.engine else { return None };
        let usual = !self.broken.load(Ordering::Acquire) & Arc::ptr_eq(stream.context(), &self.ctx) & !is_fp8::<T>();
        usual.then_some((api, comm))
    }

    /// One call of every collective and point-to-point method: the usual
    /// call passes every check of the general path at its first test, so
    /// those tests are made here, together, and the rest of its path is
    /// the lock and NCCL's call (`gpu`). The usual call is
    /// [`usual`](Self::usual)'s, with `buffers` of the communicator's
    /// context (the same `Arc`) used on `stream` alone (no ordering to
    /// add) and `fits`, the call's own checks (lengths, ranks), true.
    /// Anything else goes to `general`, which makes every check in full.
    /// `gpu` is called only on the usual path: the `SAFETY` of its NCCL
    /// call rests on these tests, as the general path's rests on its own.
    ///
    /// Always inlined: a caller that makes the same call from two places
    /// would otherwise get one out-of-line copy, with its closures' values
    /// passed through memory.
    #[inline(always)]
    fn collective<T: NcclElement, B: Buffers>(
        &self,
        call: &'static str,
        stream: &Arc<CudaStream>,
        fits: bool,
        buffers: B,
        gpu: impl FnOnce(&'static NcclApi, ncclComm_t, sys::cudaStream_t) -> ncclResult_t,
        general: impl FnOnce(B) -> Result<(), NcclError>,
    ) -> Result<(), NcclError> {
        if let Some((api, comm)) = self.usual::<T>(stream) {
            if fits & buffers.usual_on(&self.ctx, stream) {
                return self.submit_gpu(call, api, comm, stream, gpu);
            }
        }
        general(buffers)
    }

    /// [`submit`](Self::submit) on the emulator's clique.
    #[inline(never)]
    fn submit_emulated(&self, clique: &Arc<Clique>, stream: &Arc<CudaStream>, op: Collective) -> Result<(), NcclError> {
        let _g = self.calls.lock();
        let timeout = self.timeout();
        let slot: Arc<Mutex<Option<NcclError>>> = Arc::default();
        let ticket: Arc<Mutex<Option<Ticket>>> = Arc::default();
        let post = {
            let (clique, ticket, rank) = (clique.clone(), ticket.clone(), self.rank);
            move || *lock(&ticket) = Some(clique.post(rank, op))
        };
        let wait = {
            let (clique, rank, health, slot) = (clique.clone(), self.rank, self.health.clone(), slot.clone());
            move || {
                let Some(t) = lock(&ticket).take() else { return };
                if let Err(e) = clique.wait(&t, timeout) {
                    *lock(&slot) = Some(record_failure(&clique, rank, &health, e));
                }
            }
        };
        if in_group() {
            stream.launch_host_fn_replayable(post)?;
            group_note_wait((stream.clone(), Box::new(wait), slot));
            return Ok(());
        }
        // Replayable: inside a capture this is a host node that every
        // launch of the graph runs (each launch a new round).
        stream.launch_host_fn_replayable(move || {
            post();
            wait();
        })?;
        let failed = lock(&slot).take();
        failed.map_or(Ok(()), Err)
    }

    /// Every rank's `recv` = the reduction (`op`) of every rank's `send`
    /// (`ncclAllReduce`). `send` and `recv` must be equally long.
    #[inline]
    pub fn all_reduce<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        let (s, r, n, nccl_op) = (send.device_ptr(), recv.device_ptr(), send.len(), self.raw_op(op));
        let fits = send.len() == recv.len();
        // SAFETY (closure): as in all_reduce_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclAllReduce)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, nccl_op, comm, st)
        };
        self.collective::<T, _>("ncclAllReduce", stream, fits, (send, recv), gpu, |(send, recv)| {
            self.all_reduce_checked(send, recv, op, stream)
        })
    }

    /// [`all_reduce`](Self::all_reduce)'s general path.
    #[inline(never)]
    fn all_reduce_checked<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        mut recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        const CALL: &str = "ncclAllReduce";
        self.prologue::<T>(CALL, stream)?;
        let nccl_op = self.reduction::<T>(CALL, op)?;
        self.check_context(CALL, Operand::Send, send.context())?;
        self.check_context(CALL, Operand::Recv, recv.as_slice().context())?;
        check_len(CALL, Operand::Recv, send.len(), recv.len())?;
        send.order_read(stream)?;
        recv.order_write(stream)?;
        let (s, r, n) = (send.device_ptr(), recv.device_ptr(), send.len());
        let op_e = move || Collective::AllReduce { send: s, recv: r, count: n, element: T::ELEMENT, op: op.emulated() };
        // SAFETY (closure): both buffers are live device memory of the
        // communicator's context holding `n` elements of T.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclAllReduce)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, nccl_op, comm, st)
        })
    }

    /// [`all_reduce`](Self::all_reduce) in place: `buf` = the reduction of
    /// every rank's `buf` (what data-parallel training does to gradients).
    #[inline]
    pub fn all_reduce_in_place<T: NcclElement>(
        &self,
        buf: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        let (p, n, nccl_op) = (buf.device_ptr(), buf.len(), self.raw_op(op));
        // SAFETY (closure): as in all_reduce_in_place_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclAllReduce)(p as *const c_void, p as *mut c_void, n, T::DATA_TYPE, nccl_op, comm, st)
        };
        self.collective::<T, _>("ncclAllReduce", stream, true, buf, gpu, |buf| self.all_reduce_in_place_checked(buf, op, stream))
    }

    /// [`all_reduce_in_place`](Self::all_reduce_in_place)'s general path.
    #[inline(never)]
    fn all_reduce_in_place_checked<T: NcclElement>(
        &self,
        mut buf: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        const CALL: &str = "ncclAllReduce";
        self.prologue::<T>(CALL, stream)?;
        let nccl_op = self.reduction::<T>(CALL, op)?;
        self.check_context(CALL, Operand::Recv, buf.as_slice().context())?;
        buf.order_write(stream)?;
        let (p, n) = (buf.device_ptr(), buf.len());
        let op_e = move || Collective::AllReduce { send: p, recv: p, count: n, element: T::ELEMENT, op: op.emulated() };
        // SAFETY (closure): live device memory of `n` elements; NCCL
        // allows sendbuff == recvbuff.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclAllReduce)(p as *const c_void, p as *mut c_void, n, T::DATA_TYPE, nccl_op, comm, st)
        })
    }

    /// Every rank's `recv` = rank `root`'s `send` (`ncclBroadcast`). Only
    /// the root's `send` is read; every `send` must be as long as `recv`.
    #[inline]
    pub fn broadcast<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        let (s, r, n) = (send.device_ptr(), recv.device_ptr(), send.len());
        let fits = (root < self.size) & (send.len() == recv.len());
        // SAFETY (closure): as in broadcast_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclBroadcast)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, root as c_int, comm, st)
        };
        self.collective::<T, _>("ncclBroadcast", stream, fits, (send, recv), gpu, |(send, recv)| {
            self.broadcast_checked(send, recv, root, stream)
        })
    }

    /// [`broadcast`](Self::broadcast)'s general path.
    #[inline(never)]
    fn broadcast_checked<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        mut recv: DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        const CALL: &str = "ncclBroadcast";
        self.prologue::<T>(CALL, stream)?;
        self.check_rank(CALL, root)?;
        self.check_context(CALL, Operand::Send, send.context())?;
        self.check_context(CALL, Operand::Recv, recv.as_slice().context())?;
        check_len(CALL, Operand::Recv, send.len(), recv.len())?;
        send.order_read(stream)?;
        recv.order_write(stream)?;
        let (s, r, n) = (send.device_ptr(), recv.device_ptr(), send.len());
        let op_e = move || Collective::Broadcast { send: s, recv: r, count: n, element: T::ELEMENT, root };
        // SAFETY (closure): as for all_reduce.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclBroadcast)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, root as c_int, comm, st)
        })
    }

    /// [`broadcast`](Self::broadcast) in place: every rank's `buf` = the
    /// root's `buf` (e.g. initial weights from rank 0).
    #[inline]
    pub fn broadcast_in_place<T: NcclElement>(
        &self,
        buf: DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        let (p, n) = (buf.device_ptr(), buf.len());
        // SAFETY (closure): as in broadcast_in_place_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclBroadcast)(p as *const c_void, p as *mut c_void, n, T::DATA_TYPE, root as c_int, comm, st)
        };
        self.collective::<T, _>("ncclBroadcast", stream, root < self.size, buf, gpu, |buf| {
            self.broadcast_in_place_checked(buf, root, stream)
        })
    }

    /// [`broadcast_in_place`](Self::broadcast_in_place)'s general path.
    #[inline(never)]
    fn broadcast_in_place_checked<T: NcclElement>(
        &self,
        mut buf: DeviceSliceMut<'_, T>,
        root: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        const CALL: &str = "ncclBroadcast";
        self.prologue::<T>(CALL, stream)?;
        self.check_rank(CALL, root)?;
        self.check_context(CALL, Operand::Recv, buf.as_slice().context())?;
        buf.order_write(stream)?;
        let (p, n) = (buf.device_ptr(), buf.len());
        let op_e = move || Collective::Broadcast { send: p, recv: p, count: n, element: T::ELEMENT, root };
        // SAFETY (closure): as for all_reduce_in_place.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclBroadcast)(p as *const c_void, p as *mut c_void, n, T::DATA_TYPE, root as c_int, comm, st)
        })
    }

    /// Rank `root`'s `recv` = the reduction of every rank's `send`
    /// (`ncclReduce`); other ranks' `recv` is not written. `send` and
    /// `recv` must be equally long on every rank.
    #[inline]
    pub fn reduce<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        root: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        let (s, r, n, nccl_op) = (send.device_ptr(), recv.device_ptr(), send.len(), self.raw_op(op));
        let fits = (root < self.size) & (send.len() == recv.len());
        // SAFETY (closure): as in reduce_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclReduce)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, nccl_op, root as c_int, comm, st)
        };
        self.collective::<T, _>("ncclReduce", stream, fits, (send, recv), gpu, |(send, recv)| {
            self.reduce_checked(send, recv, op, root, stream)
        })
    }

    /// [`reduce`](Self::reduce)'s general path.
    #[inline(never)]
    fn reduce_checked<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        mut recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        root: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        const CALL: &str = "ncclReduce";
        self.prologue::<T>(CALL, stream)?;
        let nccl_op = self.reduction::<T>(CALL, op)?;
        self.check_rank(CALL, root)?;
        self.check_context(CALL, Operand::Send, send.context())?;
        self.check_context(CALL, Operand::Recv, recv.as_slice().context())?;
        check_len(CALL, Operand::Recv, send.len(), recv.len())?;
        send.order_read(stream)?;
        recv.order_write(stream)?;
        let (s, r, n) = (send.device_ptr(), recv.device_ptr(), send.len());
        let op_e = move || Collective::Reduce { send: s, recv: r, count: n, element: T::ELEMENT, op: op.emulated(), root };
        // SAFETY (closure): as for all_reduce.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclReduce)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, nccl_op, root as c_int, comm, st)
        })
    }

    /// Every rank's `recv` = every rank's `send` concatenated in rank
    /// order (`ncclAllGather`): `recv` holds `send.len() × size` elements.
    #[inline]
    pub fn all_gather<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        let (s, r, n) = (send.device_ptr(), recv.device_ptr(), send.len());
        let fits = send.len().saturating_mul(self.size) == recv.len();
        // SAFETY (closure): as in all_gather_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclAllGather)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, comm, st)
        };
        self.collective::<T, _>("ncclAllGather", stream, fits, (send, recv), gpu, |(send, recv)| {
            self.all_gather_checked(send, recv, stream)
        })
    }

    /// [`all_gather`](Self::all_gather)'s general path.
    #[inline(never)]
    fn all_gather_checked<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        mut recv: DeviceSliceMut<'_, T>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        const CALL: &str = "ncclAllGather";
        self.prologue::<T>(CALL, stream)?;
        self.check_context(CALL, Operand::Send, send.context())?;
        self.check_context(CALL, Operand::Recv, recv.as_slice().context())?;
        check_len(CALL, Operand::Recv, send.len().saturating_mul(self.size), recv.len())?;
        send.order_read(stream)?;
        recv.order_write(stream)?;
        let (s, r, n) = (send.device_ptr(), recv.device_ptr(), send.len());
        let op_e = move || Collective::AllGather { send: s, recv: r, count: n, element: T::ELEMENT };
        // SAFETY (closure): `send` holds `n` elements and `recv` `n × size`.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclAllGather)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, comm, st)
        })
    }

    /// Rank r's `recv` = block r of the reduction of every rank's `send`
    /// (`ncclReduceScatter`): `send` holds `recv.len() × size` elements.
    #[inline]
    pub fn reduce_scatter<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        let (s, r, n, nccl_op) = (send.device_ptr(), recv.device_ptr(), recv.len(), self.raw_op(op));
        let fits = recv.len().saturating_mul(self.size) == send.len();
        // SAFETY (closure): as in reduce_scatter_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclReduceScatter)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, nccl_op, comm, st)
        };
        self.collective::<T, _>("ncclReduceScatter", stream, fits, (send, recv), gpu, |(send, recv)| {
            self.reduce_scatter_checked(send, recv, op, stream)
        })
    }

    /// [`reduce_scatter`](Self::reduce_scatter)'s general path.
    #[inline(never)]
    fn reduce_scatter_checked<T: NcclElement>(
        &self,
        send: DeviceSlice<'_, T>,
        mut recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: &Arc<CudaStream>,
    ) -> Result<(), NcclError> {
        const CALL: &str = "ncclReduceScatter";
        self.prologue::<T>(CALL, stream)?;
        let nccl_op = self.reduction::<T>(CALL, op)?;
        self.check_context(CALL, Operand::Send, send.context())?;
        self.check_context(CALL, Operand::Recv, recv.as_slice().context())?;
        check_len(CALL, Operand::Send, recv.len().saturating_mul(self.size), send.len())?;
        send.order_read(stream)?;
        recv.order_write(stream)?;
        let (s, r, n) = (send.device_ptr(), recv.device_ptr(), recv.len());
        let op_e = move || Collective::ReduceScatter { send: s, recv: r, count: n, element: T::ELEMENT, op: op.emulated() };
        // SAFETY (closure): `recv` holds `n` elements and `send` `n × size`.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclReduceScatter)(s as *const c_void, r as *mut c_void, n, T::DATA_TYPE, nccl_op, comm, st)
        })
    }

    /// Sends `buf` to rank `peer` (`ncclSend`), whose [`recv`](Self::recv)
    /// of as many elements of `T` from this rank takes it. Two ranks that
    /// exchange data both ways put their send and receive in a [`Group`].
    #[inline]
    pub fn send<T: NcclElement>(&self, buf: DeviceSlice<'_, T>, peer: usize, stream: &Arc<CudaStream>) -> Result<(), NcclError> {
        let (p, n) = (buf.device_ptr(), buf.len());
        // A send to this rank itself (allowed in a group) is left to the
        // general path.
        let fits = (peer < self.size) & (peer != self.rank);
        // SAFETY (closure): as in send_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclSend)(p as *const c_void, n, T::DATA_TYPE, peer as c_int, comm, st)
        };
        self.collective::<T, _>("ncclSend", stream, fits, buf, gpu, |buf| self.send_checked(buf, peer, stream))
    }

    /// [`send`](Self::send)'s general path.
    #[inline(never)]
    fn send_checked<T: NcclElement>(&self, buf: DeviceSlice<'_, T>, peer: usize, stream: &Arc<CudaStream>) -> Result<(), NcclError> {
        const CALL: &str = "ncclSend";
        self.prologue::<T>(CALL, stream)?;
        self.check_rank(CALL, peer)?;
        if peer == self.rank && !in_group() {
            return Err(NcclError::SelfPeer { call: CALL, rank: peer });
        }
        self.check_context(CALL, Operand::Send, buf.context())?;
        buf.order_read(stream)?;
        let (p, n) = (buf.device_ptr(), buf.len());
        let op_e = move || Collective::Send { send: p, count: n, element: T::ELEMENT, peer };
        // SAFETY (closure): live device memory of `n` elements.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclSend)(p as *const c_void, n, T::DATA_TYPE, peer as c_int, comm, st)
        })
    }

    /// Receives `buf.len()` elements from rank `peer` (`ncclRecv`); see
    /// [`send`](Self::send).
    #[inline]
    pub fn recv<T: NcclElement>(&self, buf: DeviceSliceMut<'_, T>, peer: usize, stream: &Arc<CudaStream>) -> Result<(), NcclError> {
        let (p, n) = (buf.device_ptr(), buf.len());
        // As in send: a receive from this rank itself takes the general path.
        let fits = (peer < self.size) & (peer != self.rank);
        // SAFETY (closure): as in recv_checked.
        let gpu = move |api: &NcclApi, comm, st| unsafe {
            (api.ncclRecv)(p as *mut c_void, n, T::DATA_TYPE, peer as c_int, comm, st)
        };
        self.collective::<T, _>("ncclRecv", stream, fits, buf, gpu, |buf| self.recv_checked(buf, peer, stream))
    }

    /// [`recv`](Self::recv)'s general path.
    #[inline(never)]
    fn recv_checked<T: NcclElement>(&self, mut buf: DeviceSliceMut<'_, T>, peer: usize, stream: &Arc<CudaStream>) -> Result<(), NcclError> {
        const CALL: &str = "ncclRecv";
        self.prologue::<T>(CALL, stream)?;
        self.check_rank(CALL, peer)?;
        if peer == self.rank && !in_group() {
            return Err(NcclError::SelfPeer { call: CALL, rank: peer });
        }
        self.check_context(CALL, Operand::Recv, buf.as_slice().context())?;
        buf.order_write(stream)?;
        let (p, n) = (buf.device_ptr(), buf.len());
        let op_e = move || Collective::Recv { recv: p, count: n, element: T::ELEMENT, peer };
        // SAFETY (closure): live device memory of `n` elements.
        self.submit(CALL, stream, op_e, |api, comm, st| unsafe {
            (api.ncclRecv)(p as *mut c_void, n, T::DATA_TYPE, peer as c_int, comm, st)
        })
    }
}

/// The buffers of one call, as [`Communicator::collective`]'s test of the
/// usual call sees them: one slice, or a pair.
trait Buffers {
    /// Whether every buffer is of `ctx` (the same `Arc`) and needs no
    /// ordering on `stream` (every use so far queued there).
    fn usual_on(&self, ctx: &Arc<CudaContext>, stream: &CudaStream) -> bool;
}

impl<T: NcclElement> Buffers for DeviceSlice<'_, T> {
    #[inline]
    fn usual_on(&self, ctx: &Arc<CudaContext>, stream: &CudaStream) -> bool {
        Arc::ptr_eq(self.context(), ctx) & self.is_ordered_on(stream)
    }
}

impl<T: NcclElement> Buffers for DeviceSliceMut<'_, T> {
    #[inline]
    fn usual_on(&self, ctx: &Arc<CudaContext>, stream: &CudaStream) -> bool {
        Arc::ptr_eq(self.as_slice().context(), ctx) & self.is_ordered_on(stream)
    }
}

impl<A: Buffers, B: Buffers> Buffers for (A, B) {
    #[inline]
    fn usual_on(&self, ctx: &Arc<CudaContext>, stream: &CudaStream) -> bool {
        self.0.usual_on(ctx, stream) & self.1.usual_on(ctx, stream)
    }
}

fn check_len(call: &'static str, operand: Operand, expected: usize, actual: usize) -> Result<(), NcclError> {
    if expected == actual {
        Ok(())
    } else {
        Err(NcclError::LengthMismatch { call, operand, expected, actual })
    }
}

/// Records an emulated failure as the communicator's first (if none is);
/// a timeout aborts the clique, so that no peer waits on.
fn record_failure(clique: &Clique, rank: usize, health: &Health, e: CollectiveError) -> NcclError {
    if let CollectiveError::Timeout { .. } = e {
        clique.abort(rank);
    }
    let err = NcclError::from(e);
    health.update(|st| {
        st.failed.get_or_insert_with(|| err.clone());
    });
    err
}

impl Drop for Communicator {
    fn drop(&mut self) {
        let st = lock(&self.health.state);
        let (aborted, failed) = (st.aborted, st.failed.is_some());
        drop(st);
        match &self.engine {
            Engine::Emulated { clique } => clique.leave(self.rank),
            Engine::Gpu { api, comm } if !aborted => {
                let _ = self.ctx.bind_to_thread();
                // Errors are ignored: drop never panics. A failed
                // communicator is aborted, not destroyed: destroying waits
                // for work that may never finish. A healthy one is
                // finalised first (its queued work completes; on a
                // non-blocking communicator that is polled, within the
                // timeout, else it is aborted), then destroyed.
                // SAFETY: a live communicator, released once.
                unsafe {
                    if failed || self.settle("ncclCommFinalize", (api.ncclCommFinalize)(*comm)).is_err() {
                        if !lock(&self.health.state).aborted {
                            (api.ncclCommAbort)(*comm);
                        }
                    } else {
                        (api.ncclCommDestroy)(*comm);
                    }
                }
            }
            Engine::Gpu { .. } => {}
        }
    }
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.ctx.ordinal())
            .field("emulated", &self.is_emulated())
            .finish()
    }
}

type PendingWait = (Arc<CudaStream>, Box<dyn Fn() + Send + Sync>, Arc<Mutex<Option<NcclError>>>);

/// How many GPU communicators a group notes in [`GroupState`]; the rest
/// go to [`GroupMore`].
const INLINE_COMMS: usize = 8;

/// This thread's open groups. Plain cells with no destructor, so that an
/// access is a thread-local address with no lazy-initialisation test (a
/// type that needs dropping would have its destructor registered on first
/// use, and every access would test for it): every group and every
/// collective reads it. What needs the heap is in [`GroupMore`], touched
/// only when used.
///
/// Aligned to a cache line, the counts first: a group of up to five
/// communicators reads and writes that one line (after NCCL's own work has
/// evicted it, one fetch).
#[repr(C, align(64))]
struct GroupState {
    /// Open [`Group`]s on this thread.
    depth: Cell<u32>,
    /// How many of them have called `ncclGroupStart` (lazily, at their
    /// first GPU operation, so that an emulated program never loads NCCL).
    gpu_depth: Cell<u32>,
    /// The NCCL table of the GPU operations (set with `gpu_depth`).
    api: Cell<Option<&'static NcclApi>>,
    /// How many of `comms` are set.
    ncomms: Cell<u32>,
    /// Whether [`GroupMore`] holds anything.
    more: Cell<bool>,
    /// The GPU communicators used in the outermost group, polled at its end
    /// when NCCL answers `ncclInProgress`: the first [`INLINE_COMMS`] here,
    /// the rest in [`GroupMore`].
    comms: [Cell<ncclComm_t>; INLINE_COMMS],
}

impl GroupState {
    const fn new() -> GroupState {
        GroupState {
            depth: Cell::new(0),
            gpu_depth: Cell::new(0),
            api: Cell::new(None),
            ncomms: Cell::new(0),
            more: Cell::new(false),
            comms: [const { Cell::new(std::ptr::null_mut()) }; INLINE_COMMS],
        }
    }
}

/// The heap part of this thread's groups.
struct GroupMore {
    /// GPU communicators past [`INLINE_COMMS`].
    comms: Vec<ncclComm_t>,
    /// Emulated operations posted in the group, waited for at its end.
    waits: Vec<PendingWait>,
}

thread_local! {
    static GROUP: GroupState = const { GroupState::new() };
    static GROUP_MORE: RefCell<GroupMore> = const { RefCell::new(GroupMore { comms: Vec::new(), waits: Vec::new() }) };
}

#[inline]
fn in_group() -> bool {
    GROUP.with(|g| g.depth.get() > 0)
}

/// Before a GPU operation on `comm`: the open groups call `ncclGroupStart`
/// now, and `comm` is noted for the group's end; whether a group is open.
#[inline]
fn group_note_gpu(api: &'static NcclApi, comm: ncclComm_t) -> bool {
    GROUP.with(|g| {
        let depth = g.depth.get();
        if depth == 0 {
            return false;
        }
        let mut started = g.gpu_depth.get();
        if started < depth {
            g.api.set(Some(api));
            while started < depth {
                // SAFETY: no arguments; matched by the group's ncclGroupEnd.
                unsafe { (api.ncclGroupStart)() };
                started += 1;
            }
            g.gpu_depth.set(started);
        }
        let n = g.ncomms.get() as usize;
        if !g.comms[..n].iter().any(|c| c.get() == comm) {
            if n < INLINE_COMMS {
                g.comms[n].set(comm);
                g.ncomms.set(n as u32 + 1);
            } else {
                group_note_more_comm(comm);
            }
        }
        true
    })
}

/// A communicator past the inline ones.
#[cold]
#[inline(never)]
fn group_note_more_comm(comm: ncclComm_t) {
    GROUP_MORE.with(|m| {
        let mut m = m.borrow_mut();
        if !m.comms.contains(&comm) {
            m.comms.push(comm);
        }
    });
    GROUP.with(|g| g.more.set(true));
}

/// An emulated operation posted in the group, waited for at its end.
fn group_note_wait(wait: PendingWait) {
    GROUP_MORE.with(|m| m.borrow_mut().waits.push(wait));
    GROUP.with(|g| g.more.set(true));
}

/// A group of NCCL calls (`ncclGroupStart` … `ncclGroupEnd`): the
/// collectives and sends/receives issued on this thread until
/// [`end`](Self::end) are launched together. Needed when one thread drives
/// several ranks (one collective per rank), and for a send and a receive
/// that must proceed at once (an exchange between two ranks).
///
/// Groups nest; only the outermost end launches. Dropping a group without
/// `end` ends it and ignores its errors.
///
/// ```
/// # use cuda_core::{CudaContext, DeviceBuffer};
/// # use cuda_nccl::{Communicator, Group, ReduceOp};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
/// let ctx = CudaContext::new(0)?;
/// let comms = Communicator::init_all(&[ctx.clone(), ctx.clone()])?; // two emulated ranks
/// let streams = [ctx.new_stream()?, ctx.new_stream()?];
/// let mut bufs = vec![
///     DeviceBuffer::from_host(&streams[0], &[1i32, 2])?,
///     DeviceBuffer::from_host(&streams[1], &[10i32, 20])?,
/// ];
/// let group = Group::start();
/// for ((comm, stream), buf) in comms.iter().zip(&streams).zip(&mut bufs) {
///     comm.all_reduce_in_place(buf.as_slice_mut(), ReduceOp::Sum, stream)?;
/// }
/// group.end()?;
/// assert_eq!(bufs[1].to_host_vec(&streams[1])?, [11, 22]);
/// # Ok(()) }
/// ```
#[must_use = "a group launches its calls when it ends"]
pub struct Group {
    ended: bool,
    /// Not Send: a group belongs to the thread that started it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Group {
    /// Starts a group on this thread.
    #[inline]
    pub fn start() -> Group {
        GROUP.with(|g| {
            let depth = g.depth.get();
            if depth == 0 {
                // The last group's communicators.
                g.ncomms.set(0);
            }
            g.depth.set(depth + 1);
        });
        Group { ended: false, _thread: std::marker::PhantomData }
    }

    /// Ends the group: the outermost one launches every call made in it
    /// (`ncclGroupEnd`) and reports the first error.
    #[inline]
    pub fn end(mut self) -> Result<(), NcclError> {
        self.ended = true;
        finish_group()
    }
}

impl Drop for Group {
    #[inline]
    fn drop(&mut self) {
        if !self.ended {
            let _ = finish_group();
        }
    }
}

/// Runs `f` inside a [`Group`].
#[inline]
pub fn group<R>(f: impl FnOnce() -> Result<R, NcclError>) -> Result<R, NcclError> {
    let g = Group::start();
    let r = f();
    let end = g.end();
    let r = r?;
    end.map(|()| r)
}

#[inline]
fn finish_group() -> Result<(), NcclError> {
    let (gpu_api, outermost, more) = GROUP.with(|g| {
        let (depth, gpu_depth) = (g.depth.get(), g.gpu_depth.get());
        let gpu_end = gpu_depth == depth && gpu_depth > 0;
        if gpu_end {
            g.gpu_depth.set(gpu_depth - 1);
        }
        g.depth.set(depth - 1);
        (if gpu_end { g.api.get() } else { None }, depth == 1, g.more.get())
    });
    let more = outermost && more;
    if let Some(api) = gpu_api {
        // SAFETY: matches the ncclGroupStart of this group.
        let r = unsafe { (api.ncclGroupEnd)() };
        if r != sys::ncclSuccess {
            return finish_group_slow(Some((api, r)), more);
        }
    }
    if more {
        return finish_group_slow(None, true);
    }
    Ok(())
}

/// The rest of [`finish_group`] where there is more to do than NCCL's
/// success: `gpu`, NCCL's other answer to `ncclGroupEnd`; `more`, the
/// outermost group's emulated operations to wait for.
#[inline(never)]
fn finish_group_slow(gpu: Option<(&'static NcclApi, ncclResult_t)>, more: bool) -> Result<(), NcclError> {
    let mut first: Option<NcclError> = None;
    if let Some((api, r)) = gpu {
        // Only a group of non-blocking communicators still in progress
        // needs their states polled; otherwise NCCL's answer is final (and
        // a later failure shows in `wait`).
        if r == sys::ncclInProgress {
            poll_group(api, &mut first);
        } else {
            first = Some(nccl_error("ncclGroupEnd", r, api, std::ptr::null_mut()));
        }
    }
    if more {
        finish_more(&mut first);
    }
    first.map_or(Ok(()), Err)
}

/// Polls the outermost group's communicators until none is in progress,
/// at most the default timeout; the first error into `first`.
#[cold]
#[inline(never)]
fn poll_group(api: &'static NcclApi, first: &mut Option<NcclError>) {
    let mut comms: Vec<ncclComm_t> = GROUP.with(|g| g.comms[..g.ncomms.get() as usize].iter().map(Cell::get).collect());
    comms.extend(GROUP_MORE.with(|m| m.borrow().comms.clone()));
    let timeout = default_timeout();
    let start = Instant::now();
    for comm in comms {
        loop {
            let mut state: ncclResult_t = 0;
            // SAFETY: a communicator used in this group, still live (its
            // owner is borrowed by the calls made in it).
            unsafe { (api.ncclCommGetAsyncError)(comm, &mut state) };
            if state == sys::ncclInProgress && start.elapsed() < timeout {
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            if state == sys::ncclInProgress {
                first.get_or_insert(NcclError::Timeout { call: "ncclGroupEnd", waited: timeout, missing: Vec::new() });
            } else if let Err(e) = NcclError::check("ncclGroupEnd", state, || last_error(api, comm)) {
                first.get_or_insert(e);
            }
            break;
        }
    }
}

/// At the outermost group's end: waits for its emulated operations and
/// forgets the communicators past the inline ones.
#[inline(never)]
fn finish_more(first: &mut Option<NcclError>) {
    GROUP.with(|g| g.more.set(false));
    let waits = GROUP_MORE.with(|m| {
        let mut m = m.borrow_mut();
        m.comms.clear();
        std::mem::take(&mut m.waits)
    });
    for (stream, wait, slot) in waits {
        let wait: Arc<dyn Fn() + Send + Sync> = Arc::from(wait);
        if let Err(e) = stream.launch_host_fn_replayable(move || wait()) {
            first.get_or_insert(e.into());
        }
        if let Some(e) = lock(&slot).take() {
            first.get_or_insert(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::UnsafeCell;

    /// A counter that only the lock keeps from racing.
    struct Guarded {
        lock: CallLock,
        count: UnsafeCell<u64>,
    }

    // SAFETY: `count` is touched only under `lock` (the test's claim).
    unsafe impl Sync for Guarded {}

    #[test]
    fn call_lock_serialises_threads() {
        const THREADS: u64 = 4;
        const EACH: u64 = 20_000;
        let g = Guarded { lock: CallLock::new(), count: UnsafeCell::new(0) };
        let shared = &g;
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(move || {
                    let g = shared;
                    for i in 0..EACH {
                        let _held = g.lock.lock();
                        // SAFETY: under the lock.
                        let c = unsafe { &mut *g.count.get() };
                        let v = *c;
                        // A yield now and then, so that others find it held
                        // and sleep (the contended path).
                        if i % 512 == 0 {
                            std::thread::yield_now();
                        }
                        *c = v + 1;
                    }
                });
            }
        });
        assert_eq!(g.count.into_inner(), THREADS * EACH);
        assert_eq!(g.lock.state.load(Ordering::Relaxed), CallLock::FREE);
    }

    #[test]
    fn call_lock_wakes_a_sleeping_waiter() {
        let lock = Arc::new(CallLock::new());
        let held = lock.lock();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                let _held = lock.lock();
                tx.send(()).unwrap();
            })
        };
        // The waiter marks the lock contended before it sleeps.
        while lock.state.load(Ordering::Acquire) != CallLock::CONTENDED {
            std::thread::yield_now();
        }
        assert!(rx.try_recv().is_err(), "the waiter took a held lock");
        drop(held);
        rx.recv_timeout(Duration::from_secs(10)).expect("the waiter was not woken");
        waiter.join().unwrap();
        assert_eq!(lock.state.load(Ordering::Relaxed), CallLock::FREE);
    }

    #[test]
    fn hot_fields_share_one_line() {
        // The collectives' fields sit in the communicator's first 64 bytes.
        assert_eq!(std::mem::align_of::<Communicator>(), 64);
        assert!(std::mem::offset_of!(Communicator, broken) < 64);
        assert!(std::mem::offset_of!(Communicator, calls) + std::mem::size_of::<CallLock>() <= 64);
        assert!(std::mem::offset_of!(Communicator, size) < 64);
        assert!(std::mem::offset_of!(Communicator, engine) + std::mem::size_of::<Engine>() <= 64);
        assert_eq!(std::mem::align_of::<GroupState>(), 64);
        assert!(std::mem::offset_of!(GroupState, comms) + std::mem::size_of::<ncclComm_t>() <= 64);
        // The group calls and the collectives but `ncclRecv`: the table's first line.
        assert_eq!(std::mem::align_of::<NcclApi>(), 64);
        for offset in [
            std::mem::offset_of!(NcclApi, ncclGroupStart),
            std::mem::offset_of!(NcclApi, ncclGroupEnd),
            std::mem::offset_of!(NcclApi, ncclAllReduce),
            std::mem::offset_of!(NcclApi, ncclSend),
        ] {
            assert!(offset + 8 <= 64, "{offset}");
        }
    }
}
