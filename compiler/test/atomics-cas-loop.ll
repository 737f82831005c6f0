; A read-modify-write PTX has no `atom` for (nand, float min/max, 8- and
; 16-bit integers, inc/dec on 64-bit, …) becomes a compare-exchange loop: a
; relaxed atomic load at the scope, then cmpxchg with the operation's ordering
; and scope until it succeeds; the result is the value the operation saw. The
; backend gives cmpxchg its PTX semantics and scope.
; RUN: %oxide-opt -passes=lower-atomics %s | FileCheck %s

define float @fmin(ptr %p, float %f) {
  %old = atomicrmw fmin ptr %p, float %f syncscope("block") acquire
  ret float %old
}
; CHECK-LABEL: define float @fmin(
; CHECK:      %atomicrmw.init = load atomic i32, ptr %p syncscope("block") monotonic, align 4
; CHECK-NEXT: br label %atomicrmw.loop
; CHECK:      atomicrmw.loop:
; CHECK-NEXT: %atomicrmw.old = phi i32 [ %atomicrmw.init, %0 ], [ %atomicrmw.seen, %atomicrmw.loop ]
; CHECK-NEXT: %[[OLD:.*]] = bitcast i32 %atomicrmw.old to float
; CHECK-NEXT: %[[MIN:.*]] = call float @llvm.minnum.f32(float %[[OLD]], float %f)
; CHECK-NEXT: %[[NEW:.*]] = bitcast float %[[MIN]] to i32
; CHECK-NEXT: %[[X:.*]] = cmpxchg ptr %p, i32 %atomicrmw.old, i32 %[[NEW]] syncscope("block") acquire acquire, align 4
; CHECK-NEXT: %atomicrmw.seen = extractvalue { i32, i1 } %[[X]], 0
; CHECK-NEXT: %atomicrmw.ok = extractvalue { i32, i1 } %[[X]], 1
; CHECK-NEXT: br i1 %atomicrmw.ok, label %atomicrmw.end, label %atomicrmw.loop
; CHECK:      atomicrmw.end:
; CHECK-NEXT: ret float %[[OLD]]

; core's AtomicU64::fetch_nand(_, SeqCst): system scope.
define i64 @nand(ptr %p, i64 %v) {
  %old = atomicrmw nand ptr %p, i64 %v seq_cst
  ret i64 %old
}
; CHECK-LABEL: define i64 @nand(
; CHECK: load atomic i64, ptr %p monotonic
; CHECK: %[[A:.*]] = and i64 %atomicrmw.old, %v
; CHECK: %new = xor i64 %[[A]], -1
; CHECK: cmpxchg ptr %p, i64 %atomicrmw.old, i64 %new seq_cst seq_cst

define i8 @byte(ptr %p, i8 %v) {
  %old = atomicrmw add ptr %p, i8 %v syncscope("device") release
  ret i8 %old
}
; CHECK-LABEL: define i8 @byte(
; CHECK: load atomic i8, ptr %p syncscope("device") monotonic
; CHECK: cmpxchg ptr %p, i8 %atomicrmw.old, i8 %new syncscope("device") release monotonic

define i64 @inc64(ptr %p, i64 %limit) {
  %old = atomicrmw uinc_wrap ptr %p, i64 %limit syncscope("device") acq_rel
  ret i64 %old
}
; CHECK-LABEL: define i64 @inc64(
; CHECK: icmp uge i64 %atomicrmw.old, %limit
; CHECK: cmpxchg ptr %p, i64 %atomicrmw.old, i64 %new syncscope("device") acq_rel acquire

; A monotonic "device" nand is left to the backend (its own loop is right).
define i32 @relaxed_device(ptr %p, i32 %v) {
  %old = atomicrmw nand ptr %p, i32 %v syncscope("device") monotonic
  ret i32 %old
}
; CHECK-LABEL: define i32 @relaxed_device(
; CHECK-NEXT: atomicrmw nand ptr %p, i32 %v syncscope("device") monotonic
