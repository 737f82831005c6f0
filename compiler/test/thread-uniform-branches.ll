; ThreadUniformBranches: a block that re-tests a condition uniform across
; the block of threads, which its predecessor already decided, is copied
; into that predecessor, going straight on. A tile's `full` re-tested
; around every vector of an unrolled load becomes one test: the fast path
; one straight run of loads, the careful path another. A condition that
; differs between threads (from the thread index) is left as it was, as is
; a block with a barrier. Values of a copied block used further on get
; phis where its paths meet.
; RUN: %oxide-opt --arch sm_90 -oxide-thread-uniform-branches -passes=thread-uniform-branches %s | FileCheck %s
; Off unless asked for:
; RUN: %oxide-opt --arch sm_90 -passes=thread-uniform-branches %s | FileCheck %s --check-prefix=OFF
; OFF-LABEL: define ptx_kernel void @tile(
; OFF: br i1 %full
; OFF: br i1 %full
; OFF: br i1 %full

target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32) convergent

; Three vectors of a tile; %full from the kernel's parameters (uniform).
define ptx_kernel void @tile(ptr %in, ptr %out, i64 %start, i64 %len) {
entry:
  %end = add i64 %start, 3
  %full = icmp ule i64 %end, %len
  br i1 %full, label %fast0, label %careful0
fast0:
  %p0 = getelementptr i32, ptr %in, i64 %start
  %a0 = load i32, ptr %p0, align 4
  br label %join0
careful0:
  br label %join0
join0:
  %v0 = phi i32 [ %a0, %fast0 ], [ 0, %careful0 ]
  %i1 = add i64 %start, 1
  br i1 %full, label %fast1, label %careful1
fast1:
  %p1 = getelementptr i32, ptr %in, i64 %i1
  %a1 = load i32, ptr %p1, align 4
  br label %join1
careful1:
  %ok1 = icmp ult i64 %i1, %len
  br i1 %ok1, label %some1, label %join1
some1:
  %q1 = getelementptr i32, ptr %in, i64 %i1
  %b1 = load i32, ptr %q1, align 4
  br label %join1
join1:
  %v1 = phi i32 [ %a1, %fast1 ], [ 0, %careful1 ], [ %b1, %some1 ]
  %i2 = add i64 %start, 2
  %s01 = add i32 %v0, %v1
  br i1 %full, label %fast2, label %careful2
fast2:
  %p2 = getelementptr i32, ptr %in, i64 %i2
  %a2 = load i32, ptr %p2, align 4
  br label %join2
careful2:
  br label %join2
join2:
  %v2 = phi i32 [ %a2, %fast2 ], [ 0, %careful2 ]
  %sum = add i32 %s01, %v2
  %twice = shl i64 %i2, 1
  %o = getelementptr i32, ptr %out, i64 %twice
  store i32 %sum, ptr %o, align 4
  ret void
}
; One test of %full; the fast path loads the three vectors in one block.
; CHECK-LABEL: define ptx_kernel void @tile(
; CHECK: br i1 %full{{(.not)?}}, label
; CHECK-NOT: br i1 %full
; CHECK: fast0:
; CHECK-NEXT: getelementptr
; CHECK-NEXT: load i32
; CHECK-NOT: br
; CHECK: load i32
; CHECK-NOT: br
; CHECK: load i32
; CHECK-NEXT: br label %join2
; CHECK-NOT: br i1 %full
; The value the copies computed on both paths meets in a phi.
; CHECK: join2:
; CHECK: phi i64
; CHECK: ret void

; The same with a condition of the thread index: untouched.
define ptx_kernel void @per_thread(ptr %in, ptr %out, i64 %len) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %tid = zext i32 %t to i64
  %in.range = icmp ult i64 %tid, %len
  br i1 %in.range, label %load0, label %join0
load0:
  %p0 = getelementptr i32, ptr %in, i64 %tid
  %a0 = load i32, ptr %p0, align 4
  br label %join0
join0:
  %v0 = phi i32 [ %a0, %load0 ], [ 0, %entry ]
  %i1 = add i64 %tid, 32
  br i1 %in.range, label %load1, label %join1
load1:
  %p1 = getelementptr i32, ptr %in, i64 %i1
  %a1 = load i32, ptr %p1, align 4
  br label %join1
join1:
  %v1 = phi i32 [ %a1, %load1 ], [ 0, %join0 ]
  %sum = add i32 %v0, %v1
  %o = getelementptr i32, ptr %out, i64 %tid
  store i32 %sum, ptr %o, align 4
  ret void
}
; CHECK-LABEL: define ptx_kernel void @per_thread(
; CHECK: br i1 %in.range
; CHECK: br i1 %in.range
; CHECK: ret void

; A barrier between the tests: the block holding it is not copied.
define ptx_kernel void @with_barrier(ptr %in, ptr %out, i1 %flag) {
entry:
  br i1 %flag, label %a, label %b
a:
  store i32 1, ptr %out, align 4
  br label %join
b:
  store i32 2, ptr %out, align 4
  br label %join
join:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  br i1 %flag, label %c, label %d
c:
  store i32 3, ptr %in, align 4
  ret void
d:
  store i32 4, ptr %in, align 4
  ret void
}
; CHECK-LABEL: define ptx_kernel void @with_barrier(
; CHECK: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
; CHECK-NOT: call void @llvm.nvvm.barrier
; CHECK: br i1 %flag
; CHECK: ret void
