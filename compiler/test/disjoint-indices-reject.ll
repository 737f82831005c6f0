; A row length (or rows per plane) that is not provably one value for the
; whole launch is an error naming the kernel, the get_mut call (from its
; Location constant) and what is in the way: threads passing different row
; lengths could compute the same index.
; RUN: not %oxide-opt -passes=lower-disjoint-indices %s 2>&1 >/dev/null | FileCheck %s

declare i64 @__oxide_stub_disjoint_index_2d(i64, i64, ptr) #0
declare i64 @__oxide_stub_disjoint_index_3d(i64, i64, i64, ptr) #0
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i64 @row_from_somewhere()

@file = private unnamed_addr constant [12 x i8] c"src/main.rs\00"
; src/main.rs:20:5 and src/main.rs:24:9
@loc20 = private unnamed_addr constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\14\00\00\00\05\00\00\00" }>, align 8
@loc24 = private unnamed_addr constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\18\00\00\00\09\00\00\00" }>, align 8

; index_2d(threadIdx_x() + 1)
define ptx_kernel void @thread_row(i64 %i) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t1 = add i32 %t, 1
  %w = zext i32 %t1 to i64
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr @loc20)
  ret void
}
; CHECK: error: kernel `h_thread_row` hands DisjointSlice::get_mut an index from thread::index_2d whose row length is not the same in every thread of the launch: it depends on the thread's own coordinates (threadIdx, blockIdx, lane) or the clock
; CHECK-NEXT: --> src/main.rs:20:5
; CHECK: = note: threads that pass different row lengths can compute the same index

; index_2d(input[0]): global memory, which another thread may change.
define ptx_kernel void @memory_row(ptr %input, i64 %i) {
  %w = load i64, ptr %input
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr @loc20)
  ret void
}
; CHECK: error: kernel `h_memory_row` {{.*}} whose row length is not the same in every thread of the launch: it is read from memory

; Two launch-wide values, one per get_mut.
define ptx_kernel void @two_rows(i64 %a, i64 %b, i64 %i) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %a, ptr @loc20)
  %n = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %b, ptr @loc24)
  ret void
}
; CHECK: error: kernel `h_two_rows` hands DisjointSlice::get_mut thread indices with different row lengths (src/main.rs:20:5 and src/main.rs:24:9): two threads could compute the same index and get the same element
; CHECK-NEXT: --> src/main.rs:24:9

; if threadIdx.x is even { index_2d(a) } else { index_2d(b) }
define ptx_kernel void @chosen_per_thread(i64 %a, i64 %b, i64 %i) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %odd = trunc i32 %t to i1
  br i1 %odd, label %y, label %x
x:
  br label %join
y:
  br label %join
join:
  %w = phi i64 [ %a, %x ], [ %b, %y ]
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr @loc20)
  ret void
}
; CHECK: error: kernel `h_chosen_per_thread` {{.*}}: it differs between the paths that reach it

; A helper called with two different row lengths.
define internal void @store_row(i64 %i, i64 %row) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %row, ptr @loc20)
  ret void
}
define ptx_kernel void @helper_rows(i64 %a, i64 %i) {
  call void @store_row(i64 %i, i64 %a)
  call void @store_row(i64 %i, i64 64)
  ret void
}
; CHECK: error: kernel `h_helper_rows` {{.*}}: the calls of `store_row` pass it different values

; A helper whose address is taken: its callers are not all known.
define internal void @store_row_by_pointer(i64 %i, i64 %row) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %row, ptr @loc20)
  ret void
}
@table = internal constant [1 x ptr] [ptr @store_row_by_pointer]
define ptx_kernel void @pointer_rows(i64 %a, i64 %i) {
  call void @store_row_by_pointer(i64 %i, i64 %a)
  ret void
}
; CHECK: error: kernel `h_pointer_rows` {{.*}}: it is an argument of `store_row_by_pointer`, which is also called through a pointer

