; A seq_cst read-modify-write is `fence.sc` at its scope followed by the
; acq_rel operation (LLVM's own seq_cst cmpxchg is fence.sc + acquire).
; Rust's `AtomicU32::swap(_, SeqCst)` has the system scope.
; RUN: %oxide-opt -passes=lower-atomics %s | FileCheck %s

define i32 @swap(ptr %p, i32 %v) {
  %old = atomicrmw xchg ptr %p, i32 %v seq_cst
  ret i32 %old
}
; CHECK-LABEL: define i32 @swap(
; CHECK: %[[R:.*]] = call i32 asm sideeffect "fence.sc.sys;\0A\09atom.acq_rel.sys.exch.b32 \09$0, [$1], $2;", "=r,l,r,~{memory}"
; CHECK-NEXT: ret i32 %[[R]]

define i64 @max(ptr %p, i64 %v) {
  %old = atomicrmw max ptr %p, i64 %v syncscope("block") seq_cst
  ret i64 %old
}
; CHECK-LABEL: define i64 @max(
; CHECK: call i64 asm sideeffect "fence.sc.cta;\0A\09atom.acq_rel.cta.max.s64 \09$0, [$1], $2;", "=l,l,l,~{memory}"
