//! The macros applied to real code, compiled by rustc and run on the host.
//!
//! The expansions name `::cuda_device::__private::param_layout` and
//! `::cuda_host::{__private::launchN, arg::slice, arg::slice_mut}`. This test
//! crate stands in for both crates (`extern crate self as ..`): its
//! `param_layout` records the layouts it is told, and its `launchN` calls the
//! entry wrapper directly with pointers to the arguments, which is what the
//! device does with the kernel parameters. So the kernels below run on the CPU
//! (as a single "thread" that loops over every element).

#![deny(warnings, unsafe_op_in_unsafe_fn)]

extern crate self as cuda_device;
extern crate self as cuda_host;

use std::cell::RefCell;
use std::mem::{align_of, size_of};

use cuda_macros::{cuda_launch, device, kernel};

// ---------------------------------------------------------------------------
// Stand-ins for cuda-device and cuda-host

/// `cuda_device::DisjointSlice`'s layout (docs/ABI.md §2).
#[repr(C)]
pub struct DisjointSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> DisjointSlice<T> {
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        // SAFETY: built from a live `&mut Vec<T>` by `arg::slice_mut`.
        (i < self.len).then(|| unsafe { &mut *self.ptr.add(i) })
    }
}

pub struct Module;
pub struct Stream;
#[derive(Debug, PartialEq)]
pub struct LaunchConfig(u32);

thread_local! {
    static LAYOUTS: RefCell<Vec<(u32, usize, usize)>> = const { RefCell::new(Vec::new()) };
    static BOUNDS: RefCell<Option<(u32, u32)>> = const { RefCell::new(None) };
    static IDENTITIES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The `entry_identity` names since the last call of this function.
fn take_identities() -> Vec<String> {
    IDENTITIES.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

/// The last `launch_bounds` call, taken.
fn take_bounds() -> Option<(u32, u32)> {
    BOUNDS.with(|b| b.borrow_mut().take())
}

/// The `param_layout` calls since the last call of this function.
fn take_layouts() -> Vec<(u32, usize, usize)> {
    LAYOUTS.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

pub mod __private {
    use std::mem::ManuallyDrop;

    pub fn param_layout(index: u32, size: usize, align: usize) {
        super::LAYOUTS.with(|l| l.borrow_mut().push((index, size, align)));
    }

    /// # Safety
    /// `instance` is a `fn() -> &'static str` (the wrapper's `type_name`).
    pub unsafe fn entry_identity(instance: *const u8) {
        // SAFETY: the caller's contract.
        let name = unsafe { std::mem::transmute::<*const u8, fn() -> &'static str>(instance) }();
        super::IDENTITIES.with(|l| l.borrow_mut().push(name.to_string()));
    }

    /// What #[kernel]'s `#[used]` static holds: the entry's address.
    pub struct KeepEntry(pub *const ());
    // SAFETY: only kept, never used.
    unsafe impl Sync for KeepEntry {}

    /// The entry wrapper's form of `&[T]` / `&mut [T]` parameters.
    #[repr(transparent)]
    pub struct SliceParam<'a, T>(pub &'a [T]);
    #[repr(transparent)]
    pub struct SliceMutParam<'a, T>(pub &'a mut [T]);

    pub fn launch_bounds(max_threads: u32, min_blocks: u32) {
        super::BOUNDS.with(|b| *b.borrow_mut() = Some((max_threads, min_blocks)));
    }

    macro_rules! launchers {
        ($($launch:ident($($arg:ident $field:tt),*);)*) => {$(
            #[allow(non_snake_case, clippy::too_many_arguments)]
            pub fn $launch<$($arg),*>(
                _module: &super::Module,
                _stream: &super::Stream,
                config: super::LaunchConfig,
                entry: unsafe fn($(*const $arg),*),
                args: ($($arg,)*),
            ) -> Result<super::LaunchConfig, String> {
                // The entry takes ownership of each argument with `ptr::read`.
                #[allow(unused_variables)]
                let args = ManuallyDrop::new(args);
                // SAFETY: each pointer is to an initialised argument of the right type.
                unsafe { entry($(&args.$field),*) };
                Ok(config)
            }
        )*};
    }

    launchers! {
        launch0();
        launch1(A 0);
        launch2(A 0, B 1);
        launch3(A 0, B 1, C 2);
        launch12(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
        launch20(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16, R 17, S 18, T 19);
    }
}

pub mod arg {
    #[allow(clippy::ptr_arg)] // stands in for `&DeviceBuffer<T>`
    pub fn slice<T>(buffer: &Vec<T>) -> super::__private::SliceParam<'_, T> {
        super::__private::SliceParam(buffer)
    }

    pub fn slice_mut<T>(buffer: &mut Vec<T>) -> super::DisjointSlice<T> {
        super::DisjointSlice {
            ptr: buffer.as_mut_ptr(),
            len: buffer.len(),
        }
    }
}

// ---------------------------------------------------------------------------
// Kernels

/// The example of docs/DESIGN.md §1.
#[kernel]
pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
    for (i, x) in input.iter().enumerate() {
        if let Some(elem) = out.get_mut(i) {
            *elem = x * factor;
        }
    }
}

#[kernel]
pub fn map<T: Copy, F: Fn(T) -> T + Copy>(f: F, input: &[T], mut out: DisjointSlice<T>) {
    for (i, x) in input.iter().enumerate() {
        if let Some(elem) = out.get_mut(i) {
            *elem = f(*x);
        }
    }
}

#[kernel]
#[allow(clippy::needless_lifetimes)] // the named lifetime is what is being tested
fn sum<'a, T>(x: &'a [T], mut out: DisjointSlice<T>)
where
    T: Copy + core::ops::Add<Output = T> + Default,
{
    *out.get_mut(0).unwrap() = x.iter().fold(T::default(), |acc, v| acc + *v);
}

