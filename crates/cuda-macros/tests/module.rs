//! `#[cuda_module]` applied to real code, compiled by rustc and run on the host.
//!
//! As in `expand.rs`, this test crate stands in for `cuda_device`,
//! `cuda_host` and `cuda_core` (`extern crate self as ..`): its
//! `KernelArg<P>` turns a host value into the parameter `P` itself, and its
//! `launchN` calls the entry wrapper with pointers to those parameters, so
//! the kernels run on the CPU through the generated `launch::*` functions.

#![deny(warnings, unsafe_op_in_unsafe_fn)]

extern crate self as cuda_device;
extern crate self as cuda_host;
extern crate self as cuda_core;

use cuda_macros::{cuda_module, kernel};

// ---------------------------------------------------------------------------
// Stand-ins

#[repr(C)]
pub struct DisjointSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> DisjointSlice<T> {
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        // SAFETY: built from a live `&mut Vec<T>` by `KernelArg`.
        (i < self.len).then(|| unsafe { &mut *self.ptr.add(i) })
    }
}

pub struct KernelModule;
pub struct CudaStream;
#[derive(Debug, PartialEq, Clone, Copy)]
pub struct LaunchConfig(pub u32);
/// What launchers take: the mock's one kind of configuration.
pub trait LaunchShape {
    fn config(&self) -> LaunchConfig;
}
impl LaunchShape for LaunchConfig {
    fn config(&self) -> LaunchConfig {
        *self
    }
}
#[derive(Debug)]
pub struct HostError;

pub mod arg {
    use super::__private::{SliceMutParam, SliceParam};
    use super::DisjointSlice;

    /// The host value becomes the parameter itself.
    pub trait KernelArg<P> {
        fn into_param(self) -> P;
    }
    impl<T: Copy> KernelArg<T> for T {
        fn into_param(self) -> T {
            self
        }
    }
    // Like cuda-host, for every lifetime of the parameter (the launchers ask
    // for `for<'l> KernelArg<SliceParam<'l, T>>`).
    impl<'a, T> KernelArg<SliceParam<'a, T>> for &Vec<T> {
        fn into_param(self) -> SliceParam<'a, T> {
            // SAFETY: the tests keep the vector alive for the launch.
            SliceParam(unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len()) })
        }
    }
    impl<'a, T> KernelArg<SliceMutParam<'a, T>> for &mut Vec<T> {
        fn into_param(self) -> SliceMutParam<'a, T> {
            // SAFETY: as above, uniquely borrowed.
            SliceMutParam(unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), self.len()) })
        }
    }
    impl<T> KernelArg<DisjointSlice<T>> for &mut Vec<T> {
        fn into_param(self) -> DisjointSlice<T> {
            DisjointSlice { ptr: self.as_mut_ptr(), len: self.len() }
        }
    }
}

pub mod __private {
    use std::cell::Cell;
    use std::mem::ManuallyDrop;

    thread_local! {
        pub static LAST_CONFIG: Cell<Option<super::LaunchConfig>> = const { Cell::new(None) };
    }

    pub fn param_layout(_index: u32, _size: usize, _align: usize) {}
    pub fn entry_identity(_instance: *const u8) {}
    pub fn launch_bounds(_max_threads: u32, _min_blocks: u32) {}
    // A `&mut` parameter's check: the launches here are of one thread.
    pub fn single_thread_launch() -> bool {
        true
    }

    /// What #[kernel]'s `#[used]` static holds: the entry's address.
    pub struct KeepEntry(pub *const ());
    // SAFETY: only kept, never used.
    unsafe impl Sync for KeepEntry {}

    #[repr(transparent)]
    pub struct SliceParam<'a, T>(pub &'a [T]);
    #[repr(transparent)]
    pub struct SliceMutParam<'a, T>(pub &'a mut [T]);

    macro_rules! launchers {
        ($($launch:ident($($P:ident $A:ident $field:tt),*);)*) => {$(
            #[allow(non_snake_case, clippy::too_many_arguments, unused_variables)]
            pub fn $launch<L: super::LaunchShape, $($P, $A: super::arg::KernelArg<$P>),*>(
                _module: &super::KernelModule,
                _stream: &super::CudaStream,
                config: L,
                entry: unsafe fn($(*const $P),*),
                args: ($($A,)*),
            ) -> Result<(), super::HostError> {
                let params = ManuallyDrop::new(($(args.$field.into_param(),)*));
                LAST_CONFIG.with(|c| c.set(Some(config.config())));
                // SAFETY: each pointer is to an initialised parameter, read once.
                unsafe { entry($(&params.$field),*) };
                Ok(())
            }
        )*};
    }

    launchers! {
        launch0();
        launch1(P0 A0 0);
        launch2(P0 A0 0, P1 A1 1);
        launch3(P0 A0 0, P1 A1 1, P2 A2 2);
    }
}

