; A kernel listed in `oxide.kernels` with its flags gets its unchecked
; version as a second entry, `<name>_unchecked`, and the condition under
; which the host may launch it as a postfix program (docs/ABI.md §3) on its
; entry; the kernel itself keeps every check and no in-kernel condition.
; RUN: %oxide-opt -passes=version-bounds-checks %s | FileCheck %s

declare void @panic_bounds_check(i64, i64, ptr) #1
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
@loc = internal constant [24 x i8] zeroinitializer

; vecadd: `if i < c.len { c[i] = a[i] }`. One bound alone is enough for an
; entry of its own (the host pays for the condition, not the GPU):
; c.len <= a.len, read from bytes 8..16 of parameters 1 and 0.
; CHECK-LABEL: define ptx_kernel void @copy(
; CHECK-NOT: launch.
; CHECK: call void @panic_bounds_check
; CHECK: }
define ptx_kernel void @copy(ptr readonly byval([16 x i8]) %p.a, ptr readonly byval([16 x i8]) %p.c) {
entry:
  %a = load ptr, ptr %p.a
  %a.len.p = getelementptr inbounds i8, ptr %p.a, i64 8
  %a.len = load i64, ptr %a.len.p
  %c = load ptr, ptr %p.c
  %c.len.p = getelementptr inbounds i8, ptr %p.c, i64 8
  %c.len = load i64, ptr %c.len.p
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tx to i64
  %guard = icmp ult i64 %i, %c.len
  br i1 %guard, label %check, label %done
check:
  %ok = icmp ult i64 %i, %a.len
  br i1 %ok, label %body, label %panic
body:
  %src = getelementptr inbounds float, ptr %a, i64 %i
  %v = load float, ptr %src
  %dst = getelementptr inbounds float, ptr %c, i64 %i
  store float %v, ptr %dst
  br label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %a.len, ptr @loc)
  unreachable
}

; The same guard as a debug build writes it: `i >= c.len || c == null`,
; the body on the false edge.
define ptx_kernel void @copy.debug(ptr readonly byval([16 x i8]) %p.a, ptr readonly byval([16 x i8]) %p.c) {
entry:
  %a = load ptr, ptr %p.a
  %a.len.p = getelementptr inbounds i8, ptr %p.a, i64 8
  %a.len = load i64, ptr %a.len.p
  %c = load ptr, ptr %p.c
  %c.len.p = getelementptr inbounds i8, ptr %p.c, i64 8
  %c.len = load i64, ptr %c.len.p
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tx to i64
  %past = icmp uge i64 %i, %c.len
  %null = icmp eq ptr %c, null
  %skip = select i1 %past, i1 true, i1 %null
  br i1 %skip, label %done, label %check
check:
  %ok = icmp ult i64 %i, %a.len
  br i1 %ok, label %body, label %panic
body:
  %src = getelementptr inbounds float, ptr %a, i64 %i
  %v = load float, ptr %src
  %dst = getelementptr inbounds float, ptr %c, i64 %i
  store float %v, ptr %dst
  br label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %a.len, ptr @loc)
  unreachable
}

; The tile: `rows * cols <= len` (the exact product) over a scalar
; parameter's bytes and a length; in the unchecked entry the load is
; unconditional under the tile test.
define ptx_kernel void @tile(ptr readonly byval([8 x i8]) %p.rows, ptr readonly byval([8 x i8]) %p.cols, ptr readonly byval([16 x i8]) %p.in, ptr %out) {
entry:
  %rows = load i64, ptr %p.rows
  %cols = load i64, ptr %p.cols
  %in = load ptr, ptr %p.in
  %len.p = getelementptr inbounds i8, ptr %p.in, i64 8
  %len = load i64, ptr %len.p
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %col = zext i32 %tx to i64
  %row = zext i32 %ty to i64
  %r.ok = icmp ult i64 %row, %rows
  %c.ok = icmp ult i64 %col, %cols
  %in.tile = and i1 %r.ok, %c.ok
  br i1 %in.tile, label %check, label %done
check:
  %rk = mul i64 %row, %cols
  %i = add i64 %rk, %col
  %ok = icmp ult i64 %i, %len
  br i1 %ok, label %load, label %panic
load:
  %p = getelementptr inbounds float, ptr %in, i64 %i
  %v = load float, ptr %p
  store float %v, ptr %out
  br label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %len, ptr @loc)
  unreachable
}

