; Before O3 the scope and ordering of a stub call are parameters of
; cuda_device's wrapper, not constants: the call becomes a switch with one
; atomic per value, which O3 folds once the wrapper is inlined. A value outside
; the encoding means the strongest (system scope, seq_cst); an unknown
; operation traps. Orderings a load, store or failure cannot have are weakened
; (the Rust API panics before reaching them).
; RUN: %oxide-opt -passes=lower-atomic-stubs %s | FileCheck %s

declare i32 @__oxide_stub_atomic_rmw_u32(ptr, i32, i32, i32, i32)
declare i32 @__oxide_stub_atomic_load_u32(ptr, i32, i32)
declare void @__oxide_stub_atomic_store_u32(ptr, i32, i32, i32)
declare i32 @__oxide_stub_atomic_cas_u32(ptr, i32, i32, i32, i32, i32)

; CHECK-LABEL: define i32 @fetch_add(
; CHECK: switch i32 %scope, label %[[SYS:.*]] [
; CHECK-NEXT: i32 0, label %[[BLOCK:.*]]
; CHECK-NEXT: i32 1, label %[[DEV:.*]]
; CHECK-NEXT: i32 2, label %[[SYS]]
; CHECK-NEXT: i32 3, label %[[CLUSTER:.*]]
; CHECK: [[BLOCK]]:
; CHECK-NEXT: switch i32 %order, label %[[BLOCK_SC:.*]] [
; CHECK-NEXT: i32 0, label %[[BLOCK_RLX:.*]]
; CHECK: i32 4, label %[[BLOCK_SC]]
; CHECK: [[BLOCK_RLX]]:
; CHECK-NEXT: atomicrmw add ptr %p, i32 %v syncscope("block") monotonic
; CHECK: atomicrmw add ptr %p, i32 %v syncscope("block") release
; CHECK: atomicrmw add ptr %p, i32 %v syncscope("block") acquire
; CHECK: atomicrmw add ptr %p, i32 %v syncscope("block") acq_rel
; CHECK: [[BLOCK_SC]]:
; CHECK-NEXT: atomicrmw add ptr %p, i32 %v syncscope("block") seq_cst
; CHECK: atomicrmw add ptr %p, i32 %v syncscope("device") monotonic
; CHECK: atomicrmw add ptr %p, i32 %v seq_cst
; CHECK: atomicrmw add ptr %p, i32 %v syncscope("cluster") seq_cst
; CHECK: atomic.join:
; CHECK-NEXT: %[[R:.*]] = phi i32
; CHECK-NEXT: ret i32 %[[R]]
define i32 @fetch_add(ptr %p, i32 %v, i32 %scope, i32 %order) {
  %r = call i32 @__oxide_stub_atomic_rmw_u32(ptr %p, i32 %v, i32 1, i32 %scope, i32 %order)
  ret i32 %r
}

; CHECK-LABEL: define i32 @out_of_range(
; CHECK-NEXT: atomicrmw xor ptr %p, i32 %v seq_cst
; CHECK-NEXT: call void @llvm.trap()
; CHECK-NEXT: ret i32 poison
define i32 @out_of_range(ptr %p, i32 %v) {
  %a = call i32 @__oxide_stub_atomic_rmw_u32(ptr %p, i32 %v, i32 6, i32 9, i32 7)
  %b = call i32 @__oxide_stub_atomic_rmw_u32(ptr %p, i32 %v, i32 99, i32 1, i32 0)
  ret i32 %b
}

; A non-constant operation: one case per operation, the default traps.
; CHECK-LABEL: define i32 @any_op(
; CHECK: switch i32 %op, label %[[BAD:.*]] [
; CHECK: [[BAD]]:
; CHECK-NEXT: call void @llvm.trap()
; CHECK-NEXT: unreachable
define i32 @any_op(ptr %p, i32 %v, i32 %op) {
  %r = call i32 @__oxide_stub_atomic_rmw_u32(ptr %p, i32 %v, i32 %op, i32 1, i32 0)
  ret i32 %r
}

; CHECK-LABEL: define void @weakened(
; CHECK: load atomic i32, ptr %p syncscope("device") monotonic
; CHECK: load atomic i32, ptr %p syncscope("device") monotonic
; CHECK: load atomic i32, ptr %p syncscope("device") acquire
; CHECK: load atomic i32, ptr %p syncscope("device") acquire
; CHECK: load atomic i32, ptr %p syncscope("device") seq_cst
; CHECK: store atomic i32 %v, ptr %p syncscope("block") monotonic
; CHECK-NEXT: store atomic i32 %v, ptr %p syncscope("block") release
; CHECK-NEXT: cmpxchg ptr %p, i32 0, i32 %v release monotonic
; CHECK: cmpxchg ptr %p, i32 0, i32 %v release acquire
define void @weakened(ptr %p, i32 %v, i32 %order) {
  %l = call i32 @__oxide_stub_atomic_load_u32(ptr %p, i32 1, i32 %order)
  call void @__oxide_stub_atomic_store_u32(ptr %p, i32 %v, i32 0, i32 2)
  call void @__oxide_stub_atomic_store_u32(ptr %p, i32 %v, i32 0, i32 3)
  %c = call i32 @__oxide_stub_atomic_cas_u32(ptr %p, i32 0, i32 %v, i32 2, i32 1, i32 1)
  %d = call i32 @__oxide_stub_atomic_cas_u32(ptr %p, i32 0, i32 %v, i32 2, i32 1, i32 3)
  ret void
}
