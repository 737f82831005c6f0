; `#[kernel]` passes each wrapper's instance name (`type_name` of the
; kernel's launch handle) to an `entry_identity` marker, which keeps two
; instances' host wrappers from folding into one address. On the device the
; marker is deleted, and with it the name's computation where nothing else
; uses it.
; RUN: %oxide-opt -passes=build-kernel-entries %s | FileCheck %s

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare void @__oxide_stub_entry_identity(ptr, i64)

@name = private unnamed_addr constant [8 x i8] c"k::tile1"

define internal { ptr, i64 } @type_name() {
  ret { ptr, i64 } { ptr @name, i64 8 }
}

define internal void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 4, i64 4)
  %instance = call { ptr, i64 } @type_name()
  %ptr = extractvalue { ptr, i64 } %instance, 0
  %len = extractvalue { ptr, i64 } %instance, 1
  call void @__oxide_stub_entry_identity(ptr %ptr, i64 %len)
  ret void
}
@launch_site = global ptr @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE

; CHECK-LABEL: define internal void @{{.*}}__oxide_kernel_entry_tile
; CHECK-NOT: __oxide_stub_entry_identity
; CHECK-NOT: extractvalue
; CHECK: ret void
; CHECK: define ptx_kernel void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr byval([4 x i8]) align 4 %p0)