// ---------------------------------------------------------------------------
// Kernels

#[cuda_module]
pub mod kernels {
    use super::DisjointSlice;
    use cuda_macros::kernel;
    use std::ops::Mul;

    #[kernel]
    pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
        for (i, x) in input.iter().enumerate() {
            *out.get_mut(i).unwrap() = x * factor;
        }
    }

    /// A generic kernel; its launcher is instantiated by inference.
    #[kernel]
    pub fn scale_any<T: Copy + Mul<Output = T>>(input: &[T], factor: T, mut out: DisjointSlice<T>) {
        for (i, x) in input.iter().enumerate() {
            *out.get_mut(i).unwrap() = *x * factor;
        }
    }

    /// Private, with a `&mut [T]`, a const generic, a tuple pattern and a
    /// parameter named like a launcher parameter.
    #[kernel]
    fn add<const N: usize>(data: &mut [u32], (a, b): (u32, u32), config: [u32; N]) {
        for (i, x) in data.iter_mut().enumerate() {
            *x += a * b + config[i % N];
        }
    }

    pub fn run_add(data: &mut Vec<u32>) -> Result<(), super::HostError> {
        launch::add(&super::KernelModule, &super::CudaStream, super::LaunchConfig(1), data, (2, 3), [10, 20])
    }

    #[kernel]
    pub(crate) fn tick() {}

    /// Not a kernel: no launcher.
    pub fn helper() {}
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn non_generic_launcher() {
    let input = vec![1.0f32, 2.0, 3.0];
    let mut output = vec![0.0f32; 3];
    kernels::launch::scale(&KernelModule, &CudaStream, LaunchConfig(7), &input, 2.5f32, &mut output).unwrap();
    assert_eq!(output, [2.5, 5.0, 7.5]);
    assert_eq!(__private::LAST_CONFIG.with(|c| c.get()), Some(LaunchConfig(7)));
}

#[test]
fn generic_launcher_infers_the_instance() {
    let ints = vec![1i32, -2, 3];
    let mut out = vec![0i32; 3];
    kernels::launch::scale_any(&KernelModule, &CudaStream, LaunchConfig(1), &ints, -3i32, &mut out).unwrap();
    assert_eq!(out, [-3, 6, -9]);
    let floats = vec![0.5f64];
    let mut out = vec![0.0f64];
    kernels::launch::scale_any(&KernelModule, &CudaStream, LaunchConfig(1), &floats, 4.0, &mut out).unwrap();
    assert_eq!(out, [2.0]);
}

#[test]
fn generic_launcher_accepts_explicit_type_arguments() {
    let input = vec![2u64];
    let mut out = vec![0u64];
    kernels::launch::scale_any::<u64>(&KernelModule, &CudaStream, LaunchConfig(1), &input, 21, &mut out).unwrap();
    assert_eq!(out, [42]);
}

#[test]
fn private_kernel_launcher_is_usable_in_the_module() {
    let mut data = vec![1u32, 2, 3];
    kernels::run_add(&mut data).unwrap();
    assert_eq!(data, [17, 28, 19]);
}

#[test]
fn no_parameters() {
    kernels::launch::tick(&KernelModule, &CudaStream, LaunchConfig(3)).unwrap();
    assert_eq!(__private::LAST_CONFIG.with(|c| c.get()), Some(LaunchConfig(3)));
}

#[test]
fn the_module_is_kept() {
    kernels::helper();
    let mut out = vec![0.0f32];
    // SAFETY: stands for the device calling the entry with valid parameters.
    let entry: unsafe fn(*const __private::SliceParam<'_, f32>, *const f32, *const DisjointSlice<f32>) =
        kernels::__oxide_kernel_entry_scale;
    let input = [2.0f32];
    let params = (
        __private::SliceParam(&input[..]),
        3.0f32,
        DisjointSlice { ptr: out.as_mut_ptr(), len: 1 },
    );
    // SAFETY: pointers to live parameters.
    unsafe { entry(&params.0, &params.1, &params.2) };
    assert_eq!(out, [6.0]);
}

// `kernel` is used through the module; keep the import checked.
#[allow(dead_code)]
#[kernel]
fn outside() {}
