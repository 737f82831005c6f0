; Stores to shared memory move below the later bounds checks (branches whose
; other side only panics) and read-only (!invariant.load) loads, so a tile's
; global loads are issued before its shared stores. A conditional store is
; re-emitted under a flag of whether its block ran; stores keep their order.
; Anything else (plain loads, calls, global stores, loops, a diverging
; function that is not one of oxide's panics) stops or prevents the move, and
; a store that would pass no bounds check stays.
; RUN: %oxide-opt -passes=defer-shared-stores %s | FileCheck %s

@tile = internal addrspace(3) global [64 x float] undef, align 4
@loc = internal constant [24 x i8] zeroinitializer

define internal void @panic_bounds_check(i64, i64, ptr) #1 {
  unreachable
}

define internal void @user_abort(i64, i64, ptr) #3 {
  unreachable
}

declare void @llvm.nvvm.barrier.cta.sync.all(i32) #4

; Two guarded tile elements (transpose): both loads, then both stores.
; CHECK-LABEL: define ptx_kernel void @guarded(
; CHECK: load0:
; CHECK-NEXT: getelementptr
; CHECK-NEXT: %v0 = load float
; CHECK-NEXT: br label %next0
; CHECK: next0:
; CHECK-DAG: %[[A0:.*]] = phi ptr addrspace(3) [ @tile, %load0 ], [ poison, %entry ]
; CHECK-DAG: %[[V0:.*]] = phi float [ %v0, %load0 ], [ poison, %entry ]
; CHECK-DAG: %[[R0:.*]] = phi i1 [ true, %load0 ], [ false, %entry ]
; CHECK: load1:
; CHECK: %v1 = load float
; CHECK-NOT: store
; CHECK: next1:
; CHECK-DAG: %[[A1:.*]] = phi ptr [ %s1, %load1 ], [ poison, %next0 ]
; CHECK-DAG: %[[V1:.*]] = phi float [ %v1, %load1 ], [ poison, %next0 ]
; CHECK-DAG: %[[R1:.*]] = phi i1 [ true, %load1 ], [ false, %next0 ]
; CHECK: br i1 %[[R0]], label %[[S0:.*]], label %[[J0:.*]]
; CHECK: [[S0]]:
; CHECK-NEXT: store float %[[V0]], ptr addrspace(3) %[[A0]], align 4
; CHECK: [[J0]]:
; CHECK-NEXT: br i1 %[[R1]], label %[[S1:.*]], label %[[J1:.*]]
; CHECK: [[S1]]:
; CHECK-NEXT: store float %[[V1]], ptr %[[A1]], align 4
; CHECK: [[J1]]:
; CHECK-NEXT: call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
define ptx_kernel void @guarded(ptr %in, i64 %len, i64 %i0, i64 %i1, i1 %c0, i1 %c1) {
entry:
  br i1 %c0, label %check0, label %next0
check0:
  %ok0 = icmp ult i64 %i0, %len
  br i1 %ok0, label %load0, label %panic
load0:
  %p0 = getelementptr inbounds float, ptr %in, i64 %i0
  %v0 = load float, ptr %p0, align 4, !invariant.load !0
  store float %v0, ptr addrspace(3) @tile, align 4
  br label %next0
next0:
  br i1 %c1, label %check1, label %next1
check1:
  %ok1 = icmp ult i64 %i1, %len
  br i1 %ok1, label %load1, label %panic
load1:
  %p1 = getelementptr inbounds float, ptr %in, i64 %i1
  %v1 = load float, ptr %p1, align 4, !invariant.load !0
  %s1 = getelementptr inbounds float, ptr addrspacecast (ptr addrspace(3) @tile to ptr), i64 1
  store float %v1, ptr %s1, align 4
  br label %next1
next1:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
panic:
  %idx = phi i64 [ %i0, %check0 ], [ %i1, %check1 ]
  call void @panic_bounds_check(i64 %idx, i64 %len, ptr @loc) #2
  unreachable
}

; Unconditional stores (sgemm: `if ok { a[i] } else { 0.0 }`): moved as they
; are, in order, below the next step's check and load (without the noalias
; scopes of where they were).
; CHECK-LABEL: define ptx_kernel void @selected(
; CHECK: step0:
; CHECK-NEXT: %a = phi float
; CHECK-NEXT: br i1 %c1, label %check1, label %step1
; CHECK: step1:
; CHECK-NEXT: %b = phi float
; CHECK-NEXT: store float %a, ptr addrspace(3) @tile, align 4{{$}}
; CHECK-NEXT: store float %b, ptr addrspace(3) getelementptr
; CHECK-NEXT: call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
define ptx_kernel void @selected(ptr %in, i64 %len, i64 %i0, i64 %i1, i1 %c0, i1 %c1) {
entry:
  br i1 %c0, label %check0, label %step0
check0:
  %ok0 = icmp ult i64 %i0, %len
  br i1 %ok0, label %load0, label %panic
load0:
  %p0 = getelementptr inbounds float, ptr %in, i64 %i0
  %v0 = load float, ptr %p0, align 4, !invariant.load !0
  br label %step0
step0:
  %a = phi float [ %v0, %load0 ], [ 0.0, %entry ]
  store float %a, ptr addrspace(3) @tile, align 4, !noalias !1
  br i1 %c1, label %check1, label %step1
check1:
  %ok1 = icmp ult i64 %i1, %len
  br i1 %ok1, label %load1, label %panic
load1:
  %p1 = getelementptr inbounds float, ptr %in, i64 %i1
  %v1 = load float, ptr %p1, align 4, !invariant.load !0
  br label %step1
step1:
  %b = phi float [ %v1, %load1 ], [ 0.0, %step0 ]
  store float %b, ptr addrspace(3) getelementptr (float, ptr addrspace(3) @tile, i64 1), align 4
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
panic:
  %idx = phi i64 [ %i0, %check0 ], [ %i1, %check1 ]
  call void @panic_bounds_check(i64 %idx, i64 %len, ptr @loc) #2
  unreachable
}

; Nothing moves: a plain load (it may read what a store wrote: here the
; slice is not read-only), a global store, a diverging function that is not
; one of oxide's panics, a panic given a pointer that is not a constant.
; CHECK-LABEL: define ptx_kernel void @kept(
; CHECK: store float %x, ptr addrspace(3) @tile
; CHECK-NEXT: %pa = getelementptr
; CHECK-NEXT: %plain = load float
; CHECK: store float %x, ptr %out
; CHECK-NEXT: %ok1 = icmp
; CHECK-NEXT: br i1 %ok1, label %b2, label %abort
; CHECK: b2:
; CHECK-NEXT: %v2 = load
; CHECK-NEXT: store float %x, ptr addrspace(3) getelementptr
; CHECK-NEXT: %ok2 = icmp
; CHECK: b3:
; CHECK-NEXT: %v3 = load
; CHECK-NEXT: store float %plain, ptr addrspace(3) getelementptr
; CHECK-NEXT: %ok3 = icmp
define ptx_kernel void @kept(ptr %in, ptr %out, i64 %len, i64 %i, float %x) {
entry:
  store float %x, ptr addrspace(3) @tile, align 4
  %pa = getelementptr inbounds float, ptr %in, i64 %i
  %plain = load float, ptr %pa, align 4
  %ok0 = icmp ult i64 %i, %len
  br i1 %ok0, label %b1, label %panic
b1:
  store float %x, ptr %out, align 4
  %ok1 = icmp ult i64 %i, 7
  br i1 %ok1, label %b2, label %abort
b2:
  %v2 = load float, ptr %in, align 4, !invariant.load !0
  store float %x, ptr addrspace(3) getelementptr (float, ptr addrspace(3) @tile, i64 1), align 4
  %ok2 = icmp ult i64 %i, 9
  br i1 %ok2, label %b3, label %abort
b3:
  %v3 = load float, ptr %in, align 4, !invariant.load !0
  store float %plain, ptr addrspace(3) getelementptr (float, ptr addrspace(3) @tile, i64 2), align 4
  %ok3 = icmp ult i64 %i, 11
  br i1 %ok3, label %b4, label %panic.ptr
b4:
  %v4 = load float, ptr %in, align 4, !invariant.load !0
  %s = fadd float %v2, %v3
  %t = fadd float %s, %v4
  store float %t, ptr %out, align 4
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %len, ptr @loc) #2
  unreachable
abort:
  call void @user_abort(i64 %i, i64 %len, ptr @loc) #2
  unreachable
panic.ptr:
  call void @panic_bounds_check(i64 %i, i64 %len, ptr %out) #2
  unreachable
}

; A store must reach its new place before it runs again: not around a loop.
; CHECK-LABEL: define ptx_kernel void @looped(
; CHECK: body:
; CHECK-NEXT: %k = phi
; CHECK-NEXT: store float %x, ptr addrspace(3) @tile
define ptx_kernel void @looped(ptr %in, i64 %len, float %x) {
entry:
  br label %body
body:
  %k = phi i64 [ 0, %entry ], [ %k1, %next ]
  store float %x, ptr addrspace(3) @tile, align 4
  %ok = icmp ult i64 %k, %len
  br i1 %ok, label %next, label %panic
next:
  %p = getelementptr inbounds float, ptr %in, i64 %k
  %v = load float, ptr %p, align 4, !invariant.load !0
  %k1 = add i64 %k, 1
  %more = fcmp olt float %v, 1.0
  br i1 %more, label %body, label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %k, i64 %len, ptr @loc) #2
  unreachable
}

; The new place would be reached again (a loop around the barrier) without
; passing the store's block or the block that decides it: the store could be
; emitted twice, so it stays.
; CHECK-LABEL: define ptx_kernel void @revisited(
; CHECK: home:
; CHECK-NEXT: %v = load float
; CHECK-NEXT: store float %v, ptr addrspace(3) @tile
define ptx_kernel void @revisited(ptr %in, i1 %c, i64 %n, i64 %len) {
entry:
  br i1 %c, label %home, label %again
home:
  %v = load float, ptr %in, align 4, !invariant.load !0
  store float %v, ptr addrspace(3) @tile, align 4
  %ok = icmp ult i64 %n, %len
  br i1 %ok, label %checked, label %panic
checked:
  %w = load float, ptr %in, align 4, !invariant.load !0
  br label %again
again:
  %k = phi i64 [ 0, %entry ], [ 0, %checked ], [ %k1, %again ]
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  %k1 = add i64 %k, 1
  %more = icmp ult i64 %k1, %n
  br i1 %more, label %again, label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %n, i64 %len, ptr @loc) #2
  unreachable
}

; Without a bounds check in the way a store that would need a flag stays,
; though loads follow: ptxas predicates the `if`s and issues the loads first
; by itself (a kernel's unchecked entry looks like this).
; CHECK-LABEL: define ptx_kernel void @unchecked(
; CHECK: step0:
; CHECK: %v0 = load float
; CHECK-NEXT: store float %v0, ptr addrspace(3) @tile
; CHECK-NEXT: br label %next
; CHECK: step1:
; CHECK: %v1 = load float
; CHECK-NEXT: store float %v1, ptr addrspace(3) getelementptr
define ptx_kernel void @unchecked(ptr %in, i64 %i0, i64 %i1, i1 %c0, i1 %c1) {
entry:
  br i1 %c0, label %step0, label %next
step0:
  %p0 = getelementptr inbounds float, ptr %in, i64 %i0
  %v0 = load float, ptr %p0, align 4, !invariant.load !0
  store float %v0, ptr addrspace(3) @tile, align 4
  br label %next
next:
  br i1 %c1, label %step1, label %done
step1:
  %p1 = getelementptr inbounds float, ptr %in, i64 %i1
  %v1 = load float, ptr %p1, align 4, !invariant.load !0
  store float %v1, ptr addrspace(3) getelementptr (float, ptr addrspace(3) @tile, i64 1), align 4
  br label %done
done:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
}

; An unconditional store needs no flag and moves below the next load
; without a check in between.
; CHECK-LABEL: define ptx_kernel void @unconditional(
; CHECK: %v1 = load float
; CHECK-NEXT: store float %v0, ptr addrspace(3) @tile
; CHECK-NEXT: call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
define ptx_kernel void @unconditional(ptr %in) {
entry:
  %v0 = load float, ptr %in, align 4, !invariant.load !0
  store float %v0, ptr addrspace(3) @tile, align 4
  %p1 = getelementptr inbounds float, ptr %in, i64 1
  %v1 = load float, ptr %p1, align 4, !invariant.load !0
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
}

attributes #1 = { noreturn "oxide-panic" }
attributes #2 = { noreturn }
attributes #3 = { noreturn }
attributes #4 = { convergent nounwind }
!0 = !{}
!1 = !{!2}
!2 = distinct !{!2, !3}
!3 = distinct !{!3}
