//! How host values become kernel arguments.
//!
//! A kernel parameter of type `P` receives the bytes of a host value whose
//! type implements [`KernelArg<P>`]. The implementations below are the whole
//! list of what may cross, so a launch with a wrong argument type does not
//! compile:
//! - `&[T]` ← `&buffer` (a `&DeviceBuffer<T>` or `&ManagedBuffer<T>`), a
//!   `DeviceSlice<T>` view, or [`slice(&buffer)`](slice());
//! - `&mut [T]` and [`DisjointSlice<T>`] ← `&mut buffer` (of either kind), a
//!   `DeviceSliceMut<T>` view, or [`slice_mut(&mut buffer)`](slice_mut());
//! - `&[A]` for an atomic `A` (`AtomicU32`, `AtomicF32`,
//!   `Scoped<AtomicU64, scope::Device>`, …: [`AtomicCell`]) ←
//!   `buffer.as_atomic()` of a `DeviceBuffer` of its value type (a
//!   [`DeviceAtomicSlice`], `Copy`; it borrows the buffer mutably, so the
//!   launch may alias it only with other atomic views of the buffer, never
//!   with a `&[T]` or `&mut [T]` of it); ordered as a write;
//! - [`GridGroup`](cuda_device::cooperative::GridGroup) ←
//!   [`grid(&mut barrier)`](grid()) of a [`GridBarrier`], in a cooperative
//!   launch only (`config.cooperative()`; otherwise the launch is refused);
//! - any other `Copy` type (numbers, `#[derive(Clone, Copy)]` structs,
//!   closures whose captures are `Copy`) ← a value of that same type,
//!   except types that are not `Unpin`: among them
//!   [`ThreadIndex`](cuda_device::ThreadIndex) and everything holding one,
//!   which only the launch's own thread ids may produce (a host that got one
//!   out of an emulated launch could otherwise hand every thread the same
//!   one, and `DisjointSlice::get_mut` the same element).
//!
//! A host slice (`&[T]`, `&Vec<T>`) never matches a `&[T]` parameter: the
//! `#[kernel]` entry wrapper takes a slice parameter as
//! `cuda_device::__private::SliceParam<T>` (`SliceMutParam<T>`), a type with
//! the layout of `&[T]` that only the device-buffer arguments above convert
//! to; it is not `Copy`, so the blanket `T → T` rule cannot produce it.
//! What the blanket rule still lets through are `Copy` values that *contain*
//! host references: a closure that captures `&x`, a `Copy` struct with a
//! reference field, a parameter whose type hides a reference behind an alias
//! or a generic parameter. Closing those needs an auto trait (unstable).

use cuda_core::{CudaStream, DeviceAtomicSlice, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut, DriverError, ManagedBuffer};
use cuda_device::atomic::AtomicCell;
use cuda_device::__private::{SliceMutParam, SliceParam};
use cuda_device::DisjointSlice;

/// A host value that can be passed for a kernel parameter of type `P`.
///
/// # Safety
/// `Repr` must have exactly the size, alignment and meaning on the device of
/// `P` (docs/ABI.md §2): the launch copies its bytes into the parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter of type `{P}`",
    label = "not a valid argument for this kernel parameter",
    note = "a `&[T]` parameter takes `&buffer` of a `DeviceBuffer<T>` (or a `DeviceSlice<T>`); \
            a `DisjointSlice<T>` or `&mut [T]` parameter takes `&mut buffer` (or a `DeviceSliceMut<T>`); \
            a `&[AtomicU32]` (any atomic) parameter takes `buffer.as_atomic()` of a `DeviceBuffer<u32>` \
            (make the view once and pass copies of it to alias it); \
            any other parameter takes a value of its own type. Host memory (`&Vec<T>`, `&[T]`, `Box<T>`, \
            `&T`) cannot be passed: copy it to the GPU with `DeviceBuffer::from_host`. A value of a generic \
            type `T` needs `T: Copy + Unpin + 'static`. A `ThreadIndex` (or a value holding one) comes only \
            from the launch's own thread ids: compute it in the kernel"
)]
pub unsafe trait KernelArg<P> {
    /// The value handed to the driver, laid out like `P`.
    type Repr;
    /// Builds the value.
    fn to_repr(&self) -> Self::Repr;

    /// Orders the launch on `stream` after the work on other streams that
    /// this argument's device memory depends on (see
    /// [`DeviceSlice::order_read`]); called for every argument before the
    /// launch is queued. Values that hold no device memory need nothing.
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        let _ = stream;
        Ok(())
    }

    /// Whether the kernel may only run in a cooperative launch with this
    /// argument (a [`GridGroup`](cuda_device::cooperative::GridGroup)): a
    /// launch that is not cooperative is then refused.
    fn needs_cooperative_launch(&self) -> bool {
        false
    }
}

