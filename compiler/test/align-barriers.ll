; A block barrier becomes the aligned `bar.sync 0` only where every thread of
; the block provably reaches that same call: no branch on a thread-varying
; value (tid, lane, loads that may differ, a bounds check on a thread index,
; an early return, a loop whose trip count depends on the thread) controls it.
; Block-wide values (ctaid, ntid, kernel parameters, read-only loads at a
; uniform address) keep control uniform, through loops.
; RUN: %oxide-opt -passes=align-barriers %s | FileCheck %s

@loc = internal constant [24 x i8] zeroinitializer

declare void @llvm.nvvm.barrier.cta.sync.all(i32) #0
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()

define internal void @panic_bounds_check(i64, i64, ptr) #1 {
  unreachable
}

; Straight line, and a loop whose bound is a parameter read by every thread
; alike: aligned.
; CHECK-LABEL: define ptx_kernel void @uniform(
; CHECK: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
; CHECK: loop:
; CHECK: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
; CHECK: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
define ptx_kernel void @uniform(ptr readonly byval([8 x i8]) %p0) {
entry:
  %n = load i64, ptr %p0
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %b64 = zext i32 %b to i64
  %m = call i64 @llvm.umin.i64(i64 %n, i64 %b64)
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  %k1 = add i64 %k, 32
  %more = icmp ult i64 %k1, %m
  br i1 %more, label %loop, label %done
done:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
}

; rustc's JumpThreading copied the barrier into both sides of a branch on
; the thread index: each copy stays non-aligned; so does the one after the
; join of a value chosen by that branch.
; CHECK-LABEL: define ptx_kernel void @copied(
; CHECK: call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
; CHECK: call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
; CHECK: join:
; CHECK: call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
define ptx_kernel void @copied(ptr readonly byval([8 x i8]) %p0) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %lo = icmp ult i32 %t, 16
  br i1 %lo, label %a, label %b
a:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  br label %join
b:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  br label %join
join:
  %x = phi i32 [ 1, %a ], [ 2, %b ]
  %c = icmp eq i32 %x, 1
  br i1 %c, label %again, label %out
again:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  br label %out
out:
  ret void
}

; A bounds check on a thread index before the barrier (a thread that panics
; never reaches it), an early return, and a loop the thread index bounds.
; CHECK-LABEL: define ptx_kernel void @divergent(
; CHECK-NOT: aligned
; CHECK: ret void
define ptx_kernel void @divergent(ptr readonly byval([8 x i8]) %p0) {
entry:
  %len = load i64, ptr %p0
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %t to i64
  %ok = icmp ult i64 %i, %len
  br i1 %ok, label %checked, label %panic
checked:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  %early = icmp eq i64 %i, 5
  br i1 %early, label %out, label %loop
loop:
  %k = phi i64 [ 0, %checked ], [ %k1, %loop ]
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  %k1 = add i64 %k, 1
  %more = icmp ult i64 %k1, %i
  br i1 %more, label %loop, label %after
after:
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  br label %out
out:
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %len, ptr @loc) #2
  unreachable
}

; Functions other than kernels are left alone (their callers are unknown).
; CHECK-LABEL: define void @helper(
; CHECK: call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
define void @helper() {
  call void @llvm.nvvm.barrier.cta.sync.all(i32 0)
  ret void
}

declare i64 @llvm.umin.i64(i64, i64)

attributes #0 = { convergent nounwind }
attributes #1 = { noreturn "oxide-panic" }
attributes #2 = { noreturn }
