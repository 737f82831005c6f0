; Only what a kernel reaches stays; host code (here: a function that calls
; the host allocator) disappears before anything is rejected.
; RUN: %oxide-opt -passes=select-reachable,reject-unsupported %s | FileCheck %s

declare ptr @__rust_alloc(i64, i64)

define internal void @device_helper(ptr %p) {
  store i32 1, ptr %p
  ret void
}
define void @host_main() {
  %m = call ptr @__rust_alloc(i64 4, i64 4)
  ret void
}
define ptx_kernel void @k(ptr %p) {
  call void @device_helper(ptr %p)
  ret void
}
; CHECK-NOT: host_main
; CHECK-NOT: __rust_alloc
; CHECK: define internal void @device_helper
; CHECK: define ptx_kernel void @k