; A row length returned by a call.
define ptx_kernel void @call_row(i64 %i) {
  %w = call i64 @row_from_somewhere()
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr @loc20)
  ret void
}
; CHECK: error: kernel `h_call_row` {{.*}}: it is returned by a function call

; 3-D: one row length, two numbers of rows per plane.
define ptx_kernel void @planes(i64 %w, i64 %h, i64 %i) {
  %m = call i64 @__oxide_stub_disjoint_index_3d(i64 %i, i64 %w, i64 %h, ptr @loc20)
  %n = call i64 @__oxide_stub_disjoint_index_3d(i64 %i, i64 %w, i64 8, ptr @loc24)
  ret void
}
; CHECK: error: kernel `h_planes` hands DisjointSlice::get_mut thread indices with different numbers of rows per plane (src/main.rs:20:5 and src/main.rs:24:9)

; 2-D and 3-D indices of different row lengths collide too.
define ptx_kernel void @mixed(i64 %w, i64 %i) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr @loc20)
  %n = call i64 @__oxide_stub_disjoint_index_3d(i64 %i, i64 32, i64 8, ptr @loc24)
  ret void
}
; CHECK: error: kernel `h_mixed` hands DisjointSlice::get_mut thread indices with different row lengths

; A copy whose row length a call may overwrite.
declare void @may_write(ptr)
define internal void @store_row_at(ptr readonly %idx) {
  %i = load i64, ptr %idx
  %r = getelementptr inbounds i8, ptr %idx, i64 8
  %row = load i64, ptr %r
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %row, ptr @loc20)
  ret void
}
define ptx_kernel void @overwritten_copy(i64 %w, i64 %i) {
  %copy = alloca [2 x i64], align 8
  store i64 %i, ptr %copy
  %r = getelementptr inbounds i8, ptr %copy, i64 8
  store i64 %w, ptr %r
  call void @may_write(ptr %copy)
  call void @store_row_at(ptr %copy)
  ret void
}
; CHECK: error: kernel `h_overwritten_copy` {{.*}}: it is read from memory

; A value used twice is followed twice: a long enough chain of doublings
; is more than oxide follows (it would take 2^13 steps), not a hang.
define ptx_kernel void @doubling(i64 %w, i64 %i) {
  %a0 = add i64 %w, 0
  %a1 = add i64 %a0, %a0
  %a2 = add i64 %a1, %a1
  %a3 = add i64 %a2, %a2
  %a4 = add i64 %a3, %a3
  %a5 = add i64 %a4, %a4
  %a6 = add i64 %a5, %a5
  %a7 = add i64 %a6, %a6
  %a8 = add i64 %a7, %a7
  %a9 = add i64 %a8, %a8
  %a10 = add i64 %a9, %a9
  %a11 = add i64 %a10, %a10
  %a12 = add i64 %a11, %a11
  %a13 = add i64 %a12, %a12
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %a13, ptr @loc20)
  ret void
}
; CHECK: error: kernel `h_doubling` {{.*}}: it is computed by more steps than oxide follows

!oxide.kernels = !{!0, !1, !2, !3, !4, !5, !6, !7, !8, !9, !10}
!0 = !{ptr @thread_row, !"h_thread_row", i64 1}
!1 = !{ptr @memory_row, !"h_memory_row", i64 2}
!2 = !{ptr @two_rows, !"h_two_rows", i64 3}
!3 = !{ptr @chosen_per_thread, !"h_chosen_per_thread", i64 3}
!4 = !{ptr @helper_rows, !"h_helper_rows", i64 2}
!5 = !{ptr @pointer_rows, !"h_pointer_rows", i64 2}
!6 = !{ptr @call_row, !"h_call_row", i64 1}
!7 = !{ptr @planes, !"h_planes", i64 3}
!8 = !{ptr @mixed, !"h_mixed", i64 2}
!9 = !{ptr @overwritten_copy, !"h_overwritten_copy", i64 2}
!10 = !{ptr @doubling, !"h_doubling", i64 2}

attributes #0 = { nounwind willreturn memory(none) "oxide-marker" }
