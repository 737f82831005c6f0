//! Managed memory and peer access through cuda-core: on the GPU where there
//! is one, else on the CPU emulator (device code, one device). A kernel
//! writes a managed buffer and the host reads it without a copy; host
//! access waits for the GPU work it conflicts with, and is refused where it
//! could not wait (a stream capturing); a capture refuses managed buffers;
//! prefetch and advice are accepted and the advice reads back; on one
//! device no peer exists and enabling peer access says so.

mod common {
    pub mod affine;
}

use cuda_core::{
    CudaContext, CudaFunction, CudaStream, DeviceBuffer, DriverError, ManagedBuffer, ManagedError,
    MemAdvice, MemLocation, PeerError,
};

use common::affine::{affine_raw, setup};

/// Large enough that a host read which did not wait for the kernel would
/// see old values on a GPU.
const N: usize = 1 << 20;

/// Held by every test that allocates managed memory. Small managed
/// allocations share pages, and a page's advice and residency are the
/// page's: on the H200 the ReadMostly read-back of one test failed now and
/// then while the others ran beside it (a neighbour's migration or
/// allocation on the shared page), never with one test at a time.
static MANAGED_PAGES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock of [`MANAGED_PAGES`] (a test that panicked while holding it
/// does not fail the others).
fn pages() -> std::sync::MutexGuard<'static, ()> {
    MANAGED_PAGES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Queues `p = p * mul + add` on `stream`, ordered as a write of `p` (what
/// a typed launch does for a `&mut [u32]` argument).
fn affine(f: &CudaFunction, stream: &CudaStream, p: &mut ManagedBuffer<u32>, mul: u32, add: u32) -> Result<(), DriverError> {
    p.order_write(stream)?;
    // SAFETY: `p` is `p.len()` u32s of managed memory; the write is ordered
    // in `p`'s stream order, so the host and the free wait for it.
    unsafe { affine_raw(f, stream, p.device_ptr(), p.len(), mul, add) }
}

#[test]
fn a_kernel_writes_a_managed_buffer_and_the_host_reads_it_without_a_copy() {
    let (ctx, stream, f) = setup();
    let _pages = pages();
    let start: Vec<u32> = (0..N as u32).collect();
    let mut m = ManagedBuffer::from_slice(&ctx, &start).unwrap();
    assert_eq!(m.len(), N);
    assert_eq!(m.size_in_bytes(), 4 * N);
    affine(&f, &stream, &mut m, 3, 1).unwrap();
    // No synchronize: `host` waits for the kernel.
    let got = m.host().unwrap();
    assert!(got.iter().enumerate().all(|(i, &x)| x == 3 * i as u32 + 1), "first: {:?}", &got[..4]);
    // The host writes, a kernel on another stream reads and writes, the host reads.
    m.host_mut().unwrap().fill(7);
    let other = ctx.new_stream().unwrap();
    affine(&f, &other, &mut m, 2, 0).unwrap();
    affine(&f, &stream, &mut m, 1, 1).unwrap(); // waits for `other` (a write after a write)
    assert!(m.to_vec().unwrap().iter().all(|&x| x == 15));
}

#[test]
fn host_access_is_refused_while_a_stream_that_used_the_buffer_captures() {
    let (ctx, stream, f) = setup();
    let _pages = pages();
    let mut m = ManagedBuffer::<u32>::zeroed(&ctx, 1024).unwrap();
    affine(&f, &stream, &mut m, 1, 2).unwrap();
    let graph = stream.capture(|_| -> Result<(), DriverError> {
        let e = m.host().unwrap_err();
        assert!(matches!(e, ManagedError::Driver(_)));
        assert!(e.to_string().contains("end the capture"), "{e}");
        // Without blocking: busy.
        assert_eq!(m.try_host().unwrap_err(), ManagedError::Busy);
        assert_eq!(m.try_host_mut().unwrap_err(), ManagedError::Busy);
        Ok(())
    });
    graph.unwrap();
    assert!(m.host().unwrap().iter().all(|&x| x == 2), "usable again after the capture");
    stream.synchronize().unwrap();
    assert!(m.try_host().unwrap().iter().all(|&x| x == 2), "idle: no waiting needed");
    m.try_host_mut().unwrap()[0] = 5;
    assert_eq!(m.host().unwrap()[0], 5);
}

#[test]
fn a_capture_refuses_a_managed_buffer() {
    let (ctx, stream, f) = setup();
    let _pages = pages();
    let mut m = ManagedBuffer::<u32>::zeroed(&ctx, 256).unwrap();
    let err = stream.capture(|s| affine(&f, s, &mut m, 2, 3)).unwrap_err();
    assert!(err.to_string().contains("ManagedBuffer"), "{err}");
    // Nothing ran, and the buffer still works outside captures.
    assert!(m.host().unwrap().iter().all(|&x| x == 0));
    affine(&f, &stream, &mut m, 2, 3).unwrap();
    assert!(m.host().unwrap().iter().all(|&x| x == 3));
}

#[test]
fn prefetch_and_advice_are_accepted_and_read_back() {
    let (ctx, stream, f) = setup();
    let _pages = pages();
    let mut m = ManagedBuffer::<f32>::zeroed(&ctx, 4096).unwrap();
    let gpu = MemLocation::device_of(&ctx);
    m.prefetch_to(gpu, &stream).unwrap();
    m.prefetch_to(MemLocation::Host, &stream).unwrap();
    // The prefetches are done before the advice is read back.
    stream.synchronize().unwrap();
    assert!(!m.is_read_mostly().unwrap());
    m.advise(MemAdvice::ReadMostly).unwrap();
    assert!(m.is_read_mostly().unwrap());
    m.advise(MemAdvice::NotReadMostly).unwrap();
    assert!(!m.is_read_mostly().unwrap());
    assert_eq!(m.preferred_location().unwrap(), None);
    m.advise(MemAdvice::PreferredLocation(MemLocation::Host)).unwrap();
    assert_eq!(m.preferred_location().unwrap(), Some(MemLocation::Host));
    m.advise(MemAdvice::PreferredLocation(gpu)).unwrap();
    assert_eq!(m.preferred_location().unwrap(), Some(gpu));
    m.advise(MemAdvice::NoPreferredLocation).unwrap();
    assert_eq!(m.preferred_location().unwrap(), None);
    m.advise(MemAdvice::AccessedBy(gpu)).unwrap();
    m.advise(MemAdvice::NotAccessedBy(gpu)).unwrap();
    let count = CudaContext::device_count().unwrap();
    let missing = MemLocation::Device(count);
    assert_eq!(m.prefetch_to(missing, &stream).unwrap_err(), ManagedError::NoSuchDevice { ordinal: count, count });
    assert!(matches!(m.advise(MemAdvice::AccessedBy(missing)), Err(ManagedError::NoSuchDevice { .. })));
    // Prefetch changes no value.
    m.host_mut().unwrap()[7] = 2.5;
    m.prefetch_to(gpu, &stream).unwrap();
    assert_eq!(m.host().unwrap()[7], 2.5);
    let _ = f;
}

#[test]
fn an_empty_managed_buffer_is_refused_clearly() {
    let (ctx, ..) = setup();
    let _pages = pages();
    let e = ManagedBuffer::<u32>::zeroed(&ctx, 0).unwrap_err();
    assert_eq!(e, ManagedError::Empty { element: "u32" });
    let e = ManagedBuffer::<()>::zeroed(&ctx, 10).unwrap_err();
    assert!(e.to_string().contains("at least one element"), "{e}");
}

#[test]
fn a_device_is_not_its_own_peer() {
    let (ctx, ..) = setup();
    assert!(!ctx.can_access_peer(&ctx).unwrap());
    let again = CudaContext::new(0).unwrap();
    assert!(!ctx.can_access_peer(&again).unwrap());
    assert_eq!(ctx.enable_peer_access(&again).unwrap_err(), PeerError::SameDevice { device: 0 });
    assert_eq!(ctx.disable_peer_access(&again).unwrap_err(), PeerError::SameDevice { device: 0 });
    if CudaContext::device_count().unwrap() > 1 {
        let other = CudaContext::new(1).unwrap();
        let can = ctx.can_access_peer(&other).unwrap();
        match ctx.enable_peer_access(&other) {
            Ok(()) => {
                assert!(can);
                ctx.enable_peer_access(&other).unwrap(); // again: not an error
                ctx.disable_peer_access(&other).unwrap();
                assert!(matches!(ctx.disable_peer_access(&other), Err(PeerError::NotEnabled { .. })));
            }
            Err(e) => assert!(!can && matches!(e, PeerError::Unsupported { .. }), "{e}"),
        }
    }
}

#[test]
fn copy_from_peer_checks_lengths_and_streams_and_copies() {
    let (ctx, stream, _) = setup();
    let data: Vec<u32> = (0..1000).map(|i| i * 7).collect();
    let src = DeviceBuffer::from_host(&stream, &data).unwrap();
    // On one device the "peer" is the same device: a plain copy.
    let other = ctx.new_stream().unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&other, 1000).unwrap();
    dst.copy_from_peer(&other, &src).unwrap();
    assert_eq!(dst.to_host_vec(&other).unwrap(), data);
    let mut short = DeviceBuffer::<u32>::zeroed(&stream, 999).unwrap();
    let e = short.copy_from_peer(&stream, &src).unwrap_err();
    assert_eq!(e, PeerError::LengthMismatch { destination: 999, source: 1000, element: "u32" });
    if CudaContext::device_count().unwrap() > 1 {
        // Across two GPUs: the copy waits for the source's upload on its own
        // device, and the stream must be the destination's.
        let gpu1 = CudaContext::new(1).unwrap();
        let s1 = gpu1.new_stream().unwrap();
        let mut far = DeviceBuffer::<u32>::zeroed(&s1, 1000).unwrap();
        assert!(matches!(far.copy_from_peer(&stream, &src), Err(PeerError::WrongStream { .. })));
        far.copy_from_peer(&s1, &src).unwrap();
        assert_eq!(far.to_host_vec(&s1).unwrap(), data);
    }
}
