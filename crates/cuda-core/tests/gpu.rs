//! Tests that need a GPU. Each one first tries `CudaContext::new(0)`; where
//! there is no driver or no GPU it prints "skipped: no CUDA driver/GPU" and
//! passes, so the suite runs everywhere and does real work on a GPU machine.

use std::ffi::c_void;
use std::sync::Arc;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use cuda_core::{
    launch_kernel, CudaContext, DeviceBuffer, DriverError, ErrorKind, LaunchConfig, PinnedHostBuffer,
};

/// The context of GPU 0, or `None` (after saying so) without driver or GPU.
fn gpu(test: &str) -> Option<Arc<CudaContext>> {
    match CudaContext::new(0) {
        Ok(ctx) => Some(ctx),
        Err(e) if matches!(e.kind(), ErrorKind::DriverNotFound | ErrorKind::NoDevice) => {
            eprintln!("skipped: no CUDA driver/GPU ({test}): {e}");
            None
        }
        Err(e) => panic!("CudaContext::new(0) failed unexpectedly: {e}"),
    }
}

/// `out[i] = in[i] * factor` for `i < n`; parameters (u64, u64, u32, f32).
const SCALE_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry scale(
    .param .u64 scale_in,
    .param .u64 scale_out,
    .param .u32 scale_n,
    .param .f32 scale_factor
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [scale_in];
    ld.param.u64 %rd2, [scale_out];
    ld.param.u32 %r1, [scale_n];
    ld.param.f32 %f1, [scale_factor];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f2, [%rd6];
    mul.f32 %f2, %f2, %f1;
    add.s64 %rd7, %rd4, %rd5;
    st.global.f32 [%rd7], %f2;
DONE:
    ret;
}
"#;

#[test]
fn device_queries() {
    let Some(ctx) = gpu("device_queries") else {
        return;
    };
    let count = CudaContext::device_count().unwrap();
    assert!(count >= 1);
    let name = ctx.name().unwrap();
    let (major, minor) = ctx.compute_capability().unwrap();
    let sms = ctx.multiprocessor_count().unwrap();
    let mem = ctx.total_memory().unwrap();
    let (dmaj, dmin) = cuda_core::driver_version().unwrap();
    eprintln!("{count} device(s); 0: {name}, sm_{major}{minor}, {sms} SMs, {} MiB; driver CUDA {dmaj}.{dmin}", mem >> 20);
    assert!(!name.is_empty());
    assert!(major >= 5, "compute capability {major}.{minor}");
    assert!(sms > 0 && mem > 0);
    assert!(dmaj >= 11);
    assert_eq!(ctx.ordinal(), 0);
    ctx.bind_to_thread().unwrap();
    ctx.synchronize().unwrap();

    // The same answers from `Device`, without a context; every GPU enumerated.
    let devices = cuda_core::Device::all().unwrap();
    assert_eq!(devices.len(), count);
    assert_eq!(devices[0], ctx.device());
    assert_eq!(devices[0].name().unwrap(), name);
    assert_eq!(devices[0].compute_capability().unwrap(), (major, minor));
    assert_eq!(devices[0].limits().unwrap(), ctx.limits().unwrap());
    for d in &devices {
        let other = d.context().unwrap();
        assert_eq!(other.ordinal(), d.ordinal());
        eprintln!("device {}: {} ({} SMs)", d.ordinal(), d.name().unwrap(), d.multiprocessor_count().unwrap());
    }
    ctx.bind_to_thread().unwrap();

    let e = CudaContext::new(count).map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice, "{e}");
    assert!(
        e.to_string()
            .contains(&format!("there is no CUDA device {count}")),
        "{e}"
    );
}

