//! [`kernel_op!`](crate::kernel_op): a kernel launch as an operation.

/// A kernel launch as a [`DeviceOperation`](crate::DeviceOperation), through
/// the typed launcher `#[cuda_module]` generated, so the arguments get the
/// same compile-time checks as a synchronous launch.
///
/// Write the launcher call as for a synchronous launch, without the stream:
/// `kernel_op!(kernels::launch::k(module, config, args…))`. Arguments
/// written `&name` or `&mut name` (buffers, [`DeviceBox`](crate::DeviceBox)es)
/// are moved into the operation, lent to the launch, and handed back as
/// its output, a tuple in argument order; other arguments are passed by
/// value. `module` and `config` are evaluated when the operation is built;
/// `module` may be a `KernelModule`, an `Arc` of one, or a reference.
///
/// ```no_run
/// use cuda_async::{kernel_op, memory, DeviceBox, DeviceOperation};
/// use cuda_core::{DeviceBuffer, LaunchConfig};
/// use cuda_host::{cuda_module, KernelModule};
/// use std::sync::Arc;
///
/// #[cuda_module]
/// mod kernels {
///     use cuda_device::{kernel, thread, DisjointSlice};
///     #[kernel]
///     pub fn axpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///         let i = thread::index_1d();
///         if let Some(v) = y.get_mut(i) {
///             *v += a * x[i.get()];
///         }
///     }
/// }
///
/// fn axpy(module: &Arc<KernelModule>, x: DeviceBox<f32>, y: DeviceBuffer<f32>)
///     -> impl DeviceOperation<Output = (DeviceBox<f32>, DeviceBuffer<f32>)>
/// {
///     let config = LaunchConfig::for_num_elems(y.len() as u32);
///     kernel_op!(kernels::launch::axpy(module.clone(), config, 2.0f32, &x, &mut y))
/// }
/// ```
///
/// A wrong argument is a compile error, as for the synchronous launcher (a
/// shared, read-only box for the kernel's output here):
///
/// ```compile_fail
/// # use cuda_async::{kernel_op, DeviceBox, DeviceOperation};
/// # use cuda_core::{DeviceBuffer, LaunchConfig};
/// # use cuda_host::{cuda_module, KernelModule};
/// # use std::sync::Arc;
/// # #[cuda_module]
/// # mod kernels {
/// #     use cuda_device::{kernel, thread, DisjointSlice};
/// #     #[kernel]
/// #     pub fn axpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
/// #         let i = thread::index_1d();
/// #         if let Some(v) = y.get_mut(i) {
/// #             *v += a * x[i.get()];
/// #         }
/// #     }
/// # }
/// fn axpy(module: &Arc<KernelModule>, x: DeviceBox<f32>, y: DeviceBox<f32>) {
///     let config = LaunchConfig::for_num_elems(y.len() as u32);
///     let _ = kernel_op!(kernels::launch::axpy(module.clone(), config, 2.0f32, &x, &mut y));
/// }
/// ```
#[macro_export]
macro_rules! kernel_op {
    ($($launcher:ident)::+ ($module:expr, $config:expr $(,)?)) => {
        $crate::kernel_op!(@munch [$($launcher)::+] [$module] [$config] [] [] [])
    };
    ($($launcher:ident)::+ ($module:expr, $config:expr, $($args:tt)+)) => {
        $crate::kernel_op!(@munch [$($launcher)::+] [$module] [$config] [] [] [] $($args)+)
    };
    // `&mut name`: lent mutably, handed back.
    (@munch $l:tt $m:tt $c:tt [$($pass:tt)*] [$($ret:ident)*] [$($mut:ident)*]
        &mut $id:ident $(, $($rest:tt)*)?) => {
        $crate::kernel_op!(@munch $l $m $c [$($pass)* (&mut $id)] [$($ret)* $id] [$($mut)* $id]
            $($($rest)*)?)
    };
    // `&name`: lent, handed back.
    (@munch $l:tt $m:tt $c:tt [$($pass:tt)*] [$($ret:ident)*] $muts:tt
        & $id:ident $(, $($rest:tt)*)?) => {
        $crate::kernel_op!(@munch $l $m $c [$($pass)* (&$id)] [$($ret)* $id] $muts $($($rest)*)?)
    };
    // Anything else: a value.
    (@munch $l:tt $m:tt $c:tt [$($pass:tt)*] $rets:tt $muts:tt $e:expr $(, $($rest:tt)*)?) => {
        $crate::kernel_op!(@munch $l $m $c [$($pass)* ($e)] $rets $muts $($($rest)*)?)
    };
    (@munch [$($l:tt)*] [$m:expr] [$c:expr] [$(($($pass:tt)*))*] [$($ret:ident)*] [$($mut:ident)*]) => {{
        let __oxide_module = $m;
        let __oxide_config = $c;
        $crate::launch(move |__oxide_stream| {
            // The operation owns what it lends; the launch may write these.
            $(let mut $mut = $mut;)*
            $($l)*(&__oxide_module, __oxide_stream, __oxide_config, $($($pass)*),*)?;
            ::core::result::Result::Ok(($($ret,)*))
        })
    }};
}
