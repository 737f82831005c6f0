//! What cuda-async does without a GPU: operations are lazy, combinators run
//! their steps in order and stop at the first error, and scheduling without
//! a driver fails cleanly with a typed error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cuda_async::{
    block_on, join_all, launch, value, AsyncError, DeviceOperation, ExecutionContext,
};

/// Records the order in which steps ran.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Counts its drops (stands in for a buffer).
struct Tracked(Arc<AtomicUsize>);
impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn host() -> ExecutionContext<'static> {
    ExecutionContext::host_only()
}

/// Whether this machine has a working GPU (then the no-driver checks are skipped).
fn gpu_present() -> bool {
    match cuda_async::default_pool() {
        Ok(_) => {
            eprintln!("skipped: a CUDA driver and GPU are present");
            true
        }
        Err(_) => false,
    }
}

#[test]
fn building_an_operation_runs_nothing() {
    let log = Log::default();
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    let op = value(1)
        .and_then(move |x| {
            l1.push("and_then");
            value(x + 1)
        })
        .map(move |x| {
            l2.push("map");
            x * 10
        })
        .zip(value("b").map(move |b| {
            l3.push("zip");
            b
        }));
    assert!(log.take().is_empty(), "combinators ran a step before scheduling");
    assert_eq!(op.enqueue(&host()).unwrap(), (20, "b"));
    assert_eq!(log.take(), ["and_then", "map", "zip"]);
}

#[test]
fn steps_hand_their_outputs_on_by_move() {
    // A value that is not Clone travels through the chain: it is moved, never copied.
    struct Unique(Vec<u8>);
    let data = Unique(vec![7; 1024]);
    let ptr_before = data.0.as_ptr();
    let out = value(data)
        .and_then(|u| value((u, 1)))
        .map(|(u, n)| (u, n + 1))
        .enqueue(&host())
        .unwrap();
    assert_eq!(out.0 .0.as_ptr(), ptr_before, "the same allocation came out");
    assert_eq!(out.1, 2);
}

#[test]
fn the_first_error_ends_the_operation() {
    let log = Log::default();
    let after = log.clone();
    let op = value(5)
        .then(|_stream, x| Ok(x)) // needs a stream: fails host-only
        .and_then(move |x: i32| {
            after.push("after the failed step");
            value(x)
        });
    let e = op.enqueue(&host()).unwrap_err();
    assert!(matches!(e, AsyncError::NoStream { step: "a then step" }), "{e}");
    assert!(log.take().is_empty(), "a step after the error ran");

    let e = launch(|_s| Ok(())).enqueue(&host()).unwrap_err();
    assert!(e.to_string().contains("needs a CUDA stream"), "{e}");
}

#[test]
fn host_errors_are_typed_and_keep_their_source() {
    #[derive(Debug)]
    struct BadInput;
    impl std::fmt::Display for BadInput {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("batch 3 has no rows")
        }
    }
    impl std::error::Error for BadInput {}
    let op = value(()).and_then(|()| {
        // A step that fails before it gets to the GPU.
        let e: Result<(), AsyncError> = Err(AsyncError::host(BadInput));
        value(e)
    });
    let inner = op.enqueue(&host()).unwrap();
    let e = inner.unwrap_err();
    assert_eq!(e.to_string(), "batch 3 has no rows");
    let source = std::error::Error::source(&e).unwrap();
    assert!(source.downcast_ref::<BadInput>().is_some());
}

#[test]
fn join_all_keeps_the_order_of_its_operations() {
    let ops: Vec<_> = (0..7).map(|i| value(i).map(move |x| x * x)).collect();
    assert_eq!(join_all(ops).enqueue(&host()).unwrap(), [0, 1, 4, 9, 16, 25, 36]);
    let empty: Vec<cuda_async::Value<u8>> = Vec::new();
    assert!(join_all(empty).enqueue(&host()).unwrap().is_empty());
}

#[test]
fn without_a_driver_sync_and_await_fail_cleanly_and_run_no_step() {
    if gpu_present() {
        return;
    }
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let e = value(1)
        .and_then(move |x| {
            r.fetch_add(1, Ordering::SeqCst);
            value(x)
        })
        .sync()
        .unwrap_err();
    assert!(e.is_no_gpu(), "{e}");
    assert!(e.to_string().contains("no CUDA driver found"), "{e}");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a step ran though nothing could be scheduled");

    // `.await` through IntoFuture, on the crate's own executor.
    let r = ran.clone();
    let e = block_on(async move {
        value(2)
            .map(move |x| {
                r.fetch_add(1, Ordering::SeqCst);
                x
            })
            .await
    })
    .unwrap_err();
    assert!(e.is_no_gpu(), "{e}");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn futures_are_lazy_and_dropping_an_unpolled_one_releases_at_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let fut = value(Tracked(drops.clone())).future();
    assert!(!fut.is_scheduled());
    assert_eq!(format!("{fut:?}"), "DeviceFuture { state: \"not scheduled yet\" }");
    let buried_before = cuda_async::pending_releases();
    drop(fut);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "nothing was enqueued, so nothing waits");
    assert!(cuda_async::pending_releases() <= buried_before);
}

#[test]
fn operations_and_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let op = value(vec![1u8]).and_then(value).zip(value(3)).map(|(a, b)| (a, b));
    send(&op);
    let fut = op.future();
    send(&fut);
}

/// `kernel_op!` goes through the typed launcher: this compiles only because
/// every argument matches its kernel parameter, and the operation hands back
/// the lent buffers in argument order. (Built, not run: it needs a GPU.)
#[allow(dead_code)]
mod kernel_op_types {
    use cuda_async::{kernel_op, DeviceBox, DeviceOperation};
    use cuda_core::{DeviceBuffer, LaunchConfig};
    use cuda_host::{cuda_module, KernelModule};
    use std::sync::Arc;

    #[cuda_module]
    pub mod kernels {
        use cuda_device::{kernel, thread, DisjointSlice};
        #[kernel]
        pub fn axpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
            let i = thread::index_1d();
            if let Some(v) = y.get_mut(i) {
                *v += a * x[i.get()];
            }
        }
        #[kernel]
        pub fn nothing() {}
    }

    fn output<O, Op: DeviceOperation<Output = O>>(op: Op) -> Op {
        op
    }

    fn build(module: Arc<KernelModule>, x: DeviceBox<f32>, y: DeviceBuffer<f32>, a: f32) {
        let cfg = LaunchConfig::for_num_elems(1024);
        let op = output::<(DeviceBox<f32>, DeviceBuffer<f32>), _>(kernel_op!(
            kernels::launch::axpy(module.clone(), cfg, a * 2.0, &x, &mut y)
        ));
        let empty = output::<(), _>(kernel_op!(kernels::launch::nothing(&module, cfg)));
        drop((op, empty));
    }
}