/// The device memory of a grid-wide barrier, for a kernel parameter
/// [`GridGroup`](cuda_device::cooperative::GridGroup): pass
/// [`grid(&mut barrier)`](grid) in a launch with `config.cooperative()`.
/// One barrier serves any number of launches (it needs no reset); a launch
/// borrows it mutably and orders as its writer, so two launches that share
/// it never run at once.
#[derive(Debug)]
pub struct GridBarrier {
    word: DeviceBuffer<u32>,
}

impl GridBarrier {
    /// Allocates the barrier (one zeroed word) on `stream`'s context.
    pub fn new(stream: &CudaStream) -> Result<Self, DriverError> {
        Ok(GridBarrier { word: DeviceBuffer::zeroed(stream, 1)? })
    }
}

/// A [`GridBarrier`] passed for a `GridGroup` parameter.
#[derive(Debug)]
pub struct GridArg<'b> {
    barrier: &'b mut GridBarrier,
}

/// Passes `barrier` for a [`GridGroup`](cuda_device::cooperative::GridGroup)
/// kernel parameter (the launch must be cooperative).
pub fn grid(barrier: &mut GridBarrier) -> GridArg<'_> {
    GridArg { barrier }
}

// SAFETY: GridGroup is `#[repr(C)]` around the barrier word's device
// address. The launch is refused unless it is cooperative (the occupancy
// check makes every block resident), and the `&mut` borrow plus the write
// ordering give this launch the word alone while it runs.
unsafe impl<'b> KernelArg<cuda_device::cooperative::GridGroup> for GridArg<'b> {
    type Repr = cuda_device::cooperative::GridGroup;
    fn to_repr(&self) -> cuda_device::cooperative::GridGroup {
        // SAFETY: as above.
        unsafe { cuda_device::cooperative::GridGroup::from_raw(self.barrier.word.device_ptr() as usize as *mut u32) }
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.barrier.word.order_write(stream)
    }
    fn needs_cooperative_launch(&self) -> bool {
        true
    }
}

/// Device memory that [`slice()`] and [`slice_mut()`] pass to a kernel: a
/// [`DeviceBuffer`], a [`ManagedBuffer`] or a capture's
/// [`TempBuffer`](cuda_core::TempBuffer).
///
/// # Safety
/// `device_ptr` and `len` must describe `len` initialised elements of
/// `Elem` in memory the buffer's kernels may access, for as long as the
/// buffer is borrowed; `order_read`/`order_write` must order the stream
/// after the conflicting uses, as cuda-core's buffers do.
pub unsafe trait DeviceMemory {
    /// The element type.
    type Elem: DeviceRepr;
    /// The device address of the first element.
    fn device_ptr(&self) -> u64;
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Orders a read on `stream` (see [`DeviceSlice::order_read`]).
    fn order_read(&self, stream: &CudaStream) -> Result<(), DriverError>;
    /// Orders a write on `stream`.
    fn order_write(&mut self, stream: &CudaStream) -> Result<(), DriverError>;
}

macro_rules! device_memory {
    ($($buf:ident),*) => {$(
        // SAFETY: cuda-core's buffer reports its own allocation and orders
        // its uses (its `order_read` / `order_write`).
        unsafe impl<T: DeviceRepr> DeviceMemory for $buf<T> {
            type Elem = T;
            fn device_ptr(&self) -> u64 {
                $buf::device_ptr(self)
            }
            fn len(&self) -> usize {
                $buf::len(self)
            }
            fn order_read(&self, stream: &CudaStream) -> Result<(), DriverError> {
                $buf::order_read(self, stream)
            }
            fn order_write(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
                $buf::order_write(self, stream)
            }
        }
    )*};
}
device_memory!(DeviceBuffer, ManagedBuffer);

// SAFETY: the temporary's buffer reports its own allocation and orders its
// uses (refusing those outside the capture that made it, where it is a
// graph's allocation node).
unsafe impl<T: DeviceRepr> DeviceMemory for cuda_core::TempBuffer<'_, T> {
    type Elem = T;
    fn device_ptr(&self) -> u64 {
        DeviceBuffer::device_ptr(self)
    }
    fn len(&self) -> usize {
        DeviceBuffer::len(self)
    }
    fn order_read(&self, stream: &CudaStream) -> Result<(), DriverError> {
        DeviceBuffer::order_read(self, stream)
    }
    fn order_write(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        DeviceBuffer::order_write(self, stream)
    }
}

