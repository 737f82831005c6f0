; A bounds check implied by the kernel's own tests and a condition on kernel
; parameters alone (`row < rows && col < cols` and `rows * cols <= len`
; imply `row * cols + col < len`; rows and cols below 2^32 keep the product
; exact) is `true` in a second body, which the entry block picks when the
; condition holds; the first body keeps every check.
; RUN: %oxide-opt -passes=version-bounds-checks %s | FileCheck %s

declare void @panic_bounds_check(i64, i64, ptr) #1
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)
@loc = internal constant [24 x i8] zeroinitializer

; The tile read: the precondition is computed at the end of the entry block
; (the length load is copied there from the block that reads it); the copy
; has no panic, the original keeps it.
; CHECK-LABEL: define ptx_kernel void @tile(
; CHECK: entry:
; CHECK: %len.launch = load i64, ptr %len.p
; CHECK-NEXT: %[[OR:.*]] = or i64 %rows, %cols
; CHECK-NEXT: %[[HIGH:.*]] = lshr i64 %[[OR]], 32
; CHECK-NEXT: %launch.narrow = icmp eq i64 %[[HIGH]], 0
; CHECK-NEXT: %[[M:.*]] = trunc i64 %rows to i32
; CHECK-NEXT: %[[K:.*]] = trunc i64 %cols to i32
; CHECK-NEXT: %[[MW:.*]] = zext i32 %[[M]] to i64
; CHECK-NEXT: %[[KW:.*]] = zext i32 %[[K]] to i64
; CHECK-NEXT: %launch.area = mul nuw nsw i64 %[[MW]], %[[KW]]
; CHECK-NEXT: %launch.fits = icmp ule i64 %launch.area, %len.launch
; CHECK-NEXT: %launch.checked = and i1 %launch.narrow, %launch.fits
; CHECK-NEXT: br i1 %launch.checked, label %body.unchecked, label %body
; CHECK: check:
; CHECK: br i1 %ok, label %load, label %panic
; CHECK: panic:
; CHECK-NEXT: call void @panic_bounds_check
; CHECK: check.unchecked:
; CHECK-NOT: panic
; CHECK: br label %load.unchecked
; CHECK-NOT: panic_bounds_check
; CHECK: }
define ptx_kernel void @tile(ptr readonly byval([8 x i8]) %p.rows, ptr readonly byval([8 x i8]) %p.cols, ptr readonly byval([16 x i8]) %p.in, ptr %out) {
entry:
  %rows = load i64, ptr %p.rows
  %cols = load i64, ptr %p.cols
  %in = load ptr, ptr %p.in
  %len.p = getelementptr inbounds i8, ptr %p.in, i64 8
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %col = zext i32 %tx to i64
  %row = zext i32 %ty to i64
  %r.ok = icmp ult i64 %row, %rows
  %c.ok = icmp ult i64 %col, %cols
  %in.tile = and i1 %r.ok, %c.ok
  br i1 %in.tile, label %check, label %join
check:
  %len = load i64, ptr %len.p
  %rk = mul i64 %row, %cols
  %i = add i64 %rk, %col
  %ok = icmp ult i64 %i, %len
  br i1 %ok, label %load, label %panic
load:
  %p = getelementptr inbounds float, ptr %in, i64 %i
  %v = load float, ptr %p
  br label %join
join:
  %x = phi float [ %v, %load ], [ 0.0, %entry ]
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  store float %x, ptr %out
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %len, ptr @loc)
  unreachable
}