#[kernel]
fn fill<const N: usize>(
    values: [u32; N],
    (offset, stride): (u32, u32),
    mut out: DisjointSlice<u32>,
) {
    for (i, v) in values.iter().enumerate() {
        *out.get_mut(i).unwrap() = offset + stride * v;
    }
}

#[device]
fn square(x: u64) -> u64 {
    x * x
}

thread_local! {
    static TICKS: RefCell<u32> = const { RefCell::new(0) };
}

#[kernel]
#[allow(clippy::unused_unit)] // `-> ()` is accepted
fn tick() -> () {
    TICKS.with(|t| *t.borrow_mut() += 1);
}

mod kernels {
    use super::DisjointSlice;
    use cuda_macros::kernel;

    #[kernel(launch_bounds(256))]
    pub(crate) fn squares(mut out: DisjointSlice<u64>) {
        for i in 0..4 {
            *out.get_mut(i).unwrap() = super::square(i as u64);
        }
    }

    /// More parameters than the launchers had before (12): each weighs its value.
    #[kernel]
    #[allow(clippy::too_many_arguments)]
    pub fn twenty(
        a0: u32, a1: u32, a2: u32, a3: u32, a4: u32, a5: u32, a6: u32, a7: u32, a8: u32, a9: u32,
        a10: u32, a11: u32, a12: u32, a13: u32, a14: u64, a15: u8, a16: i16, a17: f32,
        a18: [u32; 3], mut out: DisjointSlice<u64>,
    ) {
        let small = [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13];
        let mut total: u64 = small.iter().enumerate().map(|(i, &v)| (i as u64 + 1) * v as u64).sum();
        total += a14 * 100 + a15 as u64 * 1000 + (a16 as i64 * 10_000) as u64 + (a17 * 2.0) as u64;
        total += a18.iter().map(|&v| v as u64).sum::<u64>() * 7;
        *out.get_mut(0).unwrap() = total;
    }

    #[kernel]
    #[allow(clippy::too_many_arguments)]
    pub fn twelve(
        a: u8,
        b: u16,
        c: u32,
        d: u64,
        e: i8,
        f: i16,
        g: i32,
        h: i64,
        i: f32,
        j: f64,
        k: bool,
        mut out: DisjointSlice<f64>,
    ) {
        let total = a as f64
            + b as f64
            + c as f64
            + d as f64
            + e as f64
            + f as f64
            + g as f64
            + h as f64
            + i as f64
            + j
            + k as u8 as f64;
        *out.get_mut(0).unwrap() = total;
    }
}

