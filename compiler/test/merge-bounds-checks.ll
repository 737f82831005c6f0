; Consecutive bounds checks of one index (each failing to a panic, nothing
; but pure code between) become one compare against the smallest length; the
; failing check is sorted out on the way to the panics, which get the same
; operands as before. The first compare may be a guard whose other side is a
; normal exit (`if let Some(out) = c.get_mut(i)`). Checks separated by memory
; access, of different indices, against a length that cannot be computed
; before the first, or whose panic needs a value computed between them stay
; as they are.
; RUN: %oxide-opt -passes=merge-bounds-checks %s | FileCheck %s

@loc = internal constant [24 x i8] zeroinitializer

define internal void @panic_bounds_check(i64, i64, ptr) #1 {
  unreachable
}

; Three checks, one shared panic block with phis (as O3 leaves them).
; CHECK-LABEL: define ptx_kernel void @three(
; CHECK: check.a:
; CHECK: %[[M1:.*]] = call i64 @llvm.umin.i64(i64 %la, i64 %lb)
; CHECK-NEXT: %[[OK1:.*]] = icmp ult i64 %i, %[[M1]]
; CHECK-NEXT: %[[M2:.*]] = call i64 @llvm.umin.i64(i64 %[[M1]], i64 %lc)
; CHECK-NEXT: %[[OK2:.*]] = icmp ult i64 %i, %[[M2]]
; CHECK-NEXT: br i1 %[[OK2]], label %check.b, label %[[W2:.*]]
; CHECK: check.b:
; CHECK: br label %check.c
; CHECK: check.c:
; CHECK: br label %body
; CHECK: [[W1:bounds.which]]:
; CHECK-NEXT: %[[LEN:.*]] = select i1 %ca, i64 %lb, i64 %la
; CHECK-NEXT: br label %panic
; CHECK: [[W2]]:
; CHECK-NEXT: br i1 %[[OK1]], label %panic, label %[[W1]]
; CHECK: panic:
; CHECK-NEXT: %len = phi i64 [ %[[LEN]], %[[W1]] ], [ %lc, %[[W2]] ]
define ptx_kernel void @three(ptr %a, i64 %la, i64 %lb, i64 %lc, i64 %i) {
entry:
  br label %check.a
check.a:
  %ca = icmp ult i64 %i, %la
  br i1 %ca, label %check.b, label %panic
check.b:
  %cb = icmp ult i64 %i, %lb
  br i1 %cb, label %check.c, label %panic
check.c:
  %off = shl i64 %i, 2
  %cc = icmp ult i64 %i, %lc
  br i1 %cc, label %body, label %panic
body:
  %p = getelementptr inbounds i8, ptr %a, i64 %off
  store float 1.0, ptr %p
  ret void
panic:
  %len = phi i64 [ %la, %check.a ], [ %lb, %check.b ], [ %lc, %check.c ]
  call void @panic_bounds_check(i64 %i, i64 %len, ptr @loc) #2
  unreachable
}

; CHECK-LABEL: define ptx_kernel void @kept(
; CHECK-NOT: umin
; CHECK: ret void
define ptx_kernel void @kept(ptr %a, i64 %la, i64 %lb, i64 %i, i64 %j) {
entry:
  %c1 = icmp ult i64 %i, %la
  br i1 %c1, label %b1, label %panic
b1:
  store float 1.0, ptr %a
  %c2 = icmp ult i64 %i, %lb
  br i1 %c2, label %b2, label %panic
b2:
  %c3 = icmp ult i64 %j, %lb
  br i1 %c3, label %b3, label %panic
b3:
  %lb2 = udiv i64 %lb, %j
  %c4 = icmp ult i64 %j, %lb2
  br i1 %c4, label %b4, label %panic
b4:
  %k = add i64 %j, 1
  %c5 = icmp ult i64 %k, %la
  br i1 %c5, label %b5, label %panic
b5:
  %twice = shl i64 %k, 1
  %c6 = icmp ult i64 %k, %lb
  br i1 %c6, label %b6, label %panic.twice
b6:
  ret void
panic:
  %n = phi i64 [ %i, %entry ], [ %i, %b1 ], [ %j, %b2 ], [ %j, %b3 ], [ %k, %b4 ]
  call void @panic_bounds_check(i64 %n, i64 %la, ptr @loc) #2
  unreachable
panic.twice:
  call void @panic_bounds_check(i64 %twice, i64 %lb, ptr @loc) #2
  unreachable
}

; vecadd after the checks of a[i] and b[i] merged: the guard `i < lc` (its
; other side returns), then `i < umin(la, lb)` computed on the way. One
; compare against umin(lc, umin(la, lb)) remains; a thread that fails it
; returns when it failed the guard and otherwise panics.
; CHECK-LABEL: define ptx_kernel i32 @guarded(
; CHECK: entry:
; CHECK-NEXT: %g = icmp ult i64 %i, %lc
; CHECK-NEXT: %m = call i64 @llvm.umin.i64(i64 %la, i64 %lb)
; CHECK-NEXT: %[[M:.*]] = call i64 @llvm.umin.i64(i64 %lc, i64 %m)
; CHECK-NEXT: %[[OK:.*]] = icmp ult i64 %i, %[[M]]
; CHECK-NEXT: br i1 %[[OK]], label %body, label %[[W:bounds.which]]
; CHECK: body:
; CHECK-NEXT: %off = shl i64 %i, 2
; CHECK: br label %work
; CHECK: exit:
; CHECK-NEXT: %r = phi i32 [ 0, %[[W]] ], [ 1, %work ]
; CHECK: [[W]]:
; CHECK-NEXT: br i1 %g, label %panic, label %exit
define ptx_kernel i32 @guarded(ptr %c, i64 %lc, i64 %la, i64 %lb, i64 %i) {
entry:
  %g = icmp ult i64 %i, %lc
  br i1 %g, label %body, label %exit
body:
  %off = shl i64 %i, 2
  %m = call i64 @llvm.umin.i64(i64 %la, i64 %lb)
  %ok = icmp ult i64 %i, %m
  br i1 %ok, label %work, label %panic
work:
  %p = getelementptr inbounds i8, ptr %c, i64 %off
  store float 1.0, ptr %p
  br label %exit
exit:
  %r = phi i32 [ 0, %entry ], [ 1, %work ]
  ret i32 %r
panic:
  call void @panic_bounds_check(i64 %i, i64 %m, ptr @loc) #2
  unreachable
}

; Two guards in a row are not merged: the second one's other side is not a
; panic, so a thread failing the merged compare could not tell where to go
; without the compares it was meant to save.
; CHECK-LABEL: define ptx_kernel void @two.guards(
; CHECK-NOT: umin
; CHECK: ret void
define ptx_kernel void @two.guards(ptr %c, i64 %lc, i64 %ld, i64 %i) {
entry:
  %g = icmp ult i64 %i, %lc
  br i1 %g, label %inner, label %exit
inner:
  %h = icmp ult i64 %i, %ld
  br i1 %h, label %work, label %exit
work:
  store float 1.0, ptr %c
  br label %exit
exit:
  ret void
}

attributes #1 = { noreturn "oxide-panic" }
attributes #2 = { noreturn }