#[test]
fn round_trips() {
    let Some(ctx) = gpu("round_trips") else {
        return;
    };
    let stream = ctx.default_stream();
    let data: Vec<f32> = (0..1024).map(|i| i as f32 * 0.5).collect();
    let buf = DeviceBuffer::from_host(&stream, &data).unwrap();
    assert_eq!(
        (buf.len(), buf.size_in_bytes(), buf.is_empty()),
        (1024, 4096, false)
    );
    assert_ne!(buf.device_ptr(), 0);
    assert_eq!(buf.to_host_vec(&stream).unwrap(), data);

    // Odd sizes and structs, on a created stream.
    let s2 = ctx.new_stream().unwrap();
    assert!(!s2.is_default() && stream.is_default());
    let bytes: Vec<u8> = (0..1001u32).map(|i| (i * 7) as u8).collect();
    assert_eq!(
        DeviceBuffer::from_host(&s2, &bytes)
            .unwrap()
            .to_host_vec(&s2)
            .unwrap(),
        bytes
    );
    #[derive(Clone, Copy, Debug, PartialEq)]
    #[repr(C)]
    struct P {
        a: u16,
        b: f64,
    }
    // SAFETY: both fields accept any bytes (the padding may hold anything).
    unsafe impl cuda_core::DeviceRepr for P {}
    let ps: Vec<P> = (0..77)
        .map(|i| P {
            a: i,
            b: i as f64 / 3.0,
        })
        .collect();
    assert_eq!(
        DeviceBuffer::from_host(&s2, &ps)
            .unwrap()
            .to_host_vec(&s2)
            .unwrap(),
        ps
    );
    s2.synchronize().unwrap();
}

#[test]
fn zeroed_and_empty() {
    let Some(ctx) = gpu("zeroed_and_empty") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let z = DeviceBuffer::<u32>::zeroed(&stream, 100_003).unwrap();
    assert!(z.to_host_vec(&stream).unwrap().iter().all(|&x| x == 0));

    let empty = DeviceBuffer::<f32>::zeroed(&stream, 0).unwrap();
    assert_eq!(
        (empty.device_ptr(), empty.len(), empty.is_empty()),
        (0, 0, true)
    );
    assert!(empty.to_host_vec(&stream).unwrap().is_empty());
    let mut empty2 = DeviceBuffer::<f32>::from_host(&stream, &[]).unwrap();
    assert_eq!(empty2.device_ptr(), 0);
    empty2.copy_from_host(&stream, &[]).unwrap();
    let units = DeviceBuffer::<()>::from_host(&stream, &[(); 5]).unwrap();
    assert_eq!((units.device_ptr(), units.len()), (0, 5));
    assert_eq!(units.to_host_vec(&stream).unwrap().len(), 5);
}

#[test]
fn copy_from_host_and_mismatch() {
    let Some(ctx) = gpu("copy_from_host_and_mismatch") else {
        return;
    };
    let stream = ctx.default_stream();
    let mut buf = DeviceBuffer::<i64>::zeroed(&stream, 10).unwrap();
    let data: Vec<i64> = (0..10).map(|i| -i * 1_000_000_007).collect();
    buf.copy_from_host(&stream, &data).unwrap();
    let mut out = vec![0i64; 10];
    buf.copy_to_host(&stream, &mut out).unwrap();
    assert_eq!(out, data);

    let e = buf.copy_from_host(&stream, &data[..5]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LengthMismatch);
    assert!(
        e.to_string()
            .contains("holds 10 elements of i64 but the host slice has 5"),
        "{e}"
    );
    let e = buf.copy_to_host(&stream, &mut out[..3]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LengthMismatch);
    assert_eq!(
        buf.to_host_vec(&stream).unwrap(),
        data,
        "a rejected copy changed nothing"
    );
}

#[test]
fn buffers_and_contexts_move_between_threads() {
    let Some(ctx) = gpu("buffers_and_contexts_move_between_threads") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let buf = DeviceBuffer::from_host(&stream, &[1u32, 2, 3]).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let ctx = ctx.clone();
            std::thread::spawn(move || {
                let s = ctx.new_stream().unwrap();
                DeviceBuffer::from_host(&s, &[7u8; 4096])
                    .unwrap()
                    .to_host_vec(&s)
                    .unwrap()
                    .len()
            })
        })
        .collect();
    let moved = std::thread::spawn(move || buf.to_host_vec(&stream).unwrap())
        .join()
        .unwrap();
    assert_eq!(moved, [1, 2, 3]);
    for h in handles {
        assert_eq!(h.join().unwrap(), 4096);
    }
}