/// A buffer passed read-only, for a `&[T]` parameter.
#[derive(Debug)]
pub struct SliceArg<'b, B: DeviceMemory> {
    buffer: &'b B,
}

impl<B: DeviceMemory> Clone for SliceArg<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B: DeviceMemory> Copy for SliceArg<'_, B> {}

/// A buffer passed for writing, for a `DisjointSlice<T>` or `&mut [T]` parameter.
#[derive(Debug)]
pub struct SliceMutArg<'b, B: DeviceMemory> {
    buffer: &'b mut B,
}

/// Passes `buffer` (a [`DeviceBuffer`] or a [`ManagedBuffer`]) for a `&[T]`
/// kernel parameter.
pub fn slice<B: DeviceMemory>(buffer: &B) -> SliceArg<'_, B> {
    SliceArg { buffer }
}

/// Passes `buffer` (a [`DeviceBuffer`] or a [`ManagedBuffer`]) for a
/// `DisjointSlice<T>` (or `&mut [T]`) kernel parameter. The `&mut` borrow
/// ensures no other argument of the same launch aliases it, and no host
/// slice of a managed buffer lives across the launch.
pub fn slice_mut<B: DeviceMemory>(buffer: &mut B) -> SliceMutArg<'_, B> {
    SliceMutArg { buffer }
}

// SAFETY: `*const [T]` has the layout of `&[T]`, and the pointer is the
// buffer's device address with its length.
unsafe impl<'a, 'b, B: DeviceMemory> KernelArg<&'a [B::Elem]> for SliceArg<'b, B> {
    type Repr = *const [B::Elem];
    fn to_repr(&self) -> *const [B::Elem] {
        std::ptr::slice_from_raw_parts(self.buffer.device_ptr() as usize as *const B::Elem, self.buffer.len())
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.buffer.order_read(stream)
    }
}

// SAFETY: as above, for `&mut [T]`; the `&mut` borrow of the buffer makes the
// kernel's unique access real.
unsafe impl<'a, 'b, B: DeviceMemory> KernelArg<&'a mut [B::Elem]> for SliceMutArg<'b, B> {
    type Repr = *mut [B::Elem];
    fn to_repr(&self) -> *mut [B::Elem] {
        std::ptr::slice_from_raw_parts_mut(self.buffer.device_ptr() as usize as *mut B::Elem, self.buffer.len())
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.buffer.order_write(stream)
    }
}

// SAFETY: DisjointSlice is `#[repr(C)] { ptr, len }`, built here from the
// buffer's device address and length.
unsafe impl<'b, B: DeviceMemory> KernelArg<DisjointSlice<B::Elem>> for SliceMutArg<'b, B> {
    type Repr = DisjointSlice<B::Elem>;
    fn to_repr(&self) -> DisjointSlice<B::Elem> {
        // SAFETY: the buffer holds `len` initialised `T`s on the device and is
        // mutably borrowed for the launch.
        unsafe { DisjointSlice::from_raw_parts(self.buffer.device_ptr() as usize as *mut B::Elem, self.buffer.len()) }
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.buffer.order_write(stream)
    }
}

// SAFETY: the same type on both sides; `Copy` values are plain bytes.
// `'static` keeps borrowed host data out: a closure that captures `&x` (not
// `move`) or a struct holding a reference to a host local would hand the GPU
// a host address, so such an argument is a borrow error at the launch site.
// `Unpin` keeps `ThreadIndex` out (it is deliberately not `Unpin`; an auto
// trait, so a struct or closure holding one is not either): every thread
// would receive the same index.
unsafe impl<T: Copy + Unpin + 'static> KernelArg<T> for T {
    type Repr = T;
    fn to_repr(&self) -> T {
        *self
    }
}

/// `(device address, length)` of something that holds `T`s on the device.
fn raw_parts<T>(ptr: u64, len: usize) -> (*mut T, usize) {
    (ptr as usize as *mut T, len)
}

