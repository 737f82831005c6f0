; `#[kernel(launch_bounds(256, 2))]` leaves a marker call in the entry
; wrapper; its constants become the entry's .maxntid / .minnctapersm.
; RUN: %oxide-opt -passes=build-kernel-entries %s | FileCheck %s

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare void @__oxide_stub_launch_bounds(i32, i32)

define internal void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_launch_bounds(i32 256, i32 2)
  call void @__oxide_stub_param_layout(i32 0, i64 4, i64 4)
  ret void
}
@launch_site = global ptr @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE

; CHECK-NOT: call void @__oxide_stub_launch_bounds
; CHECK: define ptx_kernel void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr byval([4 x i8]) align 4 %p0) #[[A:[0-9]+]]
; CHECK: attributes #[[A]] = { "nvvm.maxntid"="256" "nvvm.minctasm"="2" }