fn launch_scale(
    f: &cuda_core::CudaFunction,
    stream: &cuda_core::CudaStream,
    n: u32,
    cfg: LaunchConfig,
) -> Result<Vec<f32>, DriverError> {
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let d_in = DeviceBuffer::from_host(stream, &input)?;
    let d_out = DeviceBuffer::<f32>::zeroed(stream, n as usize)?;
    let (mut a, mut b, mut len, mut factor) = (d_in.device_ptr(), d_out.device_ptr(), n, 2.5f32);
    let mut params = [
        &mut a as *mut u64 as *mut c_void,
        &mut b as *mut u64 as *mut c_void,
        &mut len as *mut u32 as *mut c_void,
        &mut factor as *mut f32 as *mut c_void,
    ];
    // SAFETY: `scale` takes (u64, u64, u32, f32), matching `params`.
    unsafe { launch_kernel(f, cfg, stream, &mut params)? };
    d_out.to_host_vec(stream)
}

#[test]
fn ptx_module_and_launch() {
    let Some(ctx) = gpu("ptx_module_and_launch") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    for module in [
        ctx.load_module_ptx(SCALE_PTX).unwrap(),
        ctx.load_module_image(SCALE_PTX.as_bytes()).unwrap(),
    ] {
        let f = module.function("scale").unwrap();
        assert_eq!(f.name(), "scale");
        assert!(f.max_threads_per_block().unwrap() >= 256);
        assert!(f.num_regs().unwrap() > 0);
        let n = 1000;
        let out = launch_scale(&f, &stream, n, LaunchConfig::for_num_elems(n)).unwrap();
        assert!(
            out.iter().enumerate().all(|(i, &x)| x == i as f32 * 2.5),
            "wrong results"
        );

        let bad = LaunchConfig {
            grid_dim: (4, 1, 1),
            block_dim: (2048, 1, 1),
            shared_mem_bytes: 0,
        };
        let e = launch_scale(&f, &stream, n, bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidLaunchConfig, "{e}");
    }
    // The function keeps its module alive after the module Arc is dropped.
    let f = ctx
        .load_module_ptx(SCALE_PTX)
        .unwrap()
        .function("scale")
        .unwrap();
    assert_eq!(
        launch_scale(&f, &ctx.default_stream(), 3, LaunchConfig::for_num_elems(3)).unwrap(),
        [0.0, 2.5, 5.0]
    );
}

#[test]
fn module_errors_are_reported() {
    let Some(ctx) = gpu("module_errors_are_reported") else {
        return;
    };
    let module = ctx.load_module_ptx(SCALE_PTX).unwrap();
    let e = module.function("no_such_kernel").unwrap_err();
    assert_eq!(e.name(), "CUDA_ERROR_NOT_FOUND", "{e}");
    assert!(
        e.to_string().contains("no kernel named `no_such_kernel`"),
        "{e}"
    );

    let broken = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k() { bogus.instruction; ret; }\n";
    let e = ctx.load_module_ptx(broken).map(drop).unwrap_err();
    eprintln!("expected JIT failure:\n{e}");
    assert_eq!(e.kind(), ErrorKind::Driver);
    assert_eq!(e.operation(), "cuModuleLoadDataEx");
    assert!(
        e.detail().is_some_and(|d| d.contains("JIT error log")),
        "{e}"
    );
}

/// Spins for about `cycles` clock cycles on one thread: makes a stream busy
/// long enough to observe ordering. Parameter: u64 cycles.
const SPIN_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry spin(.param .u64 spin_cycles)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [spin_cycles];
    mov.u64 %rd2, %clock64;
LOOP:
    mov.u64 %rd3, %clock64;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.s64 %p1, %rd4, %rd1;
    @%p1 bra LOOP;
    ret;
}

