//! Tests that need a GPU. Each one first tries `CudaContext::new(0)`; where
//! there is no driver or no GPU it prints "skipped: no CUDA driver/GPU" and
//! passes, so the suite runs everywhere and does real work on a GPU machine.

use std::ffi::c_void;
use std::sync::Arc;

use cuda_core::{launch_kernel, CudaContext, DeviceBuffer, DriverError, ErrorKind, LaunchConfig};

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