; The user's `o < out.len()` after `input[o]`: implied by the tile's shape
; (`rows * cols <= out.len`), not by the other buffer's length, which a
; user would not think of sizing `out` by.
define ptx_kernel void @tile.out(ptr readonly byval([8 x i8]) %p.rows, ptr readonly byval([8 x i8]) %p.cols, ptr readonly byval([16 x i8]) %p.in, ptr readonly byval([16 x i8]) %p.out) {
entry:
  %rows = load i64, ptr %p.rows
  %cols = load i64, ptr %p.cols
  %in = load ptr, ptr %p.in
  %len.p = getelementptr inbounds i8, ptr %p.in, i64 8
  %len = load i64, ptr %len.p
  %out = load ptr, ptr %p.out
  %out.len.p = getelementptr inbounds i8, ptr %p.out, i64 8
  %out.len = load i64, ptr %out.len.p
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %col = zext i32 %tx to i64
  %row = zext i32 %ty to i64
  %r.ok = icmp ult i64 %row, %rows
  %c.ok = icmp ult i64 %col, %cols
  %in.tile = and i1 %r.ok, %c.ok
  br i1 %in.tile, label %check, label %done
check:
  %rk = mul i64 %row, %cols
  %i = add i64 %rk, %col
  %ok = icmp ult i64 %i, %len
  br i1 %ok, label %load, label %panic
load:
  %p = getelementptr inbounds float, ptr %in, i64 %i
  %v = load float, ptr %p
  %fits = icmp ult i64 %i, %out.len
  br i1 %fits, label %store, label %done
store:
  %q = getelementptr inbounds float, ptr %out, i64 %i
  store float %v, ptr %q
  br label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %len, ptr @loc)
  unreachable
}

; A bound the host cannot compute (a division) leaves the kernel alone: no
; entry, no program, and for one bound alone no in-kernel copy either.
; CHECK-LABEL: define ptx_kernel void @divided(
; CHECK-NOT: launch.
; CHECK: }
; CHECK-NOT: define ptx_kernel void @divided_unchecked
define ptx_kernel void @divided(ptr readonly byval([16 x i8]) %p.a, ptr readonly byval([8 x i8]) %p.n) {
entry:
  %a = load ptr, ptr %p.a
  %a.len.p = getelementptr inbounds i8, ptr %p.a, i64 8
  %a.len = load i64, ptr %a.len.p
  %n = load i64, ptr %p.n
  %half = udiv i64 %n, 2
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tx to i64
  %guard = icmp ult i64 %i, %half
  br i1 %guard, label %check, label %done
check:
  %ok = icmp ult i64 %i, %a.len
  br i1 %ok, label %body, label %panic
body:
  %src = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %src
  br label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %a.len, ptr @loc)
  unreachable
}

; A bound from the block size and a truncated, shifted parameter: each
; operation has its token (the host gives up where the IR would wrap).
define ptx_kernel void @sized(ptr readonly byval([16 x i8]) %p.a, ptr readonly byval([8 x i8]) %p.n) {
entry:
  %a = load ptr, ptr %p.a
  %a.len.p = getelementptr inbounds i8, ptr %p.a, i64 8
  %a.len = load i64, ptr %a.len.p
  %n = load i64, ptr %p.n
  %n32 = trunc i64 %n to i32
  %quarter = lshr i32 %n32, 2
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %lim32 = call i32 @llvm.umin.i32(i32 %quarter, i32 %ntid)
  %lim = zext i32 %lim32 to i64
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tx to i64
  %guard = icmp ult i64 %i, %lim
  br i1 %guard, label %check, label %done
check:
  %ok = icmp ult i64 %i, %a.len
  br i1 %ok, label %body, label %panic
body:
  %src = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %src
  br label %done
done:
  ret void
panic:
  call void @panic_bounds_check(i64 %i, i64 %a.len, ptr @loc)
  unreachable
}

