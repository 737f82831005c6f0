//! A kernel fault on the GPU reaches the awaiting task as a typed error.
//! (A program of its own: the fault ruins the context for the process.)

mod common;

use std::ffi::c_void;
use std::time::{Duration, Instant};

use common::{gpu, module};
use cuda_async::{block_on, launch, AsyncError, DeviceOperation, StreamPool};
use cuda_core::{launch_kernel, LaunchConfig};

#[test]
fn a_faulting_kernel_fails_the_awaiting_task() {
    let Some(ctx) = gpu("a_faulting_kernel_fails_the_awaiting_task") else { return };
    let m = module(&ctx);
    let pool = StreamPool::new(&ctx, 2).unwrap();
    let op = launch(move |stream| {
        let f = m.function("fault")?;
        let mut params: [*mut c_void; 0] = [];
        // SAFETY: `fault` takes no parameters.
        unsafe { launch_kernel(&f, LaunchConfig::for_num_elems(32), stream, &mut params)? };
        Ok(())
    });
    let t = Instant::now();
    // The driver never runs the host function after the fault; the
    // keeper's fault watch fails the task instead of letting it hang.
    let e = block_on(op.schedule(&pool)).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    let AsyncError::Driver(d) = &e else { panic!("not a driver error: {e:?}") };
    assert!(d.is_sticky(), "{d}");
    eprintln!("the task saw: {e}");
}
