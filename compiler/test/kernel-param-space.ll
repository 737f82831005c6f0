; A kernel's parameters, laid out in order at their alignments, must fit the
; parameter space (4096 bytes below PTX ISA 8.1, 32764 from it on: sm_90):
; one that needs more is a compile error naming the kernel and its byte
; count, and gets no entry; one that fills the space exactly (alignment
; padding counted) is built.
; RUN: not %oxide-opt --arch sm_80 -passes=build-kernel-entries %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR
; RUN: not %oxide-opt --arch sm_80 -passes=build-kernel-entries %s 2>/dev/null | FileCheck %s
; RUN: not %oxide-opt --arch sm_90 -passes=build-kernel-entries %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR90
; RUN: not %oxide-opt --arch sm_90 -passes=build-kernel-entries %s 2>/dev/null | FileCheck %s --check-prefix=SM90

declare void @__oxide_stub_param_layout(i32, i64, i64)

; 4 bytes, then 4088 at alignment 8 (from offset 8): 4096 bytes.
define internal void @_ZN4demo25__oxide_kernel_entry_fits17h0123456789abcdefE(ptr %0, ptr %1) {
  call void @__oxide_stub_param_layout(i32 0, i64 4, i64 4)
  call void @__oxide_stub_param_layout(i32 1, i64 4088, i64 8)
  ret void
}

; 1 byte, then 4093 at alignment 4: 4097 bytes, one too many.
define internal void @_ZN4demo25__oxide_kernel_entry_over17h0123456789abcdefE(ptr %0, ptr %1) {
  call void @__oxide_stub_param_layout(i32 0, i64 1, i64 1)
  call void @__oxide_stub_param_layout(i32 1, i64 4093, i64 4)
  ret void
}

; 16 bytes, then 32748 at alignment 4: 32764 bytes, sm_90's space exactly.
define internal void @_ZN4demo25__oxide_kernel_entry_wide17h0123456789abcdefE(ptr %0, ptr %1) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 32748, i64 4)
  ret void
}

; 32765 bytes: past every target's space.
define internal void @_ZN4demo25__oxide_kernel_entry_huge17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 32765, i64 1)
  ret void
}

; ERR: error: kernel `demo::over` takes 4097 bytes of parameters; a kernel's parameter space holds 4096
; ERR: note: that is the parameter space of sm_80, whose PTX ISA is 7.0
; ERR: note: targets that oxide builds with PTX ISA 8.1 or newer (sm_90 and up) hold 32764 bytes
; ERR: pass large values through device memory instead
; ERR: error: kernel `demo::wide` takes 32764 bytes of parameters; a kernel's parameter space holds 4096
; ERR: error: kernel `demo::huge` takes 32765 bytes of parameters; a kernel's parameter space holds 4096
; ERR-NOT: targets that oxide builds
; ERR90-NOT: demo::over
; ERR90-NOT: demo::wide
; ERR90: error: kernel `demo::huge` takes 32765 bytes of parameters; a kernel's parameter space holds 32764
; ERR90-NEXT: note: that is the parameter space of sm_90, whose PTX ISA is 8.1
; ERR90-NEXT: note: pass large values through device memory instead
; SM90-DAG: define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_over17h0123456789abcdefE(
; SM90-DAG: define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_wide17h0123456789abcdefE(ptr byval([16 x i8]) align 8 %p0, ptr byval([32748 x i8]) align 4 %p1)
; ERR-NOT: demo::fits
; CHECK: define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_fits17h0123456789abcdefE(ptr byval([4 x i8]) align 4 %p0, ptr byval([4088 x i8]) align 8 %p1)
; CHECK-NOT: define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_over
