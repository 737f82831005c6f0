; LLVM 22's NVPTX backend emits every atomicrmw as a plain `atom.<op>`
; (.relaxed.gpu), dropping its ordering. LowerAtomics writes the ordering
; into the instruction: monotonic → .relaxed, acquire, release, acq_rel. A
; monotonic atomicrmw at "device" scope is what the backend emits anyway and
; stays an atomicrmw.
; RUN: %oxide-opt -passes=lower-atomics %s | FileCheck %s

define void @orderings(ptr %p, i32 %v) {
  %a = atomicrmw add ptr %p, i32 %v syncscope("device") monotonic
  %b = atomicrmw add ptr %p, i32 %v syncscope("device") acquire
  %c = atomicrmw add ptr %p, i32 %v syncscope("device") release
  %d = atomicrmw add ptr %p, i32 %v syncscope("device") acq_rel
  %e = atomicrmw add ptr %p, i32 %v syncscope("block") monotonic
  ret void
}
; CHECK-LABEL: define void @orderings(
; CHECK-NEXT: %a = atomicrmw add ptr %p, i32 %v syncscope("device") monotonic
; CHECK-NEXT: [[P1:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT: call i32 asm sideeffect "atom.acquire.gpu.add.u32 \09$0, [$1], $2;", "=r,l,r,~{memory}"(i64 [[P1]], i32 %v) #[[NOUNWIND:[0-9]+]]
; CHECK:      call i32 asm sideeffect "atom.release.gpu.add.u32 \09$0, [$1], $2;"
; CHECK:      call i32 asm sideeffect "atom.acq_rel.gpu.add.u32 \09$0, [$1], $2;"
; CHECK:      call i32 asm sideeffect "atom.relaxed.cta.add.u32 \09$0, [$1], $2;"
; CHECK-NOT:  atomicrmw
; CHECK:      attributes #[[NOUNWIND]] = { nounwind }
