//! The device-code executor through the emulated driver's own table, as
//! cuda-core drives it: real oxide PTX (ptx-vm's fixtures, written by the
//! device linker) loaded with `cuModuleLoadDataEx`, its globals reached
//! with `cuModuleGetGlobal`, launched with `cuLaunchKernel`, faults read
//! back from the context.
//!
//! The primary context is the process's, and a fault poisons it: the
//! scenarios run one after the other in one test, each on a fresh context
//! (the emulator destroys a context with its last release). The printf test
//! runs its launch in a child process, whose stdout it reads.

use std::ffi::{c_int, c_void, CString};
use std::process::Command;
use std::ptr;

use cuda_driver_sys::panic_record::{self, RawPanicRecord, ValueKind, RECORD_GLOBAL};
use cuda_driver_sys::{CUcontext, CUdeviceptr, CUfunction, CUmodule, DriverApi, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
use cuda_emulator::Mode;

const VECADD: &str = include_str!("../../ptx-vm/tests/fixtures/vecadd.ptx");
const VECADD_ENTRY: &str = "_ZN6vecadd27__oxide_kernel_entry_vecadd17h80803fbc32d60811E";
const CONSTANT_POLY: &str = include_str!("../../ptx-vm/tests/fixtures/constant_poly.ptx");
const POLYNOMIAL_ENTRY: &str = "_ZN13constant_poly31__oxide_kernel_entry_polynomial17he934b8d33adef57bE";
const COEFFS: &str = "_ZN13constant_poly6COEFFS17hedbb621fe74973d0E";
const TMA_COPY: &str = include_str!("../../ptx-vm/tests/fixtures/tma_copy.ptx");
const SCALE_BOXES_ENTRY: &str = "_ZN8tma_copy32__oxide_kernel_entry_scale_boxes17h8c04157baaec12daE";

const CUDA_ERROR_INVALID_VALUE: c_int = 1;
const CUDA_ERROR_INVALID_PTX: c_int = 218;
const CUDA_ERROR_NOT_FOUND: c_int = 500;
const CUDA_ERROR_ILLEGAL_ADDRESS: c_int = 700;
const CUDA_ERROR_LAUNCH_FAILED: c_int = 719;
const CUDA_ERROR_NOT_SUPPORTED: c_int = 801;

/// The emulated driver in device-code mode, with a fresh primary context
/// current on this thread; dropping it releases the context.
struct Driver {
    api: DriverApi,
    ctx: CUcontext,
}

impl Driver {
    fn new() -> Driver {
        let api = cuda_emulator::driver_api(Mode::DeviceCode);
        let mut ctx = ptr::null_mut();
        // SAFETY: out-pointer to a local; device 0 exists.
        unsafe {
            assert_eq!((api.cuInit)(0), 0);
            assert_eq!((api.cuDevicePrimaryCtxRetain)(&mut ctx, 0), 0);
            assert_eq!((api.cuCtxSetCurrent)(ctx), 0);
        }
        Driver { api, ctx }
    }

    fn status(&self) -> c_int {
        // SAFETY: no arguments.
        unsafe { (self.api.cuCtxSynchronize)() }
    }

    fn detail(&self) -> Option<String> {
        // SAFETY: a context handle of the emulated driver.
        unsafe { cuda_emulator::fault_detail(self.ctx) }
    }

    /// Loads `ptx`: the module, or the error and the JIT error log.
    fn load(&self, ptx: &str) -> Result<CUmodule, (c_int, String)> {
        let text = CString::new(ptx).unwrap();
        let mut log = vec![0u8; 4096];
        let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr().cast::<c_void>(), ptr::without_provenance_mut(log.len())];
        let mut module = ptr::null_mut();
        // SAFETY: a NUL-terminated PTX text; two options with their values.
        let code = unsafe {
            (self.api.cuModuleLoadDataEx)(&mut module, text.as_ptr().cast(), 2, options.as_mut_ptr(), values.as_mut_ptr())
        };
        let log = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
        if code == 0 { Ok(module) } else { Err((code, log)) }
    }

    fn function(&self, module: CUmodule, name: &str) -> Result<CUfunction, c_int> {
        let name = CString::new(name).unwrap();
        let mut f = ptr::null_mut();
        // SAFETY: a live module; a C string.
        match unsafe { (self.api.cuModuleGetFunction)(&mut f, module, name.as_ptr()) } {
            0 => Ok(f),
            code => Err(code),
        }
    }

    fn global(&self, module: CUmodule, name: &CString) -> Option<(CUdeviceptr, usize)> {
        let (mut address, mut size) = (0, 0);
        // SAFETY: out-pointers to locals; a live module; a C string.
        let code = unsafe { (self.api.cuModuleGetGlobal_v2)(&mut address, &mut size, module, name.as_ptr()) };
        (code == 0).then_some((address, size))
    }

    /// Device memory holding `values`.
    fn upload<T: Copy>(&self, values: &[T]) -> CUdeviceptr {
        let bytes = std::mem::size_of_val(values);
        let mut p = 0;
        // SAFETY: out-pointer to a local; the copy is `bytes` long on both sides.
        unsafe {
            assert_eq!((self.api.cuMemAlloc_v2)(&mut p, bytes), 0);
            assert_eq!((self.api.cuMemcpyHtoD_v2)(p, values.as_ptr().cast(), bytes), 0);
        }
        p
    }

    fn download<T: Copy + Default>(&self, p: CUdeviceptr, n: usize) -> Vec<T> {
        let mut out = vec![T::default(); n];
        // SAFETY: `p` holds at least `n` values (the caller's allocation).
        let code = unsafe { (self.api.cuMemcpyDtoHAsync_v2)(out.as_mut_ptr().cast(), p, n * std::mem::size_of::<T>(), ptr::null_mut()) };
        assert_eq!(code, 0);
        out
    }

    /// A zeroed panic record in pinned memory, its address put in the
    /// module's slot (what cuda-core does at every load).
    fn install_panic_record(&self, module: CUmodule) -> *const RawPanicRecord {
        let size = std::mem::size_of::<RawPanicRecord>();
        let mut host = ptr::null_mut();
        let (slot, slot_size) = self.global(module, &RECORD_GLOBAL.to_owned()).expect("the module can panic");
        assert_eq!(slot_size, 8);
        // SAFETY: out-pointer to a local; the record's bytes are zeroed before
        // its address is handed out; the slot is 8 bytes.
        unsafe {
            assert_eq!((self.api.cuMemHostAlloc)(&mut host, size, 3), 0);
            ptr::write_bytes(host.cast::<u8>(), 0, size);
            let address = host as u64;
            assert_eq!((self.api.cuMemcpyHtoD_v2)(slot, (&address as *const u64).cast(), 8), 0);
        }
        host.cast()
    }

    /// `cuLaunchKernel` with one pointer per parameter.
    fn launch(&self, f: CUfunction, grid: u32, block: u32, params: &mut [*mut c_void]) -> c_int {
        // SAFETY: the parameters are what the test's kernel takes.
        unsafe {
            (self.api.cuLaunchKernel)(f, grid, 1, 1, block, 1, 1, 0, ptr::null_mut(), params.as_mut_ptr(), ptr::null_mut())
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // SAFETY: the device whose primary context `new` retained.
        unsafe { (self.api.cuDevicePrimaryCtxRelease_v2)(0) };
    }
}

/// vecadd's parameters: `a: &[f32]`, `b: &[f32]`, `c: DisjointSlice<f32>`,
/// each (pointer, length).
struct Slices([[u64; 2]; 3]);

impl Slices {
    fn pointers(&mut self) -> [*mut c_void; 3] {
        self.0.each_mut().map(|s| (s as *mut [u64; 2]).cast())
    }
}

#[test]
fn device_code_scenarios_each_on_a_fresh_context() {
    vecadd_runs_both_entries_of_the_device_linkers_output();
    a_device_panic_fills_the_contexts_record_and_traps();
    a_wrong_address_is_an_illegal_address_naming_kernel_thread_and_instruction();
    the_unchecked_entry_runs_without_the_checks_its_condition_implies();
    a_constant_written_through_the_modules_global_is_what_the_kernel_reads();
    ptx_that_does_not_parse_is_invalid_ptx_with_the_parsers_log();
    what_the_vm_does_not_model_is_refused_naming_it_and_host_mode();
    events_time_unless_made_without_timing_as_the_driver_answers();
    a_write_just_past_an_allocation_is_an_illegal_address();
    shared_memory_limits_count_each_kernels_static_part();
}

/// Two kernels of one module, each with its own static array: 40 KiB
/// (`tile`) and 49 KiB (`too_much`, which ptxas would refuse).
const STATIC_SHARED_PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
    .shared .align 16 .b8 tile[40960];\n\
    .shared .align 16 .b8 huge[50176];\n\
    .visible .entry uses_tile() { .reg .b32 %r<2>; mov.u32 %r1, 7; st.shared.u32 [tile], %r1; ret; }\n\
    .visible .entry too_much() { .reg .b32 %r<2>; mov.u32 %r1, 7; st.shared.u32 [huge], %r1; ret; }\n";

fn shared_memory_limits_count_each_kernels_static_part() {
    const SHARED_SIZE_BYTES: c_int = 1;
    const MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
    let d = Driver::new();
    let m = d.load(STATIC_SHARED_PTX).unwrap();
    let f = d.function(m, "uses_tile").unwrap();
    let attribute = |f: CUfunction, which: c_int| {
        let mut v = 0;
        // SAFETY: out-pointer to a local; a live function.
        assert_eq!(unsafe { (d.api.cuFuncGetAttribute)(&mut v, which, f) }, 0);
        v
    };
    // Its own 40 KiB, not the module's 89: 8 KiB of dynamic memory left.
    assert_eq!(attribute(f, SHARED_SIZE_BYTES), 40960);
    assert_eq!(attribute(f, MAX_DYNAMIC_SHARED_SIZE_BYTES), 8192);
    let launch = |f: CUfunction, dynamic: u32| {
        // SAFETY: the kernels take no parameters.
        unsafe { (d.api.cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, dynamic, ptr::null_mut(), ptr::null_mut(), ptr::null_mut()) }
    };
    assert_eq!(launch(f, 8193), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(launch(f, 8192), 0);
    // A raise past the opt-in maximum (227 KiB) less the static part is refused.
    let set = |value: c_int| {
        // SAFETY: a live function.
        unsafe { (d.api.cuFuncSetAttribute)(f, MAX_DYNAMIC_SHARED_SIZE_BYTES, value) }
    };
    assert_eq!(set(227 * 1024 - 40960 + 1), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(attribute(f, MAX_DYNAMIC_SHARED_SIZE_BYTES), 8192, "a refused raise changes nothing");
    assert_eq!(set(227 * 1024 - 40960), 0);
    assert_eq!(launch(f, 227 * 1024 - 40960), 0);
    // More than 48 KiB of static shared memory does not run at all.
    let too_much = d.function(m, "too_much").unwrap();
    assert_eq!(attribute(too_much, SHARED_SIZE_BYTES), 50176);
    assert_eq!(attribute(too_much, MAX_DYNAMIC_SHARED_SIZE_BYTES), 0);
    assert_eq!(launch(too_much, 0), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(d.status(), 0, "refused launches leave the context healthy");
}

fn a_write_just_past_an_allocation_is_an_illegal_address() {
    let d = Driver::new();
    let m = d.load(VECADD).unwrap();
    d.install_panic_record(m);
    let f = d.function(m, VECADD_ENTRY).unwrap();
    // `c` claims 300 elements but has 200: the kernel's bounds checks pass,
    // and threads 200 and up store right after the allocation's end, which
    // on the host is the allocation's own slack, not another buffer.
    let c = d.upload(&[0.0f32; 200]);
    let mut params = Slices([[d.upload(&[1.0f32; 300]), 300], [d.upload(&[2.0f32; 300]), 300], [c, 300]]);
    assert_eq!(d.launch(f, 1, 300, &mut params.pointers()), 0);
    assert_eq!(d.status(), CUDA_ERROR_ILLEGAL_ADDRESS);
    let detail = d.detail().expect("the VM's report");
    assert!(detail.contains("outside every valid allocation, at `st.global"), "{detail}");
    let address = detail.split("global address 0x").nth(1).and_then(|rest| {
        let hex: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
        u64::from_str_radix(&hex, 16).ok()
    });
    let address = address.unwrap_or_else(|| panic!("no address in {detail}"));
    assert!((c + 800..c + 1200).contains(&address), "{address:#x} is not past the end of {c:#x}: {detail}");
}

fn events_time_unless_made_without_timing_as_the_driver_answers() {
    const CU_EVENT_DISABLE_TIMING: u32 = 2;
    const CUDA_ERROR_INVALID_HANDLE: c_int = 400;
    let d = Driver::new();
    let [mut start, mut end, mut untimed, mut never] = [ptr::null_mut(); 4];
    let mut ms = -1f32;
    // SAFETY: out-pointers to locals; the events are live until destroyed
    // below; the legacy default stream (null) of the current context.
    unsafe {
        assert_eq!((d.api.cuEventCreate)(&mut start, 0), 0);
        assert_eq!((d.api.cuEventCreate)(&mut end, 0), 0);
        assert_eq!((d.api.cuEventCreate)(&mut untimed, CU_EVENT_DISABLE_TIMING), 0);
        assert_eq!((d.api.cuEventCreate)(&mut never, 0), 0);
        for e in [start, end, untimed] {
            assert_eq!((d.api.cuEventRecord)(e, ptr::null_mut()), 0);
        }
        assert_eq!((d.api.cuEventSynchronize)(end), 0);
        assert_eq!((d.api.cuEventElapsedTime)(&mut ms, start, end), 0);
        assert!(ms >= 0.0, "{ms}");
        assert_eq!((d.api.cuEventElapsedTime)(&mut ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!((d.api.cuEventElapsedTime)(&mut ms, start, never), CUDA_ERROR_INVALID_HANDLE);
        for e in [start, end, untimed, never] {
            assert_eq!((d.api.cuEventDestroy_v2)(e), 0);
        }
    }
}

fn vecadd_runs_both_entries_of_the_device_linkers_output() {
    let d = Driver::new();
    let m = d.load(VECADD).unwrap();
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (i as f32).sqrt()).collect();
    for entry in [VECADD_ENTRY.to_string(), format!("{VECADD_ENTRY}_unchecked")] {
        let f = d.function(m, &entry).unwrap();
        let c = d.upload(&vec![f32::NAN; n]);
        let mut params = Slices([[d.upload(&a), n as u64], [d.upload(&b), n as u64], [c, n as u64]]);
        assert_eq!(d.launch(f, 4, 256, &mut params.pointers()), 0);
        assert_eq!(d.status(), 0, "{:?}", d.detail());
        let got: Vec<f32> = d.download(c, n);
        for i in 0..n {
            assert_eq!(got[i].to_bits(), (a[i] + b[i]).to_bits(), "{entry}: element {i}");
        }
    }
    assert_eq!(d.function(m, "no_such_kernel").unwrap_err(), CUDA_ERROR_NOT_FOUND);
    // One handle per kernel: an attribute set through one lookup holds for all.
    assert_eq!(d.function(m, VECADD_ENTRY).unwrap(), d.function(m, VECADD_ENTRY).unwrap());
    // Three parameters, but none given: refused before anything runs.
    let f = d.function(m, VECADD_ENTRY).unwrap();
    // SAFETY: a null kernelParams, which the executor refuses.
    let code = unsafe { (d.api.cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, ptr::null_mut(), ptr::null_mut(), ptr::null_mut()) };
    assert_eq!(code, CUDA_ERROR_INVALID_VALUE);
    assert_eq!(d.status(), 0, "a refused launch leaves the context usable");
}

fn a_device_panic_fills_the_contexts_record_and_traps() {
    let d = Driver::new();
    let m = d.load(VECADD).unwrap();
    let record = d.install_panic_record(m);
    let f = d.function(m, VECADD_ENTRY).unwrap();
    // `a` is shorter than `c`: thread 100 indexes past it.
    let mut params = Slices([
        [d.upload(&[1.0f32; 100]), 100],
        [d.upload(&[2.0f32; 200]), 200],
        [d.upload(&[0.0f32; 200]), 200],
    ]);
    assert_eq!(d.launch(f, 1, 200, &mut params.pointers()), 0, "a fault is reported later, as on the GPU");
    assert_eq!(d.status(), CUDA_ERROR_LAUNCH_FAILED);
    // SAFETY: the record installed above, written by the device code.
    let panic = unsafe { panic_record::read(record) }.expect("the device code wrote the record");
    assert!(panic.file().ends_with("examples/vecadd/src/main.rs"), "{panic:?}");
    // The bounds check's values travel as values, in the record's layout
    // (PanicRecord.def), for cuda-core to format.
    assert_eq!(panic.message(), "index out of bounds: the len is {0} but the index is {1}");
    let values: Vec<_> = panic.values().collect();
    let index = panic.thread[0] as u128;
    assert_eq!(values, [(Some(ValueKind::U64), 100), (Some(ValueKind::U64), index)]);
    assert!((100..200).contains(&panic.thread[0]) && panic.block == [0, 0, 0], "{panic:?}");
    assert_eq!(d.detail(), None, "a device panic is the record alone, as on the GPU");
}

fn a_wrong_address_is_an_illegal_address_naming_kernel_thread_and_instruction() {
    let d = Driver::new();
    let m = d.load(VECADD).unwrap();
    d.install_panic_record(m);
    let f = d.function(m, VECADD_ENTRY).unwrap();
    // `a` claims 256 elements at an address nothing was allocated at.
    let mut params = Slices([[0x1000, 256], [d.upload(&[2.0f32; 256]), 256], [d.upload(&[0.0f32; 256]), 256]]);
    assert_eq!(d.launch(f, 1, 256, &mut params.pointers()), 0);
    assert_eq!(d.status(), CUDA_ERROR_ILLEGAL_ADDRESS);
    let detail = d.detail().expect("the VM's report");
    assert!(detail.contains(&format!("kernel `{VECADD_ENTRY}`")), "{detail}");
    assert!(detail.contains("of block (0, 0, 0) read 4 bytes at global address 0x1"), "{detail}");
    assert!(detail.contains("outside every valid allocation, at `ld.global"), "{detail}");
    // The context stays failed: later launches are refused with its error.
    assert_eq!(d.launch(f, 1, 256, &mut params.pointers()), CUDA_ERROR_ILLEGAL_ADDRESS);
}

fn the_unchecked_entry_runs_without_the_checks_its_condition_implies() {
    // vecadd's condition is `c.len <= a.len && c.len <= b.len`; cuda-host
    // takes `_unchecked` only where it holds (tests/gpu/launch_conditions
    // counts those launches). Launched against it, the unchecked entry reads
    // past `a` where the checked entry panicked: proof that the executor ran
    // the entry it was given, without the checks.
    let d = Driver::new();
    let m = d.load(VECADD).unwrap();
    let record = d.install_panic_record(m);
    let f = d.function(m, &format!("{VECADD_ENTRY}_unchecked")).unwrap();
    let mut params = Slices([
        [d.upload(&[1.0f32; 100]), 100],
        [d.upload(&[2.0f32; 200]), 200],
        [d.upload(&[0.0f32; 200]), 200],
    ]);
    assert_eq!(d.launch(f, 1, 200, &mut params.pointers()), 0);
    assert_eq!(d.status(), CUDA_ERROR_ILLEGAL_ADDRESS, "{:?}", d.detail());
    // SAFETY: the record installed above.
    assert!(unsafe { panic_record::read(record) }.is_none(), "no bounds check ran");
}

fn a_constant_written_through_the_modules_global_is_what_the_kernel_reads() {
    const DEGREE: usize = 8;
    let horner = |c: &[f32; DEGREE], x: f32| c.iter().rev().fold(0.0f32, |acc, &k| acc.mul_add(x, k));
    let d = Driver::new();
    let m = d.load(CONSTANT_POLY).unwrap();
    let f = d.function(m, POLYNOMIAL_ENTRY).unwrap();
    let (coeffs, size) = d.global(m, &CString::new(COEFFS).unwrap()).expect("the #[constant] static");
    assert_eq!(size, 4 * DEGREE);
    let updated = [0.5f32, 1.5, -2.0, 0.75, 0.0, 0.125, -0.25, 1.0];
    // SAFETY: the global's 32 bytes, from a local array of as many.
    assert_eq!(unsafe { (d.api.cuMemcpyHtoD_v2)(coeffs, updated.as_ptr().cast(), size) }, 0);
    let n = 1024usize;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32) * 4.0 - 2.0).collect();
    let out = d.upload(&vec![0.0f32; n]);
    let mut params = [[d.upload(&xs), n as u64], [out, n as u64]];
    let mut pointers = params.each_mut().map(|s| (s as *mut [u64; 2]).cast::<c_void>());
    assert_eq!(d.launch(f, 4, 256, &mut pointers), 0);
    assert_eq!(d.status(), 0, "{:?}", d.detail());
    let got: Vec<f32> = d.download(out, n);
    for (i, &x) in xs.iter().enumerate() {
        assert_eq!(got[i].to_bits(), horner(&updated, x).to_bits(), "x = {x}");
    }
}

fn ptx_that_does_not_parse_is_invalid_ptx_with_the_parsers_log() {
    let d = Driver::new();
    let (code, log) = d.load(".version 8.7\n.target sm_90\n.address_size 64\n.visible .entry k( {\n").unwrap_err();
    assert_eq!(code, CUDA_ERROR_INVALID_PTX);
    assert!(log.starts_with("ptx-vm: PTX line 4, column"), "{log}");
    assert_eq!(d.status(), 0, "a failed load leaves the context usable");
}

fn what_the_vm_does_not_model_is_refused_naming_it_and_host_mode() {
    let d = Driver::new();
    let m = d.load(TMA_COPY).unwrap();
    let f = d.function(m, SCALE_BOXES_ENTRY).unwrap();
    let (mut map, mut out) = (0u64, 0u64);
    let mut params = [(&mut map as *mut u64).cast::<c_void>(), (&mut out as *mut u64).cast()];
    assert_eq!(d.launch(f, 1, 128, &mut params), CUDA_ERROR_NOT_SUPPORTED);
    assert_eq!(d.status(), 0, "nothing ran: the context is fine");
    // Through the table a caller sees the error code; cuda-core shows the
    // launch error's text.
    let launch = cuda_emulator::Launch {
        function: f,
        grid: cuda_emulator::Grid { grid_dim: (1, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 },
        cluster: None,
        cooperative: false,
        params: params.as_ptr(),
        host_code: None,
        stream: std::ptr::null_mut(),
    };
    // SAFETY: a live function of the emulated driver with its two parameters.
    let refused = unsafe { cuda_emulator::launch(&launch) }.unwrap_err().to_string();
    assert!(refused.contains(&format!("cannot run kernel `{SCALE_BOXES_ENTRY}`: it can reach `cp.async.bulk.tensor")), "{refused}");
    assert!(refused.contains("which the PTX VM does not implement"), "{refused}");
    assert!(refused.contains("OXIDE_EMULATE=host"), "{refused}");
}

/// Set in the child process of [`vprintf_reaches_stdout_in_cudas_layout`].
const CHILD: &str = "CUDA_EMULATOR_TEST_PRINTF_CHILD";

#[test]
fn vprintf_reaches_stdout_in_cudas_layout() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["printf_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // The device linker's panic line: `%u` thread and block coordinates, the
    // `%s` file name (a module variable), `%u` line and column, then the
    // message's `%llu` values.
    // (The harness's `test printf_child ... ` may start the same line.)
    let line = stdout.lines().find_map(|l| l.split_once("GPU thread (")).map(|(_, rest)| rest).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains(") of block (0, 0, 0) panicked at "), "{line}");
    assert!(line.contains("examples/vecadd/src/main.rs:"), "{line}");
    assert!(stdout.contains("index out of bounds: the len is 100 but the index is 1"), "{stdout}");
}

/// The child's launch (does nothing unless [`CHILD`] is set).
#[test]
fn printf_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let d = Driver::new();
    let m = d.load(VECADD).unwrap();
    let f = d.function(m, VECADD_ENTRY).unwrap();
    let mut params = Slices([
        [d.upload(&[1.0f32; 100]), 100],
        [d.upload(&[2.0f32; 200]), 200],
        [d.upload(&[0.0f32; 200]), 200],
    ]);
    assert_eq!(d.launch(f, 1, 200, &mut params.pointers()), 0);
    assert_eq!(d.status(), CUDA_ERROR_LAUNCH_FAILED);
}
