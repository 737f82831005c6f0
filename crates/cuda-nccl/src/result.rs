//! The result layer: [`NcclResult`] (an `ncclResult_t` by name) and
//! [`NcclError`], every failure of this crate, each with a `Display` that
//! says what to do about it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use cuda_core::DriverError;
use cuda_emulator::collective::CollectiveError;

use crate::sys::{self, ncclResult_t, LoadError};

/// An `ncclResult_t` other than success, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcclResult {
    /// `ncclUnhandledCudaError` (1): a CUDA call inside NCCL failed.
    UnhandledCudaError,
    /// `ncclSystemError` (2): a system call (socket, memory, shm) failed.
    SystemError,
    /// `ncclInternalError` (3): a bug or a corrupted state inside NCCL.
    InternalError,
    /// `ncclInvalidArgument` (4).
    InvalidArgument,
    /// `ncclInvalidUsage` (5): calls in a wrong order or state.
    InvalidUsage,
    /// `ncclRemoteError` (6): a peer failed or went away.
    RemoteError,
    /// `ncclInProgress` (7): a non-blocking operation has not finished.
    InProgress,
    /// A value this crate does not know.
    Other(i32),
}

impl NcclResult {
    /// The result for a raw value; `None` for `ncclSuccess`.
    pub fn from_raw(raw: ncclResult_t) -> Option<NcclResult> {
        Some(match raw {
            sys::ncclSuccess => return None,
            sys::ncclUnhandledCudaError => NcclResult::UnhandledCudaError,
            sys::ncclSystemError => NcclResult::SystemError,
            sys::ncclInternalError => NcclResult::InternalError,
            sys::ncclInvalidArgument => NcclResult::InvalidArgument,
            sys::ncclInvalidUsage => NcclResult::InvalidUsage,
            sys::ncclRemoteError => NcclResult::RemoteError,
            sys::ncclInProgress => NcclResult::InProgress,
            other => NcclResult::Other(other),
        })
    }

    /// The raw value.
    pub fn raw(self) -> ncclResult_t {
        match self {
            NcclResult::UnhandledCudaError => sys::ncclUnhandledCudaError,
            NcclResult::SystemError => sys::ncclSystemError,
            NcclResult::InternalError => sys::ncclInternalError,
            NcclResult::InvalidArgument => sys::ncclInvalidArgument,
            NcclResult::InvalidUsage => sys::ncclInvalidUsage,
            NcclResult::RemoteError => sys::ncclRemoteError,
            NcclResult::InProgress => sys::ncclInProgress,
            NcclResult::Other(v) => v,
        }
    }

    /// The C name.
    pub fn name(self) -> &'static str {
        match self {
            NcclResult::UnhandledCudaError => "ncclUnhandledCudaError",
            NcclResult::SystemError => "ncclSystemError",
            NcclResult::InternalError => "ncclInternalError",
            NcclResult::InvalidArgument => "ncclInvalidArgument",
            NcclResult::InvalidUsage => "ncclInvalidUsage",
            NcclResult::RemoteError => "ncclRemoteError",
            NcclResult::InProgress => "ncclInProgress",
            NcclResult::Other(_) => "an unknown ncclResult_t",
        }
    }

    /// What a user can do about it.
    pub fn advice(self) -> &'static str {
        match self {
            NcclResult::UnhandledCudaError => {
                "a CUDA call inside NCCL failed: check the GPU with `cargo oxide doctor` and rerun with NCCL_DEBUG=WARN"
            }
            NcclResult::SystemError => {
                "a system call failed (sockets, shared memory, /dev/shm size, file limits): rerun with NCCL_DEBUG=WARN \
                 to see which, and check NCCL_SOCKET_IFNAME names a reachable interface"
            }
            NcclResult::InternalError => "NCCL reached an internal error: rerun with NCCL_DEBUG=INFO and report it",
            NcclResult::InvalidArgument => {
                "NCCL refused an argument this crate did not check: rerun with NCCL_DEBUG=WARN for its reason"
            }
            NcclResult::InvalidUsage => {
                "NCCL refused the order of calls (e.g. a collective on an aborted communicator, or group calls that do \
                 not match): rerun with NCCL_DEBUG=WARN"
            }
            NcclResult::RemoteError => {
                "a peer rank failed or its network connection dropped: check that rank's output; the communicator \
                 must be aborted and made again"
            }
            NcclResult::InProgress => "the operation is still running: wait for it (Communicator::wait)",
            NcclResult::Other(_) => "rerun with NCCL_DEBUG=WARN",
        }
    }
}

impl fmt::Display for NcclResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NcclResult::Other(v) => write!(f, "ncclResult_t {v}"),
            _ => f.write_str(self.name()),
        }
    }
}

/// Which argument of a call an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The input buffer.
    Send,
    /// The output buffer.
    Recv,
    /// The stream.
    Stream,
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operand::Send => "the send buffer",
            Operand::Recv => "the receive buffer",
            Operand::Stream => "the stream",
        })
    }
}

