; The PTX scope of an atomicrmw comes from its syncscope: "block" and
; "singlethread" → .cta, "cluster" → .cluster (sm_90; .gpu before, which has
; no clusters), "device" → .gpu, the system scope (what rustc gives
; core::sync::atomic) → .sys. A relaxed system-scope add is rewritten too:
; the backend would make it .gpu.
; RUN: %oxide-opt --arch sm_90 -passes=lower-atomics %s | FileCheck %s --check-prefixes=CHECK,SM90
; RUN: %oxide-opt --arch sm_80 -passes=lower-atomics %s | FileCheck %s --check-prefixes=CHECK,SM80

define void @scopes(ptr %p, i32 %v) {
  %a = atomicrmw or ptr %p, i32 %v syncscope("block") acquire
  %b = atomicrmw or ptr %p, i32 %v syncscope("singlethread") acquire
  %c = atomicrmw or ptr %p, i32 %v syncscope("cluster") acquire
  %d = atomicrmw or ptr %p, i32 %v syncscope("device") acquire
  %e = atomicrmw or ptr %p, i32 %v acquire
  %f = atomicrmw add ptr %p, i32 %v monotonic
  ret void
}
; CHECK-LABEL: define void @scopes(
; CHECK:  "atom.acquire.cta.or.b32
; CHECK:  "atom.acquire.cta.or.b32
; SM90:   "atom.acquire.cluster.or.b32
; SM80:   "atom.acquire.gpu.or.b32
; CHECK:  "atom.acquire.gpu.or.b32
; CHECK:  "atom.acquire.sys.or.b32
; CHECK:  "atom.relaxed.sys.add.u32