; The user's own test, in the same `and` as the tests that imply it
; (`row < m && col < n && row * n + col < len`), is dropped from the copy's
; condition; its siblings stay.
; CHECK-LABEL: define ptx_kernel void @sibling(
; CHECK: %launch.area = mul nuw nsw i64
; CHECK: body:
; CHECK: %all = and i1 %both, %o.ok
; CHECK-NEXT: br i1 %all, label %store, label %done
; CHECK: body.unchecked:
; CHECK: %both.unchecked = and i1 %r.ok.unchecked, %c.ok.unchecked
; CHECK-NEXT: %all.unchecked = and i1 %both.unchecked, true
; CHECK-NEXT: br i1 %all.unchecked, label %store.unchecked, label %done.unchecked
define ptx_kernel void @sibling(i64 %m, i64 %n, ptr %out, i64 %len) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %col = zext i32 %tx to i64
  %row = zext i32 %ty to i64
  %rn = mul i64 %row, %n
  %o = add i64 %rn, %col
  br label %body
body:
  %r.ok = icmp ult i64 %row, %m
  %c.ok = icmp ult i64 %col, %n
  %o.ok = icmp ult i64 %o, %len
  %both = and i1 %r.ok, %c.ok
  %all = and i1 %both, %o.ok
  br i1 %all, label %store, label %done
store:
  %p = getelementptr inbounds float, ptr %out, i64 %o
  store float 1.0, ptr %p
  br label %done
done:
  ret void
}

; `select A, B, false` (a logical and whose B may be poison where A fails):
; A's facts may remove B, not the other way round.
; CHECK-LABEL: define ptx_kernel void @select.and(
; CHECK: body.unchecked:
; CHECK: %all.unchecked = select i1 %both.unchecked, i1 true, i1 false
; CHECK-LABEL: define ptx_kernel void @select.reversed(
; CHECK-NOT: launch.checked
; CHECK: ret void
define ptx_kernel void @select.and(i64 %m, i64 %n, ptr %out, i64 %len) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %col = zext i32 %tx to i64
  %row = zext i32 %ty to i64
  br label %body
body:
  %r.ok = icmp ult i64 %row, %m
  %c.ok = icmp ult i64 %col, %n
  %both = and i1 %r.ok, %c.ok
  %rn = mul i64 %row, %n
  %o = add i64 %rn, %col
  %o.ok = icmp ult i64 %o, %len
  %all = select i1 %both, i1 %o.ok, i1 false
  br i1 %all, label %store, label %done
store:
  store float 1.0, ptr %out
  br label %done
done:
  ret void
}

define ptx_kernel void @select.reversed(i64 %m, i64 %n, ptr %out, i64 %len) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %col = zext i32 %tx to i64
  %row = zext i32 %ty to i64
  %r.ok = icmp ult i64 %row, %m
  %c.ok = icmp ult i64 %col, %n
  %both = and i1 %r.ok, %c.ok
  %rn = mul i64 %row, %n
  %o = add i64 %rn, %col
  %o.ok = icmp ult i64 %o, %len
  %all = select i1 %o.ok, i1 %both, i1 false
  br i1 %all, label %store, label %done
store:
  store float 1.0, ptr %out
  br label %done
done:
  ret void
}

; Not copied: two conjuncts that would each be removed on the other's word
; (`i < a && i < b`, one bound each: and a one-bound check alone is
; MergeBoundsChecks' business); a bound that differs between threads; a
; column tested against another bound than the row's multiplier.
; CHECK-LABEL: define ptx_kernel void @kept(
; CHECK-NOT: launch.checked
; CHECK: ret void
define ptx_kernel void @kept(i64 %a, i64 %b, i64 %m, i64 %n, i64 %k, ptr %out) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %i = zext i32 %tx to i64
  %row = zext i32 %ty to i64
  %ia = icmp ult i64 %i, %a
  %ib = icmp ult i64 %i, %b
  %iab = and i1 %ia, %ib
  br i1 %iab, label %by.thread, label %done
by.thread:
  %t = add i64 %i, 1
  %r.t = icmp ult i64 %row, %t
  %c.n = icmp ult i64 %i, %n
  %rc = and i1 %r.t, %c.n
  %rn = mul i64 %row, %n
  %o1 = add i64 %rn, %i
  %o1.ok = icmp ult i64 %o1, %k
  %c1 = and i1 %rc, %o1.ok
  br i1 %c1, label %other, label %done
other:
  %r.m = icmp ult i64 %row, %m
  %c.k = icmp ult i64 %i, %k
  %rck = and i1 %r.m, %c.k
  %o2 = add i64 %rn, %i
  %o2.ok = icmp ult i64 %o2, %a
  %c2 = and i1 %rck, %o2.ok
  br i1 %c2, label %store, label %done
store:
  store float 1.0, ptr %out
  br label %done
done:
  ret void
}

attributes #1 = { noreturn "oxide-panic" }