.visible .entry uses_shared(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    .shared .align 4 .b8 tile[1024];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    st.shared.u32 [tile], %r1;
    bar.sync 0;
    ld.shared.u32 %r1, [tile];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
    ret;
}
"#;

fn spin(stream: &cuda_core::CudaStream, f: &cuda_core::CudaFunction, cycles: u64) {
    let mut c = cycles;
    let mut params = [&mut c as *mut u64 as *mut c_void];
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: `spin` takes one u64.
    unsafe { launch_kernel(f, cfg, stream, &mut params).unwrap() };
}

#[test]
fn device_limits_and_memory_info() {
    let Some(ctx) = gpu("device_limits_and_memory_info") else {
        return;
    };
    let l = ctx.limits().unwrap();
    eprintln!("{l:?}");
    assert_eq!(l.warp_size, 32);
    assert_eq!(ctx.warp_size().unwrap(), 32);
    assert!(l.max_threads_per_block >= 1024);
    assert_eq!(ctx.max_threads_per_block().unwrap(), l.max_threads_per_block);
    assert!(l.max_block_dim.0 >= 1024 && l.max_block_dim.2 >= 64);
    assert!(l.max_grid_dim.0 >= 65535 && l.max_grid_dim.1 >= 65535);
    assert!(l.max_shared_memory_per_block >= 48 * 1024);
    assert!(l.max_shared_memory_per_block_optin >= l.max_shared_memory_per_block);
    assert_eq!(l.multiprocessor_count, ctx.multiprocessor_count().unwrap());
    let (free, total) = ctx.memory_info().unwrap();
    assert!(free > 0 && free <= total);
    assert_eq!(total, ctx.total_memory().unwrap());
    assert!(LaunchConfig::for_num_elems(1 << 20).validate_for(&l).is_ok());
}

#[test]
fn events_time_and_order_non_blocking_streams() {
    let Some(ctx) = gpu("events_time_and_order_non_blocking_streams") else {
        return;
    };
    let module = ctx.load_module_ptx(SPIN_PTX).unwrap();
    let spin_fn = module.function("spin").unwrap();
    let a = ctx.new_stream_non_blocking().unwrap();
    let b = ctx.new_stream_non_blocking().unwrap();

    // Timing: a spin of ~50M cycles takes measurable time.
    let (start, end) = (ctx.new_event().unwrap(), ctx.new_event().unwrap());
    assert!(start.is_complete().unwrap(), "a fresh event counts as complete");
    start.record(&a).unwrap();
    spin(&a, &spin_fn, 50_000_000);
    end.record(&a).unwrap();
    end.synchronize().unwrap();
    assert!(end.is_complete().unwrap());
    let ms = start.elapsed_ms(&end).unwrap();
    eprintln!("spin took {ms:.3} ms");
    assert!(ms > 0.0);
    // Events from `record_event` time, and `elapsed_ms` waits for the end
    // event (asked at once, the driver would answer CUDA_ERROR_NOT_READY).
    let start = a.record_event().unwrap();
    spin(&a, &spin_fn, 50_000_000);
    let end = a.record_event().unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms > 0.0, "{ms}");
    assert!(end.is_complete().unwrap());
    let untimed = ctx.new_event_without_timing().unwrap();
    untimed.record(&a).unwrap();
    a.synchronize().unwrap();
    assert_eq!(start.elapsed_ms(&untimed).unwrap_err().kind(), ErrorKind::InvalidArgument);

    // Ordering: b waits for a's event, so b's copy sees a's fill.
    let mut buf = DeviceBuffer::<u32>::zeroed(&a, 1 << 20).unwrap();
    a.synchronize().unwrap();
    spin(&a, &spin_fn, 20_000_000);
    buf.fill(&a, 7).unwrap();
    let done = a.record_event().unwrap();
    b.wait(&done).unwrap();
    let got = buf.to_host_vec(&b).unwrap();
    assert!(got.iter().all(|&x| x == 7), "b read before a's fill finished");
    assert!(done.is_complete().unwrap(), "b's read waited for `done`");
}

