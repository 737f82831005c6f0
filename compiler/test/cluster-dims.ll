; `#[kernel(cluster_dims(2, 2, 1))]` leaves a marker call in the entry
; wrapper; its shape becomes the entry's `nvvm.cluster_dim` (PTX
; .explicitcluster and .reqnctapercluster), so the kernel runs in clusters
; of that shape however it is launched. A target without clusters, a shape
; that is not constant, has a 0, or holds more than 8 blocks is an error.
; RUN: %oxide-opt --arch sm_90 -passes=build-kernel-entries %s | FileCheck %s
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX
; RUN: not %oxide-opt --arch sm_80 -passes=build-kernel-entries %s 2>&1 >/dev/null | FileCheck %s --check-prefix=SM80
; RUN: sed 's/i32 2, i32 2, i32 1/i32 4, i32 4, i32 1/' %s | not %oxide-opt --arch sm_90 -passes=build-kernel-entries - 2>&1 >/dev/null | FileCheck %s --check-prefix=LARGE
; RUN: sed 's/i32 2, i32 2, i32 1/i32 2, i32 0, i32 1/' %s | not %oxide-opt --arch sm_90 -passes=build-kernel-entries - 2>&1 >/dev/null | FileCheck %s --check-prefix=LARGE

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare void @__oxide_stub_cluster_dims(i32, i32, i32)

define internal void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_cluster_dims(i32 2, i32 2, i32 1)
  call void @__oxide_stub_param_layout(i32 0, i64 4, i64 4)
  ret void
}
@launch_site = global ptr @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE

; CHECK-NOT: call void @__oxide_stub_cluster_dims
; CHECK: define ptx_kernel void @_ZN1k25__oxide_kernel_entry_tile17h0123456789abcdefE(ptr byval([4 x i8]) align 4 %p0) #[[A:[0-9]+]]
; CHECK: attributes #[[A]] = { "nvvm.cluster_dim"="2,2,1" }
; PTX: .explicitcluster
; PTX-NEXT: .reqnctapercluster 2, 2, 1
; SM80: error: kernel `k::tile` has cluster_dims, but the kernels are being built for sm_80, which has no thread-block clusters
; SM80: = note: clusters need sm_90, {{.*}}; build with `--arch sm_90`
; LARGE: error: cluster_dims of kernel `k::tile` must be constants of at least 1 with at most 8 blocks in all