macro_rules! read_args {
    ($($src:ty),*) => {$(
        // SAFETY: `*const [T]` has the layout of `&[T]` (and of SliceParam,
        // its repr(transparent) wrapper); the pointer and length are those of
        // device memory holding `len` initialised `T`s, borrowed for the launch.
        unsafe impl<'a, 'b, T: DeviceRepr> KernelArg<SliceParam<'a, T>> for $src {
            type Repr = *const [T];
            fn to_repr(&self) -> *const [T] {
                let (ptr, len) = raw_parts::<T>(self.device_ptr(), self.len());
                std::ptr::slice_from_raw_parts(ptr, len)
            }
            fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
                self.order_read(stream)
            }
        }
        // SAFETY: as above, for a plain `&'a [T]` (a parameter whose slice
        // type the macro cannot see, such as a type alias).
        unsafe impl<'a, 'b, T: DeviceRepr> KernelArg<&'a [T]> for $src {
            type Repr = *const [T];
            fn to_repr(&self) -> *const [T] {
                let (ptr, len) = raw_parts::<T>(self.device_ptr(), self.len());
                std::ptr::slice_from_raw_parts(ptr, len)
            }
            fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
                self.order_read(stream)
            }
        }
    )*};
}

macro_rules! write_args {
    ($($src:ty),*) => {$(
        // SAFETY: `*mut [T]` has the layout of `&mut [T]`; the source is a
        // unique borrow of the device memory for the launch.
        unsafe impl<'a, 'b, T: DeviceRepr> KernelArg<SliceMutParam<'a, T>> for $src {
            type Repr = *mut [T];
            fn to_repr(&self) -> *mut [T] {
                let (ptr, len) = raw_parts::<T>(self.device_ptr(), self.len());
                std::ptr::slice_from_raw_parts_mut(ptr, len)
            }
            fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
                self.order_write(stream)
            }
        }
        // SAFETY: DisjointSlice is `#[repr(C)] { ptr, len }`, built from the
        // unique borrow of device memory holding `len` initialised `T`s.
        unsafe impl<'b, T: DeviceRepr> KernelArg<DisjointSlice<T>> for $src {
            type Repr = DisjointSlice<T>;
            fn to_repr(&self) -> DisjointSlice<T> {
                let (ptr, len) = raw_parts::<T>(self.device_ptr(), self.len());
                // SAFETY: see above.
                unsafe { DisjointSlice::from_raw_parts(ptr, len) }
            }
            fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
                self.order_write(stream)
            }
        }
    )*};
}

// SAFETY: `*const [A]` has the layout of `&[A]` and of `SliceParam<A>`;
// the memory holds `len` values of `A::Value`, each a valid `A`
// (AtomicCell's contract), and while the launch runs it is reached only
// through atomics: the view holds the buffer's mutable borrow, so no other
// argument of the launch but copies of the view can name it.
unsafe impl<'a, 'b, A: AtomicCell> KernelArg<SliceParam<'a, A>> for DeviceAtomicSlice<'b, A> {
    type Repr = *const [A];
    fn to_repr(&self) -> *const [A] {
        let (ptr, len) = raw_parts::<A>(self.device_ptr(), self.len());
        std::ptr::slice_from_raw_parts(ptr, len)
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order_write(stream)
    }
}
// SAFETY: as above, for a plain `&'a [A]` parameter.
unsafe impl<'a, 'b, A: AtomicCell> KernelArg<&'a [A]> for DeviceAtomicSlice<'b, A> {
    type Repr = *const [A];
    fn to_repr(&self) -> *const [A] {
        let (ptr, len) = raw_parts::<A>(self.device_ptr(), self.len());
        std::ptr::slice_from_raw_parts(ptr, len)
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.order_write(stream)
    }
}

read_args!(
    &'b DeviceBuffer<T>,
    DeviceSlice<'b, T>,
    &'b mut DeviceBuffer<T>,
    DeviceSliceMut<'b, T>,
    &'b ManagedBuffer<T>,
    &'b mut ManagedBuffer<T>
);
write_args!(&'b mut DeviceBuffer<T>, DeviceSliceMut<'b, T>, &'b mut ManagedBuffer<T>);

// SAFETY: the slice() / slice_mut() forms, as for `&DeviceBuffer` above.
unsafe impl<'a, 'b, B: DeviceMemory> KernelArg<SliceParam<'a, B::Elem>> for SliceArg<'b, B> {
    type Repr = *const [B::Elem];
    fn to_repr(&self) -> *const [B::Elem] {
        std::ptr::slice_from_raw_parts(self.buffer.device_ptr() as usize as *const B::Elem, self.buffer.len())
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.buffer.order_read(stream)
    }
}

// SAFETY: as above, for writing.
unsafe impl<'a, 'b, B: DeviceMemory> KernelArg<SliceMutParam<'a, B::Elem>> for SliceMutArg<'b, B> {
    type Repr = *mut [B::Elem];
    fn to_repr(&self) -> *mut [B::Elem] {
        std::ptr::slice_from_raw_parts_mut(self.buffer.device_ptr() as usize as *mut B::Elem, self.buffer.len())
    }
    fn order_on(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.buffer.order_write(stream)
    }
}