#[test]
fn host_callback_runs_in_stream_order() {
    let Some(ctx) = gpu("host_callback_runs_in_stream_order") else {
        return;
    };
    let module = ctx.load_module_ptx(SPIN_PTX).unwrap();
    let spin_fn = module.function("spin").unwrap();
    let stream = ctx.new_stream().unwrap();
    let counter = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    spin(&stream, &spin_fn, 10_000_000);
    for i in 0..3 {
        let (counter, tx) = (counter.clone(), tx.clone());
        stream
            .launch_host_fn(move || {
                let seen = counter.fetch_add(1, Ordering::SeqCst);
                tx.send((i, seen)).unwrap();
            })
            .unwrap();
    }
    // A panicking callback is caught and does not break the stream.
    stream.launch_host_fn(|| panic!("expected test panic in a host callback")).unwrap();
    stream.synchronize().unwrap();
    let got: Vec<_> = (0..3).map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
    assert_eq!(got, [(0, 0), (1, 1), (2, 2)]);
    assert_eq!(counter.load(Ordering::SeqCst), 3);
    let buf = DeviceBuffer::from_host(&stream, &[1u8, 2, 3]).unwrap();
    assert_eq!(buf.to_host_vec(&stream).unwrap(), [1, 2, 3]);
}

#[test]
fn pinned_async_round_trip() {
    let Some(ctx) = gpu("pinned_async_round_trip") else {
        return;
    };
    let stream = ctx.new_stream_non_blocking().unwrap();
    let n = 1 << 20;
    let data: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
    let src = PinnedHostBuffer::from_slice(&ctx, &data).unwrap();
    let mut dst = PinnedHostBuffer::<u64>::zeroed(&ctx, n).unwrap();
    assert_eq!(src.len(), n);
    let mut dev = DeviceBuffer::<u64>::zeroed(&stream, n).unwrap();
    dev.copy_from_host_async(&stream, &src).unwrap();
    dev.copy_to_host_async(&stream, &mut dst).unwrap();
    // Deref waits for the copy: no explicit synchronisation needed.
    assert_eq!(&dst[..], &data[..]);
    dst.synchronize().unwrap();
    // Overwriting the source after queuing a copy waits for that copy first.
    let mut src = src;
    dev.copy_from_host_async(&stream, &src).unwrap();
    src[0] = 999;
    assert_eq!(dev.to_host_vec(&stream).unwrap()[0], 0);
    // Dropping a pinned buffer with a copy in flight is fine too.
    let tmp = PinnedHostBuffer::from_slice(&ctx, &data).unwrap();
    dev.copy_from_host_async(&stream, &tmp).unwrap();
    drop(tmp);
    assert_eq!(dev.to_host_vec(&stream).unwrap(), data);
    // Length mismatch.
    let short = PinnedHostBuffer::<u64>::zeroed(&ctx, 3).unwrap();
    assert_eq!(dev.copy_from_host_async(&stream, &short).unwrap_err().kind(), ErrorKind::LengthMismatch);
    // Many copies do not pile up events.
    let small = PinnedHostBuffer::from_slice(&ctx, &[1u32; 16]).unwrap();
    let mut d16 = DeviceBuffer::<u32>::zeroed(&stream, 16).unwrap();
    for _ in 0..1000 {
        d16.copy_from_host_async(&stream, &small).unwrap();
    }
    assert_eq!(d16.to_host_vec(&stream).unwrap(), [1; 16]);
}

