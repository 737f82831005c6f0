; A kernel that reaches the host allocator is a compile error naming the
; kernel and the call chain.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

declare ptr @__rust_alloc(i64, i64)

define internal void @_ZN4demo8make_vec17h0123456789abcdefE() {
  %m = call ptr @__rust_alloc(i64 4, i64 4)
  ret void
}
define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_fill17h0123456789abcdefE() {
  call void @_ZN4demo8make_vec17h0123456789abcdefE()
  ret void
}
; CHECK: error: `__rust_alloc` cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
; CHECK: = note: in kernel `demo::fill`
; CHECK: = note: call chain: `demo::make_vec` → `__rust_alloc`
; CHECK: error: oxide could not compile the kernels for the GPU (1 error)