declare i32 @llvm.umin.i32(i32, i32)

; CHECK-LABEL: define ptx_kernel void @copy_unchecked(
; CHECK: br i1 %guard, label %check, label %done
; CHECK-NOT: panic_bounds_check
; CHECK: }
; CHECK-LABEL: define ptx_kernel void @copy.debug_unchecked(
; CHECK: br i1 %skip, label %done, label %check
; CHECK-NOT: panic_bounds_check
; CHECK: }
; CHECK-LABEL: define ptx_kernel void @tile_unchecked(
; CHECK: br i1 %in.tile, label %check, label %done
; CHECK-NOT: panic_bounds_check
; CHECK: }
; CHECK-LABEL: define ptx_kernel void @sized_unchecked(
; CHECK-NOT: panic_bounds_check
; CHECK: }

; CHECK: !oxide.kernels = !{![[COPY:[0-9]+]], ![[DEBUG:[0-9]+]], ![[TILE:[0-9]+]], ![[TILEOUT:[0-9]+]], ![[DIV:[0-9]+]], ![[SIZED:[0-9]+]], ![[OLD:[0-9]+]]}
; CHECK-DAG: ![[COPY]] = !{ptr @copy, !"copy.host", i64 2, i64 1, ptr @copy_unchecked, !"p1@8:8 p0@8:8 ule"}
; CHECK-DAG: ![[DEBUG]] = !{ptr @copy.debug, !"debug.host", i64 2, i64 1, ptr @copy.debug_unchecked, !"p1@8:8 p0@8:8 ule"}
; CHECK-DAG: ![[TILE]] = !{ptr @tile, !"tile.host", i64 4, i64 3, ptr @tile_unchecked, !"p0@0:8 p1@0:8 mulx p2@8:8 ule"}
; CHECK-DAG: ![[TILEOUT]] = !{ptr @tile.out, !"tile.out.host", i64 4, i64 3, ptr @tile.out_unchecked, !"p0@0:8 p1@0:8 mulx p2@8:8 ule p0@0:8 p1@0:8 mulx p3@8:8 ule and"}
; CHECK-DAG: ![[DIV]] = !{ptr @divided, !"divided.host", i64 2, i64 1}
; CHECK-DAG: ![[SIZED]] = !{ptr @sized, !"sized.host", i64 2, i64 1, ptr @sized_unchecked, !"p1@0:8 trunc32 2 lshr32 ntid.x umin p0@8:8 ule"}
; An entry without flags (RecordKernelDimensions has not run) is left alone.
; CHECK-DAG: ![[OLD]] = !{ptr @old, !"old.host", i64 1}
define ptx_kernel void @old(i64 %x) {
  ret void
}

!oxide.kernels = !{!0, !5, !1, !6, !2, !3, !4}
!6 = !{ptr @tile.out, !"tile.out.host", i64 4, i64 3}
!0 = !{ptr @copy, !"copy.host", i64 2, i64 1}
!5 = !{ptr @copy.debug, !"debug.host", i64 2, i64 1}
!1 = !{ptr @tile, !"tile.host", i64 4, i64 3}
!2 = !{ptr @divided, !"divided.host", i64 2, i64 1}
!3 = !{ptr @sized, !"sized.host", i64 2, i64 1}
!4 = !{ptr @old, !"old.host", i64 1}

attributes #1 = { noreturn "oxide-panic" }