#[test]
fn slices_memset_fill_and_device_copies() {
    let Some(ctx) = gpu("slices_memset_fill_and_device_copies") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut buf = DeviceBuffer::from_host(&stream, &(0..100u32).collect::<Vec<_>>()).unwrap();
    assert_eq!(buf.slice(10..13).to_host_vec(&stream).unwrap(), [10, 11, 12]);
    assert_eq!(buf.slice(..).len(), 100);
    assert_eq!(buf.slice(98..).to_host_vec(&stream).unwrap(), [98, 99]);
    assert_eq!(buf.slice(5..5).to_host_vec(&stream).unwrap(), Vec::<u32>::new());
    assert_eq!(buf.slice(10..).device_ptr(), buf.device_ptr() + 40);

    buf.slice_mut(0..4).copy_from_host(&stream, &[7, 7, 7, 7]).unwrap();
    buf.slice_mut(4..8).fill(&stream, 0xdead_beef).unwrap();
    buf.slice_mut(8..10).memset(&stream, 0xff).unwrap();
    let mut sub = buf.slice_mut(50..60);
    sub.slice_mut(2..4).fill(&stream, 1).unwrap();
    let got = buf.to_host_vec(&stream).unwrap();
    assert_eq!(&got[..10], &[7, 7, 7, 7, 0xdead_beef, 0xdead_beef, 0xdead_beef, 0xdead_beef, u32::MAX, u32::MAX]);
    assert_eq!(&got[50..56], &[50, 51, 1, 1, 54, 55]);
    assert_eq!(got[10], 10);

    let mut halves = DeviceBuffer::<i16>::zeroed(&stream, 9).unwrap();
    halves.fill(&stream, -2).unwrap();
    assert_eq!(halves.to_host_vec(&stream).unwrap(), [-2; 9]);
    let mut floats = DeviceBuffer::<f32>::zeroed(&stream, 5).unwrap();
    floats.fill(&stream, 1.5).unwrap();
    assert_eq!(floats.to_host_vec(&stream).unwrap(), [1.5; 5]);
    let mut bytes = DeviceBuffer::<u8>::zeroed(&stream, 3).unwrap();
    bytes.fill(&stream, 9).unwrap();
    assert_eq!(bytes.to_host_vec(&stream).unwrap(), [9, 9, 9]);

    // Device to device, whole and sub-range.
    let mut copy = DeviceBuffer::<u32>::zeroed(&stream, 100).unwrap();
    copy.copy_from_device(&stream, &buf).unwrap();
    assert_eq!(copy.to_host_vec(&stream).unwrap(), got);
    let mut part = DeviceBuffer::<u32>::zeroed(&stream, 3).unwrap();
    part.as_slice_mut().copy_from_device(&stream, buf.slice(50..53)).unwrap();
    assert_eq!(part.to_host_vec(&stream).unwrap(), [50, 51, 1]);
    let e = part.copy_from_device(&stream, &copy).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LengthMismatch, "{e}");

    // Out-of-bounds ranges panic with a clear message.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = buf.slice(90..101);
    }));
    let msg = r.unwrap_err().downcast::<String>().unwrap();
    assert_eq!(*msg, "device slice range 90..101 is out of bounds for a buffer of 100 elements");

    // Uninitialised allocation is unsafe; after a full write it reads back.
    // SAFETY: every element is written before it is read.
    let mut raw = unsafe { DeviceBuffer::<u64>::alloc(&stream, 4) }.unwrap();
    raw.copy_from_host(&stream, &[1, 2, 3, 4]).unwrap();
    assert_eq!(raw.to_host_vec(&stream).unwrap(), [1, 2, 3, 4]);
}

#[test]
fn function_attributes_and_occupancy() {
    let Some(ctx) = gpu("function_attributes_and_occupancy") else {
        return;
    };
    let module = ctx.load_module_ptx(SPIN_PTX).unwrap();
    let f = module.function("uses_shared").unwrap();
    let a = f.attributes().unwrap();
    eprintln!("{a:?}");
    assert_eq!(a.static_shared_bytes, 1024);
    assert!(a.num_regs > 0 && a.num_regs == f.num_regs().unwrap());
    assert_eq!(a.max_threads_per_block, f.max_threads_per_block().unwrap());
    assert!(a.max_threads_per_block >= 256);
    assert_eq!(a.ptx_version, 70);
    let (major, minor) = ctx.compute_capability().unwrap();
    assert_eq!(a.binary_version, major * 10 + minor);
    assert_eq!(a.local_bytes_per_thread, 0);

    let limits = ctx.limits().unwrap();
    let want = limits.max_shared_memory_per_block_optin - a.static_shared_bytes;
    f.set_max_dynamic_shared_memory(want).unwrap();
    assert_eq!(f.attributes().unwrap().max_dynamic_shared_bytes, want);

    let per_sm = f.max_active_blocks_per_multiprocessor(256, 0).unwrap();
    assert!(per_sm >= 1, "{per_sm}");
    let big = f.max_active_blocks_per_multiprocessor(256, want as usize).unwrap();
    assert!(big <= 1, "a block using all shared memory fits at most once: {big}");
    let (grid, block) = f.max_potential_block_size(0, 0).unwrap();
    eprintln!("occupancy: {per_sm} blocks of 256 per SM; potential block {block}, min grid {grid}");
    assert!(block >= 32 && block <= a.max_threads_per_block && block % 32 == 0);
    assert!(grid >= limits.multiprocessor_count);
    let (_, limited) = f.max_potential_block_size(0, 64).unwrap();
    assert!(limited <= 64);
}

