//! GPU test: a spin-wait inside a block. All threads but the last of each
//! block wait for a flag in shared memory that the last one sets (legal
//! since sm_70: the threads of a block make progress independently), then
//! read the value published with it.
//!
//! On a GPU every way of waiting completes, and so it does on the CPU
//! emulator's device-code mode (the default): the PTX VM gives each thread
//! of a block a quantum of instructions, so a waiting thread lets the
//! setter run, the bare loop on a `core::sync::atomic` included.
//!
//! The host-code emulator (`OXIDE_EMULATE=host`) runs a block's threads one
//! at a time and switches only where a thread waits, so it must see the
//! waiting: through `cuda_device`'s atomics (`load_scoped`) or a `nanosleep`
//! in the loop, the waiting threads let the setter run. A bare loop on a
//! `core::sync::atomic` cannot be switched out of: the emulator's watchdog
//! ends it and the launch fails naming the threads; after that context is
//! dropped, a new one works.

use core::sync::atomic::{AtomicU32, Ordering::{Acquire, Relaxed, Release}};

use cuda_core::emulator::Mode;
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::{Scope, ScopedAtomic};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module, HostError};
use std::process::ExitCode;

const BLOCK: u32 = 256;
const BLOCKS: u32 = 8;

/// How the waiting threads spin.
const WAIT_SCOPED: u32 = 0;
const WAIT_NANOSLEEP: u32 = 1;
const WAIT_BARE: u32 = 2;

/// What block `b` publishes with its flag.
fn published(b: u32) -> u32 {
    b * 1000 + 7
}

#[kernel]
pub fn spin_wait(mode: u32, mut out: DisjointSlice<u32>) {
    shared! { static CELLS: [u32; 2]; } // the flag and the value it publishes
    let t = thread::threadIdx_x();
    if t == 0 {
        // SAFETY: one thread initialises both cells before the barrier.
        unsafe {
            CELLS.write(0, 0);
            CELLS.write(1, 0);
        }
    }
    thread::sync_threads();
    // SAFETY: from here on the two cells are only accessed atomically.
    let (flag, value) = unsafe { (AtomicU32::from_ptr(CELLS.as_mut_ptr()), AtomicU32::from_ptr(CELLS.as_mut_ptr().add(1))) };
    if t == thread::blockDim_x() - 1 {
        value.store(published(thread::blockIdx_x()), Relaxed);
        flag.store(1, Release);
    } else {
        match mode {
            WAIT_SCOPED => while flag.load_scoped(Scope::Block, Acquire) == 0 {},
            WAIT_NANOSLEEP => {
                while flag.load(Acquire) == 0 {
                    thread::nanosleep(64);
                }
            }
            _ => while flag.load(Acquire) == 0 {},
        }
    }
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = value.load(Relaxed);
    }
}

/// Runs `mode` on a context of its own (dropped on return, fault or not)
/// and checks what every thread read.
fn spin(mode: u32) -> Result<(), HostError> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let n = (BLOCK * BLOCKS) as usize;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    let module = load_kernel_module(&ctx, "spin_wait")?;
    let config = LaunchConfig { grid_dim: (BLOCKS, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: spin_wait, stream: stream, module: module, config: config,
        args: [mode, slice_mut(out)]
    }?;
    let read = out.to_host_vec(&stream)?;
    let want: Vec<u32> = (0..n as u32).map(|i| published(i / BLOCK)).collect();
    if read != want {
        let wrong = read.iter().zip(&want).filter(|(r, w)| r != w).count();
        panic!("mode {mode}: {wrong} of {n} threads read a value the flag did not publish");
    }
    Ok(())
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let host_code = cuda_core::emulator::mode() == Some(Mode::HostCode);
    if host_code && std::env::var_os("OXIDE_EMULATE_WATCHDOG_S").is_none() {
        // Before the first launch, which reads it: the bare spin below is
        // ended after a second instead of the default's ten.
        std::env::set_var("OXIDE_EMULATE_WATCHDOG_S", "1");
    }
    spin(WAIT_SCOPED)?;
    spin(WAIT_NANOSLEEP)?;
    let place = match cuda_core::emulator::mode() {
        Some(mode) => format!("on the CPU emulator ({mode})"),
        None => "on the GPU".to_string(),
    };
    match (spin(WAIT_BARE), host_code) {
        (Ok(()), false) => return Ok(format!("every spin-wait completed {place}, the bare core-atomic loop too")),
        (Err(e), false) => return Err(e.into()),
        (Ok(()), true) => return Err("the bare spin on a core atomic completed on the host-code emulator".into()),
        (Err(e), true) => {
            let text = e.to_string();
            let sticky = matches!(&e, HostError::Driver(d) if d.is_sticky());
            if !sticky || !text.contains("deadlock in block (0, 0, 0): thread (0, 0, 0) ran for 1 s without waiting") {
                return Err(format!("the bare spin failed, but not with the watchdog's report:\n{text}").into());
            }
        }
    }
    // The faulted context is gone with its handles: a new one works.
    spin(WAIT_SCOPED)?;
    Ok("the spin-waits through cuda_device atomics and nanosleep completed; the bare core-atomic spin was \
        reported as a deadlock, and a new context worked after it"
        .into())
}

fn main() -> ExitCode {
    match run() {
        Ok(what) => {
            println!("✓ SUCCESS: {what}");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