/// A kernel declared through `macro_rules!`: types arrive as invisible groups.
macro_rules! offset_kernel {
    ($name:ident, $t:ty) => {
        #[kernel]
        fn $name(x: $t, mut out: DisjointSlice<$t>) {
            *out.get_mut(0).unwrap() = x + 1;
        }
    };
}
offset_kernel!(offset_i32, i32);

// ---------------------------------------------------------------------------
// Tests

fn module_and_stream() -> (Module, Stream) {
    (Module, Stream)
}

#[test]
fn scale_runs_and_reports_layouts() {
    let (module, stream) = module_and_stream();
    let input = vec![1.0f32, 2.0, 3.0];
    let mut output = vec![0.0f32; 3];
    take_layouts();
    let config = cuda_launch! {
        kernel: scale, stream: stream, module: module,
        config: LaunchConfig(1024),
        args: [slice(input), 2.5f32, slice_mut(output)]
    }
    .unwrap();
    assert_eq!(config, LaunchConfig(1024));
    assert_eq!(output, [2.5, 5.0, 7.5]);
    assert_eq!(
        take_layouts(),
        [
            (0, size_of::<&[f32]>(), align_of::<&[f32]>()),
            (1, 4, 4),
            (
                2,
                size_of::<DisjointSlice<f32>>(),
                align_of::<DisjointSlice<f32>>()
            ),
        ]
    );
}

#[test]
fn the_kernel_itself_stays_callable() {
    let mut output = vec![0.0f32; 2];
    scale(&[1.0, 2.0], 3.0, arg::slice_mut(&mut output));
    assert_eq!(output, [3.0, 6.0]);
}

#[test]
fn generic_kernel_with_closure_and_turbofish() {
    let (module, stream) = module_and_stream();
    let input = vec![1.0f32, 2.0];
    let mut output = vec![0.0f32; 2];
    let factor = 10.0f32;
    take_layouts();
    cuda_launch! {
        kernel: map::<f32, _>,
        stream: stream,
        module: module,
        config: LaunchConfig(1),
        args: [move |x| x * factor, slice(input), slice_mut(output),],
    }
    .unwrap();
    assert_eq!(output, [10.0, 20.0]);
    let layouts = take_layouts();
    assert_eq!(layouts[0], (0, 4, 4), "the closure captures one f32");
}

/// Each instance's wrapper names itself (`entry_identity`), generic
/// arguments included: the host finds a kernel by its wrapper's address, and
/// wrappers whose host code is the same would share one (rustc's
/// MergeFunctions), so each carries its own name.
#[test]
fn every_instance_names_itself() {
    let (module, stream) = module_and_stream();
    let mut output = vec![0u32; 3];
    take_identities();
    for _ in 0..2 {
        cuda_launch! {
            kernel: fill::<3>, stream: stream, module: module, config: LaunchConfig(1),
            args: [[1, 2, 3], (0, 1), slice_mut(output)]
        }
        .unwrap();
    }
    cuda_launch! {
        kernel: fill::<2>, stream: stream, module: module, config: LaunchConfig(1),
        args: [[1, 2], (0, 1), slice_mut(output)]
    }
    .unwrap();
    let input = vec![1u64, 2];
    let mut total = vec![0u64];
    cuda_launch! { args: [slice(input), slice_mut(total)], kernel: sum, stream: stream, module: module, config: LaunchConfig(1) }
        .unwrap();
    let names = take_identities();
    assert_eq!(names.len(), 4, "{names:?}");
    assert_eq!(names[0], names[1], "one instance, one name");
    assert!(names[0].ends_with("fill<3>") && names[2].ends_with("fill<2>"), "{names:?}");
    // Lifetimes are erased: `sum<'_, u64>`.
    assert!(names[3].contains("sum<") && names[3].ends_with("u64>"), "{names:?}");
}

#[test]
fn lifetimes_and_where_clauses() {
    let (module, stream) = module_and_stream();
    let input = vec![1u64, 2, 3, 4];
    let mut output = vec![0u64];
    cuda_launch! { args: [slice(input), slice_mut(output)], kernel: sum, stream: stream, module: module, config: LaunchConfig(1) }
        .unwrap();
    assert_eq!(output, [10]);
}

