; `arch::compute_capability()` (the `target_sm` stub) is the target's compute
; capability, a constant, so O3 deletes the code behind a test of it that the
; target fails: a stub the target lacks (the sm_90 bulk prefetch) may sit
; there, as code does behind `#if __CUDA_ARCH__ >= 900` in CUDA C++; the
; other branch is what the older target runs. The query and the newer stub
; sit in functions of their own, as a debug build leaves them.
; RUN: %oxide-opt --arch sm_80 -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=FOLD80
; RUN: %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=FOLD90
; RUN: %oxide-opt --arch sm_90a -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=FOLD90
; RUN: %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=FEAT90
; RUN: %oxide-opt --arch sm_90a -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=FEAT90A
; RUN: %oxide-opt --arch sm_100a -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=FEAT100A
; RUN: %oxide-opt --ptx --arch sm_80 %s | FileCheck %s --check-prefix=PTX80
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX90

target triple = "nvptx64-nvidia-cuda"

declare i32 @__oxide_stub_target_sm()
declare i32 @__oxide_stub_target_features()
declare void @__oxide_stub_prefetch_l2(i64)
declare void @__oxide_stub_prefetch_l2_bulk(i64, i32)

; cuda_device::arch::compute_capability
define internal i32 @compute_capability() {
  %sm = call i32 @__oxide_stub_target_sm()
  ret i32 %sm
}

; cuda_device::cache::prefetch_l2_bulk
define internal void @prefetch_bulk(i64 %a, i32 %bytes) {
  call void @__oxide_stub_prefetch_l2_bulk(i64 %a, i32 %bytes)
  ret void
}

define ptx_kernel void @ahead(ptr %data) {
  %a = ptrtoint ptr %data to i64
  %sm = call i32 @compute_capability()
  %hopper = icmp uge i32 %sm, 90
  br i1 %hopper, label %bulk, label %lines
bulk:
  call void @prefetch_bulk(i64 %a, i32 4096)
  br label %done
lines:
  call void @__oxide_stub_prefetch_l2(i64 %a)
  br label %done
done:
  ret void
}
; FOLD80-LABEL: define internal i32 @compute_capability(
; FOLD80-NEXT: ret i32 80
; The call the target lacks waits for O3 in a placeholder that carries the
; error.
; FOLD80-LABEL: define internal void @prefetch_bulk(
; FOLD80-NEXT: call void @__oxide_unavailable.prefetch_l2_bulk(i64 %a, i32 %bytes), !oxide.unavailable
; FOLD80-LABEL: define i32 @features(
; FOLD80-NEXT: ret i32 0
; FOLD80: declare void @__oxide_unavailable.prefetch_l2_bulk(i64, i32) #[[U:[0-9]+]]
; FOLD80: attributes #[[U]] = { {{.*}}"oxide-unavailable"="`prefetch_l2_bulk` needs sm_90 or newer, but the kernels are being built for sm_80{{.*}}" }

; FOLD90-LABEL: define internal i32 @compute_capability(
; FOLD90-NEXT: ret i32 90
; FOLD90-LABEL: define internal void @prefetch_bulk(
; FOLD90-NEXT: call void asm sideeffect "{ .reg .pred p; .reg .u64 g; isspacep.global p, $0; @p cvta.to.global.u64 g, $0; @p cp.async.bulk.prefetch.L2.global [g], $1; }", "l,r"(i64 %a, i32 %bytes)
; FOLD90-NOT: __oxide_unavailable

; PTX80-LABEL: .entry ahead(
; PTX80-NOT: cp.async.bulk
; PTX80: prefetch.L2 [%rd{{[0-9]+}}];
; PTX80-NOT: cp.async.bulk
; PTX80: ret;

; PTX90-LABEL: .entry ahead(
; PTX90-NOT: prefetch.L2 [
; PTX90: isspacep.global
; PTX90: cp.async.bulk.prefetch.L2.global [g], %r{{[0-9]+}};
; PTX90-NOT: prefetch.L2 [
; PTX90: ret;

; cuda_device::arch::has: bit K is Targets.def's K-th feature (clusters,
; tma, setmaxnreg, wgmma, tcgen05).
define i32 @features() {
  %f = call i32 @__oxide_stub_target_features()
  ret i32 %f
}

; sm_90: clusters and tma; sm_90a: and setmaxnreg and wgmma; sm_100a:
; clusters, tma, setmaxnreg and tcgen05.
; FEAT90-LABEL: define i32 @features(
; FEAT90-NEXT: ret i32 3
; FEAT90A-LABEL: define i32 @features(
; FEAT90A-NEXT: ret i32 15
; FEAT100A-LABEL: define i32 @features(
; FEAT100A-NEXT: ret i32 23
