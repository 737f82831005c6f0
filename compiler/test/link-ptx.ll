; The PTX link of oxide's PTX with nvcc's PTX of a device source
; (LinkPtx.cpp): one module, the higher .version, the device source after
; oxide's header; an `.extern .func` of a function defined before it goes
; (the kernels' declaration of cx_fma3: ptxas refuses a declaration after a
; definition, "Duplicate definition"), one of a function defined after it
; becomes a `.visible` forward declaration (the C++ call of the Rust export
; rust_cube); the linked module passes ptxas. The device
; source's internal `__cudart_i2opi_f`, which oxide's PTX also defines, is
; renamed in that source only. (A .ll file so lit runs it; the inputs are PTX.)
; RUN: %oxide-opt --link-ptx %S/Inputs/link-ptx/kernels.ptx %S/Inputs/link-ptx/ops.ptx 2>%t.err | FileCheck %s
; RUN: FileCheck %s --check-prefix=LINES < %t.err
; CHECK: .version 9.0
; CHECK-NEXT: .target sm_90
; CHECK-NEXT: .address_size 64
; CHECK: // oxide: device source {{.*}}ops.ptx (nvcc -ptx)
; CHECK-NOT: .version
; CHECK: .visible .func  (.param .b32 func_retval0) rust_cube
; CHECK-NEXT: (
; CHECK: .global .align 4 .b8 __cudart_i2opi_f$oxide1[24]
; CHECK: .visible .func  (.param .b32 func_retval0) cx_fma3(
; CHECK: ld.global.f32 %f5, [__cudart_i2opi_f$oxide1+4];
; CHECK: call.uni (retval0), rust_cube, (param0);
; The kernels' part, unchanged but for its declaration of cx_fma3.
; CHECK-NOT: cx_fma3
; CHECK: .global .align 4 .b8 __cudart_i2opi_f[24]
; CHECK: ld.global.u32 %r1, [__cudart_i2opi_f];
; CHECK-NOT: .extern .func
; LINES: unit ops.ptx lines 9-48

; A call whose prototype differs from the definition's is refused, naming both.
; RUN: not %oxide-opt --link-ptx %S/Inputs/link-ptx/kernels.ptx %S/Inputs/link-ptx/ops-wrong-signature.ptx 2>&1 | FileCheck %s --check-prefix=SIG
; SIG: error: `cx_fma3` is called with another signature than it is defined with:
; SIG-NEXT: the kernels' PTX calls it as (.param .b32, .param .b32, .param .b32) -> (.param .b32)
; SIG-NEXT: {{.*}}ops-wrong-signature.ptx defines it as (.param .b32, .param .b32, .param .b64) -> (.param .b32)
; SIG-NEXT: = help: make the `extern "C"` declaration match the C++ function

; A name both parts define is refused.
; RUN: not %oxide-opt --link-ptx %S/Inputs/link-ptx/kernels.ptx %S/Inputs/link-ptx/twice.ptx 2>&1 | FileCheck %s --check-prefix=TWICE
; TWICE: error: `rust_cube` is defined twice: by the kernels' PTX and by {{.*}}twice.ptx

; A struct passed by value (`.b8 [N]` in nvcc's PTX) is refused with the
; reason: rustc lowered the Rust side for the host's C ABI.
; RUN: not %oxide-opt --link-ptx %S/Inputs/link-ptx/kernels.ptx %S/Inputs/link-ptx/by-value.ptx 2>&1 | FileCheck %s --check-prefix=BYVAL
; BYVAL: error: `cx_fma3` takes a struct by value, which cannot cross between Rust and CUDA C++ device code:
; BYVAL: by-value.ptx defines it as (.param .align 4 .b8 [8], .param .b32, .param .b32) -> (.param .b32)
; BYVAL: = help: pass a pointer to it (`*const T` / `const T*`) or its fields as separate arguments

; A device source calling what no part defines is refused, naming the file
; (vprintf, which the driver provides, is not).
; RUN: not %oxide-opt --link-ptx %S/Inputs/link-ptx/kernels.ptx %S/Inputs/link-ptx/calls-nowhere.ptx 2>&1 | FileCheck %s --check-prefix=NOWHERE
; NOWHERE: error: the device source {{.*}}calls-nowhere.ptx calls `nowhere`, which neither it, another device source nor a Rust export defines
; NOWHERE-NOT: vprintf