#[test]
fn const_generics_and_patterns() {
    let (module, stream) = module_and_stream();
    let mut output = vec![0u32; 3];
    take_layouts();
    cuda_launch! {
        kernel: fill::<3>, stream: stream, module: module, config: LaunchConfig(1),
        args: [[1, 2, 3], (100, 10), slice_mut(output)]
    }
    .unwrap();
    assert_eq!(output, [110, 120, 130]);
    assert_eq!(take_layouts()[..2], [(0, 12, 4), (1, 8, 4)]);
}

#[test]
fn no_parameters() {
    let (module, stream) = module_and_stream();
    cuda_launch! { kernel: tick, stream: stream, module: module, config: LaunchConfig(1), args: [] }.unwrap();
    assert_eq!(TICKS.with(|t| *t.borrow()), 1);
}

#[test]
fn paths_visibility_and_device_functions() {
    let (module, stream) = module_and_stream();
    let mut output = vec![0u64; 4];
    cuda_launch! { kernel: kernels::squares, stream: &stream, module: &module, config: LaunchConfig(1), args: [slice_mut(output)] }
        .unwrap();
    assert_eq!(output, [0, 1, 4, 9]);
    // `launch_bounds(256)`: the wrapper reports it, with no minimum of blocks.
    assert_eq!(take_bounds(), Some((256, 0)));
    let mut output = vec![0u64; 4];
    cuda_launch! { kernel: crate::kernels::squares, stream: stream, module: module, config: LaunchConfig(1), args: [slice_mut(output)] }
        .unwrap();
    assert_eq!(output, [0, 1, 4, 9]);
}

#[test]
fn twelve_arguments() {
    let (module, stream) = module_and_stream();
    let mut output = vec![0.0f64];
    cuda_launch! {
        kernel: kernels::twelve, stream: stream, module: module, config: LaunchConfig(1),
        args: [1u8, 2u16, 3u32, 4u64, 5i8, 6i16, 7i32, 8i64, 9.0f32, 10.0, true, slice_mut(output)]
    }
    .unwrap();
    assert_eq!(output, [56.0]);
}

#[test]
fn twenty_arguments() {
    let (module, stream) = module_and_stream();
    let mut output = vec![0u64];
    cuda_launch! {
        kernel: kernels::twenty, stream: stream, module: module, config: LaunchConfig(1),
        args: [1u32, 2u32, 3u32, 4u32, 5u32, 6u32, 7u32, 8u32, 9u32, 10u32, 11u32, 12u32, 13u32, 14u32,
               5u64, 6u8, 2i16, 1.5f32, [1u32, 2, 3], slice_mut(output)]
    }
    .unwrap();
    // sum of (i+1)*(i+1) for i < 14, then 500 + 6000 + 20000 + 3 + 42.
    let want: u64 = (1..=14u64).map(|v| v * v).sum::<u64>() + 500 + 6000 + 20_000 + 3 + 42;
    assert_eq!(output, [want]);
}

#[test]
fn kernels_from_macro_rules() {
    let (module, stream) = module_and_stream();
    let mut output = vec![0i32];
    cuda_launch! { kernel: offset_i32, stream: stream, module: module, config: LaunchConfig(1), args: [41, slice_mut(output)] }
        .unwrap();
    assert_eq!(output, [42]);
}

#[test]
fn launches_inside_macro_rules() {
    macro_rules! launch_scale {
        ($k:path, $input:expr, $output:expr) => {
            cuda_launch! { kernel: $k, stream: Stream, module: Module, config: LaunchConfig(1), args: [slice($input), 2.0f32, slice_mut($output)] }
        };
    }
    let input = vec![1.0f32];
    let mut output = vec![0.0f32];
    launch_scale!(scale, input, output).unwrap();
    assert_eq!(output, [2.0]);
}

#[test]
fn entry_wrapper_is_an_ordinary_unsafe_fn() {
    let entry: unsafe fn(*const u64) = __oxide_kernel_entry_square_twice;
    let x = 7u64;
    take_layouts();
    // SAFETY: `x` is a live u64.
    unsafe { entry(&x) };
    assert_eq!(take_layouts(), [(0, 8, 8)]);
}

#[kernel]
fn square_twice(x: u64) {
    assert_eq!(square(square(x)), x * x * x * x);
}