/// Every failure of this crate.
#[derive(Clone, Debug)]
pub enum NcclError {
    /// `libnccl.so.2` could not be opened.
    LibraryNotFound {
        /// `path (dlerror)` for each candidate tried.
        tried: Vec<String>,
    },
    /// The NCCL found is older than [`sys::MIN_VERSION`] (or lacks a function).
    LibraryTooOld {
        /// The file.
        path: PathBuf,
        /// Its version code (0: it has no `ncclGetVersion`).
        version: i32,
        /// A function it lacks, if that is why.
        missing: Option<&'static str>,
    },
    /// An NCCL call failed.
    Nccl {
        /// The NCCL function.
        call: &'static str,
        /// Its result.
        result: NcclResult,
        /// `ncclGetLastError`'s text, if any.
        detail: String,
    },
    /// A CUDA driver call failed (binding the context, the stream's state).
    Driver(DriverError),
    /// A buffer's length does not fit the call.
    LengthMismatch {
        /// The collective.
        call: &'static str,
        /// Which buffer.
        operand: Operand,
        /// The elements it must hold.
        expected: usize,
        /// The elements it holds.
        actual: usize,
    },
    /// A buffer or stream of another context (device) than the communicator's.
    WrongContext {
        /// The collective.
        call: &'static str,
        /// Which argument.
        operand: Operand,
        /// The communicator's device.
        expected: usize,
        /// The argument's device.
        actual: usize,
    },
    /// A root or peer rank outside `0..size`.
    RankOutOfRange {
        /// The call.
        call: &'static str,
        /// The rank given.
        rank: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A send or receive whose peer is the calling rank itself (outside a
    /// group, NCCL would wait for itself forever).
    SelfPeer {
        /// The call.
        call: &'static str,
        /// The rank.
        rank: usize,
    },
    /// An fp8 element type on an NCCL older than [`sys::FP8_VERSION`].
    Fp8Unsupported {
        /// The library's version code.
        version: i32,
    },
    /// `ReduceOp::Avg` of fp8 elements, which NCCL does not have.
    AvgOfFp8 {
        /// The collective.
        call: &'static str,
        /// The element type.
        element: &'static str,
    },
    /// A world size or rank that cannot make a communicator.
    BadWorld(String),
    /// Two ranks of one `init_all` on one GPU (NCCL needs one GPU per rank
    /// of a communicator).
    DuplicateDevice {
        /// The device given twice.
        device: usize,
    },
    /// Contexts of the GPU and of the emulator mixed in one communicator.
    MixedBackends,
    /// A wait passed the communicator's timeout; the communicator was aborted.
    Timeout {
        /// What was waited for.
        call: &'static str,
        /// How long.
        waited: Duration,
        /// The ranks that never came, where known (the emulator knows).
        missing: Vec<usize>,
    },
    /// The communicator was aborted (by this rank or, emulated, a peer).
    Aborted {
        /// The rank that aborted it, where known.
        by: Option<usize>,
    },
    /// The ranks of an emulated communicator disagree on a collective.
    Mismatch(String),
    /// An earlier operation of this communicator failed asynchronously; it
    /// accepts no more work.
    CommFailed {
        /// The first failure.
        first: Box<NcclError>,
    },
    /// Exchanging the unique id failed (environment, file, TCP).
    Bootstrap(String),
    /// A unique id of the GPU given to an emulated communicator, or the
    /// other way round (the two kinds of rank cannot meet).
    IdKind {
        /// Whether the id is an emulator id.
        id_emulated: bool,
    },
}

impl From<DriverError> for NcclError {
    fn from(e: DriverError) -> Self {
        NcclError::Driver(e)
    }
}

impl From<LoadError> for NcclError {
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::NotFound { tried } => NcclError::LibraryNotFound { tried },
            LoadError::TooOld { path, version, missing } => NcclError::LibraryTooOld { path, version, missing },
        }
    }
}

impl From<CollectiveError> for NcclError {
    fn from(e: CollectiveError) -> Self {
        match e {
            CollectiveError::Timeout { call, missing, waited } => NcclError::Timeout { call, waited, missing },
            CollectiveError::Aborted { rank } => NcclError::Aborted { by: Some(rank) },
            CollectiveError::PeerLeft { .. } | CollectiveError::Mismatch { .. } => NcclError::Mismatch(e.to_string()),
            CollectiveError::BadJoin(why) => NcclError::BadWorld(why),
        }
    }
}

impl NcclError {
    /// `Ok` for `ncclSuccess`, else the error of `call`.
    #[inline]
    pub(crate) fn check(call: &'static str, raw: ncclResult_t, detail: impl FnOnce() -> String) -> Result<(), NcclError> {
        match NcclResult::from_raw(raw) {
            None => Ok(()),
            Some(result) => Err(NcclError::Nccl { call, result, detail: detail() }),
        }
    }
}