#[test]
fn several_devices() {
    let Some(ctx0) = gpu("several_devices") else {
        return;
    };
    let count = CudaContext::device_count().unwrap();
    if count < 2 {
        return eprintln!("skipped: only {count} GPU (several_devices)");
    }
    let ctx1 = CudaContext::new(1).unwrap();
    assert_eq!(ctx1.ordinal(), 1);
    let (s0, s1) = (ctx0.new_stream().unwrap(), ctx1.new_stream().unwrap());
    let b0 = DeviceBuffer::from_host(&s0, &[1.0f32, 2.0, 3.0]).unwrap();
    let mut b1 = DeviceBuffer::<f32>::zeroed(&s1, 3).unwrap();
    // A stream of the wrong device is rejected.
    let e = b0.to_host_vec(&s1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // Cross-device ordering and a peer copy.
    s0.synchronize().unwrap();
    let ready = s0.record_event().unwrap();
    s1.wait(&ready).unwrap();
    b1.copy_from_device(&s1, &b0).unwrap();
    assert_eq!(b1.to_host_vec(&s1).unwrap(), [1.0, 2.0, 3.0]);
    // Each device on its own thread.
    let handles: Vec<_> = (0..count)
        .map(|i| {
            std::thread::spawn(move || {
                let ctx = CudaContext::new(i).unwrap();
                let s = ctx.new_stream().unwrap();
                DeviceBuffer::from_host(&s, &[i as u32; 64]).unwrap().to_host_vec(&s).unwrap()[63]
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), i as u32);
    }
}

/// Several GPUs in one process: each gets its own context, module and
/// buffers, all used at once from one thread, and every result is checked.
/// (On a one-GPU machine this covers the single device; the count is printed.)
#[test]
fn every_device_runs_its_own_kernel() {
    let Some(_first) = gpu("every_device_runs_its_own_kernel") else {
        return;
    };
    let devices = cuda_core::Device::all().unwrap();
    eprintln!("every_device_runs_its_own_kernel: {} device(s)", devices.len());
    let setups: Vec<_> = devices
        .iter()
        .map(|d| {
            let ctx = d.context().unwrap();
            let stream = ctx.new_stream().unwrap();
            let f = ctx.load_module_ptx(SCALE_PTX).unwrap().function("scale").unwrap();
            (ctx, stream, f)
        })
        .collect();
    for (i, (ctx, stream, f)) in setups.iter().enumerate() {
        let n = 4096 + i as u32;
        let out = launch_scale(f, stream, n, LaunchConfig::for_num_elems(n)).unwrap();
        assert_eq!(out.len(), n as usize);
        assert!(out.iter().enumerate().all(|(j, &x)| x == j as f32 * 2.5), "device {i}: wrong results");
        // A buffer of one device is refused on another device's stream.
        if let Some((_, other_stream, _)) = setups.get(i + 1) {
            let buf = DeviceBuffer::<f32>::zeroed(stream, 16).unwrap();
            let err = buf.to_host_vec(other_stream).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        }
        ctx.synchronize().unwrap();
    }
}
