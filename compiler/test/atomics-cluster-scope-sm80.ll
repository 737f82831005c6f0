; Before sm_90 there are no clusters and the backend rejects the "cluster"
; syncscope on the atomics it lowers itself (loads, stores, cmpxchg, fences):
; LowerAtomics makes it "device" (cuda_device::atomic::Scope::Cluster is the
; whole GPU there). On sm_90 it stays. Which targets have clusters is
; Targets.def's `clusters` feature: sm_89 has none, the family target
; sm_100f has them.
; RUN: %oxide-opt --arch sm_80 -passes=lower-atomics %s | FileCheck %s --check-prefix=SM80
; RUN: %oxide-opt --arch sm_89 -passes=lower-atomics %s | FileCheck %s --check-prefix=SM80
; RUN: %oxide-opt --arch sm_90 -passes=lower-atomics %s | FileCheck %s --check-prefix=SM90
; RUN: %oxide-opt --arch sm_100f -passes=lower-atomics %s | FileCheck %s --check-prefix=SM90

define i32 @cluster(ptr %p, i32 %v) {
  %l = load atomic i32, ptr %p syncscope("cluster") acquire, align 4
  store atomic i32 %v, ptr %p syncscope("cluster") release, align 4
  %x = cmpxchg ptr %p, i32 %l, i32 %v syncscope("cluster") acq_rel acquire
  fence syncscope("cluster") seq_cst
  ret i32 %l
}
; SM80: load atomic i32, ptr %p syncscope("device") acquire
; SM80: store atomic i32 %v, ptr %p syncscope("device") release
; SM80: cmpxchg ptr %p, i32 %l, i32 %v syncscope("device") acq_rel acquire
; SM80: fence syncscope("device") seq_cst
; SM80-NOT: cluster
; SM90: load atomic i32, ptr %p syncscope("cluster") acquire
; SM90: store atomic i32 %v, ptr %p syncscope("cluster") release
; SM90: cmpxchg ptr %p, i32 %l, i32 %v syncscope("cluster") acq_rel acquire
; SM90: fence syncscope("cluster") seq_cst