impl fmt::Display for NcclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NcclError::LibraryNotFound { tried } => write!(
                f,
                "NCCL (libnccl.so.2) was not found; install it (Debian/Ubuntu: `apt install libnccl2`, or the \
                 nvidia-nccl-cu12/cu13 wheel), or set OXIDE_NCCL=/path/to/libnccl.so.2. Tried: {}. Without a GPU, \
                 run under the CPU emulator (OXIDE_EMULATE=1), which needs no NCCL",
                tried.join("; ")
            ),
            NcclError::LibraryTooOld { path, version, missing } => {
                write!(f, "{} is NCCL {}", path.display(), sys::version_string(*version))?;
                if let Some(m) = missing {
                    write!(f, " and lacks {m}")?;
                }
                write!(
                    f,
                    "; oxide needs NCCL {} or newer: install a newer libnccl2, or point OXIDE_NCCL at one",
                    sys::version_string(sys::MIN_VERSION)
                )
            }
            NcclError::Nccl { call, result, detail } => {
                write!(f, "{call} failed: {result}")?;
                if !detail.is_empty() {
                    write!(f, " ({detail})")?;
                }
                write!(f, "; {}", result.advice())
            }
            NcclError::Driver(e) => write!(f, "{e}"),
            NcclError::LengthMismatch { call, operand, expected, actual } => write!(
                f,
                "{call}: {operand} holds {actual} elements but the call needs {expected}; nothing was queued"
            ),
            NcclError::WrongContext { call, operand, expected, actual } => write!(
                f,
                "{call}: {operand} belongs to device {actual}, but the communicator's rank is on device {expected}; \
                 use buffers and streams of the communicator's context"
            ),
            NcclError::RankOutOfRange { call, rank, size } => {
                write!(f, "{call}: rank {rank} is not a rank of this communicator (it has ranks 0..{size})")
            }
            NcclError::SelfPeer { call, rank } => write!(
                f,
                "{call}: rank {rank} names itself as the peer; a send to oneself needs its matching receive in the \
                 same group (Group::start)"
            ),
            NcclError::AvgOfFp8 { call, element } => write!(
                f,
                "{call}: NCCL has no average of {element} values; reduce with ReduceOp::Sum and scale the result \
                 by 1/ranks, or reduce in f16/bf16; nothing was queued"
            ),
            NcclError::Fp8Unsupported { version } => write!(
                f,
                "fp8 collectives need NCCL {} or newer, and this one is {}: upgrade libnccl2 or reduce in f16/bf16",
                sys::version_string(sys::FP8_VERSION),
                sys::version_string(*version)
            ),
            NcclError::BadWorld(why) => f.write_str(why),
            NcclError::DuplicateDevice { device } => write!(
                f,
                "device {device} is given twice: NCCL runs one rank of a communicator per GPU (under the CPU \
                 emulator any number of ranks may share its device)"
            ),
            NcclError::MixedBackends => f.write_str(
                "the contexts of one communicator must all be on the GPU or all on the CPU emulator",
            ),
            NcclError::Timeout { call, waited, missing } => {
                write!(f, "{call} did not finish within {waited:?}")?;
                if !missing.is_empty() {
                    write!(f, " (rank(s) {missing:?} never joined)")?;
                }
                if *call == "ncclCommInitRank" {
                    f.write_str(
                        "; under the CPU emulator the ranks of one communicator must be threads of one process \
                         (a multi-process job needs NCCL and GPUs)",
                    )?;
                }
                f.write_str(
                    "; the communicator was aborted. A peer has likely stopped or failed (check its output), or the \
                     ranks call collectives in different orders; raise the limit with Communicator::set_timeout or \
                     OXIDE_NCCL_TIMEOUT (seconds) if the work is just slow",
                )
            }
            NcclError::Aborted { by: Some(r) } => write!(f, "rank {r} aborted the communicator; make a new one"),
            NcclError::Aborted { by: None } => f.write_str("the communicator was aborted; make a new one"),
            NcclError::Mismatch(why) => f.write_str(why),
            NcclError::CommFailed { first } => {
                write!(f, "the communicator failed earlier and accepts no more work (first failure: {first}); abort it and make a new one")
            }
            NcclError::Bootstrap(why) => write!(f, "exchanging the NCCL unique id failed: {why}"),
            NcclError::IdKind { id_emulated: true } => f.write_str(
                "this unique id was made under the CPU emulator but this rank runs on a GPU: every rank must run \
                 with the same OXIDE_EMULATE setting",
            ),
            NcclError::IdKind { id_emulated: false } => f.write_str(
                "this unique id was made by NCCL on a GPU but this rank runs under the CPU emulator: every rank \
                 must run with the same OXIDE_EMULATE setting",
            ),
        }
    }
}

impl std::error::Error for NcclError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NcclError::Driver(e) => Some(e),
            NcclError::CommFailed { first } => Some(first.as_ref()),
            _ => None,
        }
    }
}
