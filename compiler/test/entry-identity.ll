; `#[kernel]` passes each wrapper the address of `type_name::<instance>` (a
; function returning the instance's name) through an `entry_identity`
; marker, which keeps two instances' host wrappers from folding into one
; address. On the device the marker is deleted, leaving the function unused.
; RUN: %oxide-opt -passes=build-kernel-entries %s | FileCheck %s

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare void @__oxide_stub_entry_identity(ptr)

@name = private unnamed_addr constant [8 x i8] c"k::tile1"

define internal { ptr, i64 } @type_name() {
  ret { ptr, i64 } { ptr @name, i64 8 }
}

define internal void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 4, i64 4)
  call void @__oxide_stub_entry_identity(ptr @type_name)
  ret void
}
@launch_site = global ptr @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE

; CHECK-LABEL: define internal void @{{.*}}__oxide_kernel_entry_tile
; CHECK-NOT: __oxide_stub_entry_identity
; CHECK-NOT: type_name
; CHECK: ret void
; CHECK: define ptx_kernel void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr byval([4 x i8]) align 4 %p0)
