; cuda_device::atomic's stubs become LLVM atomics: the operation, scope and
; ordering arguments (constants here, as after inlining) pick the instruction,
; its syncscope (0 block, 1 device, 2 system = none, 3 cluster) and ordering
; (0 relaxed, 1 release, 2 acquire, 3 acq_rel, 4 seq_cst). cas returns the
; old value; a load or store keeps its natural alignment.
; RUN: %oxide-opt -passes=lower-atomic-stubs,lower-intrinsic-stubs %s | FileCheck %s

declare i32 @__oxide_stub_atomic_rmw_u32(ptr, i32, i32, i32, i32)
declare i64 @__oxide_stub_atomic_rmw_u64(ptr, i64, i32, i32, i32)
declare float @__oxide_stub_atomic_rmw_f32(ptr, float, i32, i32, i32)
declare double @__oxide_stub_atomic_rmw_f64(ptr, double, i32, i32, i32)
declare i32 @__oxide_stub_atomic_cas_u32(ptr, i32, i32, i32, i32, i32)
declare i64 @__oxide_stub_atomic_load_u64(ptr, i32, i32)
declare void @__oxide_stub_atomic_store_u32(ptr, i32, i32, i32)

define void @user(ptr %p, i32 %v, i64 %w, float %f, double %d) {
  %add = call i32 @__oxide_stub_atomic_rmw_u32(ptr %p, i32 %v, i32 1, i32 0, i32 2)
  %smin = call i64 @__oxide_stub_atomic_rmw_u64(ptr %p, i64 %w, i32 8, i32 1, i32 0)
  %umax = call i32 @__oxide_stub_atomic_rmw_u32(ptr %p, i32 %v, i32 9, i32 2, i32 4)
  %inc = call i32 @__oxide_stub_atomic_rmw_u32(ptr %p, i32 %v, i32 17, i32 3, i32 3)
  %fadd = call float @__oxide_stub_atomic_rmw_f32(ptr %p, float %f, i32 11, i32 1, i32 1)
  %fmax = call double @__oxide_stub_atomic_rmw_f64(ptr %p, double %d, i32 13, i32 0, i32 0)
  %xchg = call float @__oxide_stub_atomic_rmw_f32(ptr %p, float %f, i32 0, i32 2, i32 2)
  %cas = call i32 @__oxide_stub_atomic_cas_u32(ptr %p, i32 %v, i32 %add, i32 1, i32 3, i32 2)
  %ld = call i64 @__oxide_stub_atomic_load_u64(ptr %p, i32 0, i32 2)
  call void @__oxide_stub_atomic_store_u32(ptr %p, i32 %cas, i32 2, i32 1)
  ret void
}
; CHECK-LABEL: define void @user(
; CHECK-NEXT: %1 = atomicrmw add ptr %p, i32 %v syncscope("block") acquire, align 4
; CHECK-NEXT: %2 = atomicrmw min ptr %p, i64 %w syncscope("device") monotonic, align 8
; CHECK-NEXT: %3 = atomicrmw umax ptr %p, i32 %v seq_cst, align 4
; CHECK-NEXT: %4 = atomicrmw uinc_wrap ptr %p, i32 %v syncscope("cluster") acq_rel, align 4
; CHECK-NEXT: %5 = atomicrmw fadd ptr %p, float %f syncscope("device") release, align 4
; CHECK-NEXT: %6 = atomicrmw fmax ptr %p, double %d syncscope("block") monotonic, align 8
; CHECK-NEXT: %7 = atomicrmw xchg ptr %p, float %f acquire, align 4
; CHECK-NEXT: %8 = cmpxchg ptr %p, i32 %v, i32 %1 syncscope("device") acq_rel acquire, align 4
; CHECK-NEXT: %9 = extractvalue { i32, i1 } %8, 0
; CHECK-NEXT: %10 = load atomic i64, ptr %p syncscope("block") acquire, align 8
; CHECK-NEXT: store atomic i32 %9, ptr %p release, align 4
; CHECK-NEXT: ret void
; The stubs are gone.
; CHECK-NOT: __oxide_stub_atomic
