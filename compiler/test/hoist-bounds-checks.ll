; Bounds checks inside the `if`s that guard read-only loads leave them and
; merge into one branch ahead of the loads, when a thread would otherwise wait
; for a load inside its `if` (the loaded value is converted there); the
; failing check is sorted out on the way to the panics, in program order.
; A load whose value only flows into a phi, a write between two checks, an
; index computed from a loaded value and a check that divides stay as they are.
; RUN: %oxide-opt -passes=hoist-bounds-checks %s | FileCheck %s

@loc = internal constant [24 x i8] zeroinitializer

define internal void @panic_bounds_check(i64, i64, ptr) #1 {
  unreachable
}

; Two guarded loads, each widened in its `if`, one shared panic block.
; CHECK-LABEL: define ptx_kernel void @tile(
; CHECK: guard0:
; CHECK-NEXT: %ok0 = icmp ult i64 %i0, %len
; CHECK-NEXT: %[[BAD0:.*]] = xor i1 %ok0, true
; CHECK-NEXT: %[[FAIL0:.*]] = select i1 %in0, i1 %[[BAD0]], i1 false
; CHECK-NEXT: %ok1 = icmp ult i64 %i1, %len
; CHECK-NEXT: %[[BAD1:.*]] = xor i1 %ok1, true
; CHECK-NEXT: %[[FAIL1:.*]] = select i1 %in1, i1 %[[BAD1]], i1 false
; CHECK-NEXT: %[[ANY:.*]] = select i1 %[[FAIL0]], i1 true, i1 %[[FAIL1]]
; CHECK-NEXT: br i1 %[[ANY]], label %[[WHICH:bounds.which]], label %guard0.checked
; CHECK: guard0.checked:
; CHECK-NEXT: br i1 %in0, label %check0, label %join0
; CHECK: check0:
; CHECK-NEXT: br label %load0
; CHECK: join0.checked:
; CHECK-NEXT: br i1 %in1, label %check1, label %join1
; CHECK: check1:
; CHECK-NEXT: br label %load1
; CHECK: [[WHICH]]:
; CHECK-NEXT: br i1 %[[FAIL0]], label %[[FIRST:bounds.first]], label %[[SECOND:bounds.second]]
; CHECK: [[FIRST]]:
; CHECK-NEXT: br label %panic
; CHECK: [[SECOND]]:
; CHECK-NEXT: br label %panic
; CHECK: panic:
; CHECK-NEXT: %idx = phi i64 [ %i0, %[[FIRST]] ], [ %i1, %[[SECOND]] ]
define ptx_kernel void @tile(ptr %a, i64 %len, i64 %i0, i64 %i1, i1 %in0, i1 %in1, ptr addrspace(3) %s) {
guard0:
  br i1 %in0, label %check0, label %join0
check0:
  %ok0 = icmp ult i64 %i0, %len
  br i1 %ok0, label %load0, label %panic
load0:
  %p0 = getelementptr inbounds i16, ptr %a, i64 %i0
  %x0 = load i16, ptr %p0, align 2, !invariant.load !0
  %w0 = zext i16 %x0 to i32
  br label %join0
join0:
  %v0 = phi i32 [ %w0, %load0 ], [ 0, %guard0 ]
  br i1 %in1, label %check1, label %join1
check1:
  %ok1 = icmp ult i64 %i1, %len
  br i1 %ok1, label %load1, label %panic
load1:
  %p1 = getelementptr inbounds i16, ptr %a, i64 %i1
  %x1 = load i16, ptr %p1, align 2, !invariant.load !0
  %w1 = zext i16 %x1 to i32
  br label %join1
join1:
  %v1 = phi i32 [ %w1, %load1 ], [ 0, %join0 ]
  store i32 %v0, ptr addrspace(3) %s
  %s1 = getelementptr i32, ptr addrspace(3) %s, i64 1
  store i32 %v1, ptr addrspace(3) %s1
  ret void
panic:
  %idx = phi i64 [ %i0, %check0 ], [ %i1, %check1 ]
  call void @panic_bounds_check(i64 %idx, i64 %len, ptr @loc) #2
  unreachable
}

; The loaded value only reaches a phi: nobody waits in the `if`.
; CHECK-LABEL: define ptx_kernel void @no_wait(
; CHECK-NOT: bounds.
; CHECK: check0:
; CHECK-NEXT: %ok0 = icmp ult i64 %i0, %len
; CHECK-NEXT: br i1 %ok0, label %load0, label %panic
define ptx_kernel void @no_wait(ptr %a, i64 %len, i64 %i0, i1 %in0, ptr addrspace(3) %s) {
guard0:
  br i1 %in0, label %check0, label %join0
check0:
  %ok0 = icmp ult i64 %i0, %len
  br i1 %ok0, label %load0, label %panic
load0:
  %p0 = getelementptr inbounds float, ptr %a, i64 %i0
  %x0 = load float, ptr %p0, align 4, !invariant.load !0
  br label %join0
join0:
  %v0 = phi float [ %x0, %load0 ], [ 0.0, %guard0 ]
  store float %v0, ptr addrspace(3) %s
  ret void
panic:
  call void @panic_bounds_check(i64 %i0, i64 %len, ptr @loc) #2
  unreachable
}

; A global store between the two loads: each check leaves its `if`, but the
; second may not move above the store.
; CHECK-LABEL: define ptx_kernel void @store_between(
; CHECK-NOT: bounds.any
; CHECK: guard0:
; CHECK: br i1 %bounds.fail, label %panic, label %guard0.checked
; CHECK: join0:
; CHECK: store float
; CHECK: br i1 %bounds.fail{{[0-9]+}}, label %panic, label %join0.checked
define ptx_kernel void @store_between(ptr %a, i64 %len, i64 %i0, i64 %i1, i1 %in0, i1 %in1, ptr %out) {
guard0:
  br i1 %in0, label %check0, label %join0
check0:
  %ok0 = icmp ult i64 %i0, %len
  br i1 %ok0, label %load0, label %panic
load0:
  %p0 = getelementptr inbounds float, ptr %a, i64 %i0
  %x0 = load float, ptr %p0, align 4, !invariant.load !0
  %y0 = fmul float %x0, 2.0
  br label %join0
join0:
  %v0 = phi float [ %y0, %load0 ], [ 0.0, %guard0 ]
  store float %v0, ptr %out
  br i1 %in1, label %check1, label %join1
check1:
  %ok1 = icmp ult i64 %i1, %len
  br i1 %ok1, label %load1, label %panic
load1:
  %p1 = getelementptr inbounds float, ptr %a, i64 %i1
  %x1 = load float, ptr %p1, align 4, !invariant.load !0
  %y1 = fmul float %x1, 2.0
  br label %join1
join1:
  %v1 = phi float [ %y1, %load1 ], [ 0.0, %join0 ]
  %o1 = getelementptr float, ptr %out, i64 1
  store float %v1, ptr %o1
  ret void
panic:
  %idx = phi i64 [ %i0, %check0 ], [ %i1, %check1 ]
  call void @panic_bounds_check(i64 %idx, i64 %len, ptr @loc) #2
  unreachable
}

; The second index is read from memory by the first load: it cannot be
; known before the first load, so the checks stay apart.
; CHECK-LABEL: define ptx_kernel void @dependent_index(
; CHECK-NOT: bounds.any
; CHECK: ret void
define ptx_kernel void @dependent_index(ptr %a, ptr %b, i64 %len, i64 %i0, i1 %in0, i1 %in1, ptr addrspace(3) %s) {
guard0:
  br i1 %in0, label %check0, label %join0
check0:
  %ok0 = icmp ult i64 %i0, %len
  br i1 %ok0, label %load0, label %panic
load0:
  %p0 = getelementptr inbounds i32, ptr %a, i64 %i0
  %x0 = load i32, ptr %p0, align 4, !invariant.load !0
  %j = zext i32 %x0 to i64
  br label %join0
join0:
  %i1 = phi i64 [ %j, %load0 ], [ 0, %guard0 ]
  br i1 %in1, label %check1, label %join1
check1:
  %ok1 = icmp ult i64 %i1, %len
  br i1 %ok1, label %load1, label %panic
load1:
  %p1 = getelementptr inbounds i16, ptr %b, i64 %i1
  %x1 = load i16, ptr %p1, align 2, !invariant.load !0
  %w1 = zext i16 %x1 to i32
  br label %join1
join1:
  %v1 = phi i32 [ %w1, %load1 ], [ 0, %join0 ]
  store i32 %v1, ptr addrspace(3) %s
  ret void
panic:
  %idx = phi i64 [ %i0, %check0 ], [ %i1, %check1 ]
  call void @panic_bounds_check(i64 %idx, i64 %len, ptr @loc) #2
  unreachable
}

; A division in the check block could fault where the guard is false: it is
; not run ahead of the guard.
; CHECK-LABEL: define ptx_kernel void @divides(
; CHECK-NOT: bounds.
; CHECK: check0:
; CHECK-NEXT: %q = udiv i64 %i0, %d
define ptx_kernel void @divides(ptr %a, i64 %len, i64 %i0, i64 %d, i1 %in0, ptr addrspace(3) %s) {
guard0:
  br i1 %in0, label %check0, label %join0
check0:
  %q = udiv i64 %i0, %d
  %ok0 = icmp ult i64 %q, %len
  br i1 %ok0, label %load0, label %panic
load0:
  %p0 = getelementptr inbounds i16, ptr %a, i64 %q
  %x0 = load i16, ptr %p0, align 2, !invariant.load !0
  %w0 = zext i16 %x0 to i32
  br label %join0
join0:
  %v0 = phi i32 [ %w0, %load0 ], [ 0, %guard0 ]
  store i32 %v0, ptr addrspace(3) %s
  ret void
panic:
  call void @panic_bounds_check(i64 %q, i64 %len, ptr @loc) #2
  unreachable
}

attributes #1 = { noreturn "oxide-panic" }
attributes #2 = { noreturn }
!0 = !{}
