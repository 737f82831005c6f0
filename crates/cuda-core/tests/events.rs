//! Timing with events, on the GPU where there is one, else on the CPU
//! emulator (device code): events from `CudaStream::record_event` time,
//! `elapsed_ms` waits for both events, and events made without timing are
//! refused with an error that says which events time.

use cuda_core::{CudaContext, ErrorKind};
use cuda_driver_sys::DriverApi;

// One test in this binary: it chooses the backend for the process.
#[test]
fn recorded_events_time_and_elapsed_waits_for_the_end_event() {
    if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
        // SAFETY (edition 2021: safe): the only test of its binary, before
        // cuda-core reads the variable.
        std::env::set_var("OXIDE_EMULATE", "ptx");
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();

    let start = stream.record_event().unwrap();
    let buf = cuda_core::DeviceBuffer::<u32>::zeroed(&stream, 1 << 20).unwrap();
    let end = stream.record_event().unwrap();
    // No synchronize: elapsed_ms waits for the end event itself.
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms >= 0.0, "{ms}");
    assert!(end.is_complete().unwrap());
    drop(buf);

    // Ordering-only events are refused, and the error names the kinds that time.
    let untimed = stream.record_event_without_timing().unwrap();
    let e = start.elapsed_ms(&untimed).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("CudaStream::record_event"), "{e}");

}
