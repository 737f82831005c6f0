; A kernel's parameters, laid out in order at their alignments, must fit the
; parameter space (4096 bytes): one that needs more is a compile error naming
; the kernel and its byte count, and gets no entry; one that fills the space
; exactly (alignment padding counted) is built.
; RUN: not %oxide-opt -passes=build-kernel-entries %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR
; RUN: not %oxide-opt -passes=build-kernel-entries %s 2>/dev/null | FileCheck %s

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

; ERR: error: kernel `demo::over` takes 4097 bytes of parameters; a kernel's parameter space holds 4096
; ERR: pass large values through device memory instead
; ERR-NOT: demo::fits
; CHECK: define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_fits17h0123456789abcdefE(ptr byval([4 x i8]) align 4 %p0, ptr byval([4088 x i8]) align 8 %p1)
; CHECK-NOT: define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_over
