//! Why a launch failed: [`Fault`], with messages that name the kernel, the
//! block, the thread and the instruction.

use std::fmt;
use std::time::Duration;

/// A thread's coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadRef {
    /// `%ctaid`.
    pub block: (u32, u32, u32),
    /// `%tid`.
    pub thread: (u32, u32, u32),
}

impl fmt::Display for ThreadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (b, t) = (self.block, self.thread);
        write!(
            f,
            "thread ({}, {}, {}) of block ({}, {}, {})",
            t.0, t.1, t.2, b.0, b.1, b.2
        )
    }
}

/// An instruction: its function, its text and its line in the PTX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub function: String,
    pub instruction: String,
    pub line: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` (PTX line {}, in `{}`)",
            self.instruction, self.line, self.function
        )
    }
}

/// Where a thread is stuck, for [`Fault::Deadlock`] and [`Fault::Timeout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StuckThread {
    pub thread: ThreadRef,
    /// What it waits for ("barrier 0", "shfl.sync with mask 0xffffffff"), or
    /// "running" for a timeout.
    pub waiting_for: String,
    pub at: Location,
}

/// How a launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A thread executed `trap` (a Rust panic ends in one).
    Trap {
        kernel: String,
        thread: ThreadRef,
        at: Location,
    },
    /// A load, store or atomic outside every region valid for the launch
    /// (global and generic accesses), or outside the block's shared memory or
    /// the thread's local memory.
    MemoryViolation {
        kernel: String,
        thread: ThreadRef,
        address: u64,
        size: u32,
        space: &'static str,
        write: bool,
        at: Location,
    },
    /// An access not aligned to its size, which the GPU refuses.
    MisalignedAddress {
        kernel: String,
        thread: ThreadRef,
        address: u64,
        size: u32,
        space: &'static str,
        at: Location,
    },
    /// Every thread still running waits for something no other thread can
    /// provide (a barrier some threads can never reach, a warp collective
    /// whose partners exited or wait elsewhere).
    Deadlock {
        kernel: String,
        block: (u32, u32, u32),
        threads: Vec<StuckThread>,
        waiting: usize,
    },
    /// The launch ran past its time budget (a spin loop that never ends, or a
    /// kernel too slow for the VM).
    Timeout {
        kernel: String,
        limit: Duration,
        threads: Vec<StuckThread>,
        running: usize,
    },
    /// The kernel can reach an instruction the VM does not implement.
    Unsupported {
        kernel: String,
        at: Location,
        reason: String,
    },
    /// A call through a value that is not a function of the module, a call
    /// stack deeper than the VM allows, or another execution error.
    ExecutionError {
        kernel: String,
        thread: ThreadRef,
        at: Location,
        reason: String,
    },
    /// The launch itself is invalid (unknown kernel, bad dimensions,
    /// parameters that do not match).
    InvalidLaunch { kernel: String, reason: String },
}

fn list(f: &mut fmt::Formatter<'_>, threads: &[StuckThread], total: usize) -> fmt::Result {
    for t in threads {
        write!(
            f,
            "\n  {} waits for {} at {}",
            t.thread, t.waiting_for, t.at
        )?;
    }
    if total > threads.len() {
        write!(f, "\n  … and {} more", total - threads.len())?;
    }
    Ok(())
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Trap { kernel, thread, at } => {
                write!(f, "kernel `{kernel}`: {thread} executed `trap` at {at} (a device panic ends this way; its message is printed above)")
            }
            Fault::MemoryViolation { kernel, thread, address, size, space, write, at } => write!(
                f,
                "kernel `{kernel}`: {thread} {} {size} bytes at {space} address {address:#x}, outside every valid allocation, at {at}",
                if *write { "wrote" } else { "read" }
            ),
            Fault::MisalignedAddress { kernel, thread, address, size, space, at } => write!(
                f,
                "kernel `{kernel}`: {thread} accessed {size} bytes at {space} address {address:#x}, which is not {size}-byte aligned (misaligned address), at {at}"
            ),
            Fault::Deadlock { kernel, block, threads, waiting } => {
                write!(
                    f,
                    "kernel `{kernel}`: deadlock in block ({}, {}, {}): {waiting} threads wait for partners that can never arrive",
                    block.0, block.1, block.2
                )?;
                list(f, threads, *waiting)
            }
            Fault::Timeout { kernel, limit, threads, running } => {
                write!(f, "kernel `{kernel}`: still running after {limit:?} (the launch's time budget, LaunchOptions::timeout); {running} threads had not finished")?;
                list(f, threads, *running)
            }
            Fault::Unsupported { kernel, at, reason } => write!(
                f,
                "kernel `{kernel}` can reach {at}, which the PTX VM does not implement ({reason}); run it on a GPU, or with the host-build emulator"
            ),
            Fault::ExecutionError { kernel, thread, at, reason } => write!(f, "kernel `{kernel}`: {thread} at {at}: {reason}"),
            Fault::InvalidLaunch { kernel, reason } => write!(f, "cannot launch kernel `{kernel}`: {reason}"),
        }
    }
}

impl std::error::Error for Fault {}
