; A `&[T]` kernel parameter (T: Freeze) reaches the kernel as a
; `noalias readonly` pointer that the wrapper loads from the entry's byval
; bytes. The entry records those slots ("param:offset") for
; TagInvariantLoads; `&mut [T]` (noalias, writable), `&[AtomicU32]` (no
; attributes) and a pointer also used elsewhere are not listed.
; RUN: %oxide-opt -passes=record-readonly-params %s | FileCheck %s

declare void @kernel(ptr, i64, ptr, ptr, ptr, ptr)
declare void @other(ptr)

define internal void @wrapper.oxide.body(ptr %p0, ptr %p1, ptr %p2, ptr %p3) {
  %in = load ptr, ptr %p0
  %lenp = getelementptr inbounds i8, ptr %p0, i64 8
  %len = load i64, ptr %lenp
  %second = getelementptr inbounds i8, ptr %p1, i64 16
  %in2 = load ptr, ptr %second
  %out = load ptr, ptr %p2
  %cells = load ptr, ptr %p3
  %leaked = load ptr, ptr %p3
  call void @other(ptr %leaked)
  call void @kernel(ptr noalias readonly %in, i64 %len, ptr noalias readonly %in2, ptr noalias %out, ptr %cells, ptr noalias readonly %leaked)
  ret void
}

; CHECK: define ptx_kernel void @entry({{.*}}) #[[A:[0-9]+]]
define ptx_kernel void @entry(ptr byval([16 x i8]) %p0, ptr byval([24 x i8]) %p1, ptr byval([16 x i8]) %p2, ptr byval([16 x i8]) %p3) {
  call void @wrapper.oxide.body(ptr %p0, ptr %p1, ptr %p2, ptr %p3)
  ret void
}

; A kernel without read-only slices gets no attribute.
; CHECK: define ptx_kernel void @writer({{.*}}) {
define ptx_kernel void @writer(ptr byval([16 x i8]) %p0, ptr byval([24 x i8]) %p1, ptr byval([16 x i8]) %p2, ptr byval([16 x i8]) %p3) {
  call void @writer.oxide.body(ptr %p0, ptr %p1, ptr %p2, ptr %p3)
  ret void
}
define internal void @writer.oxide.body(ptr %p0, ptr %p1, ptr %p2, ptr %p3) {
  %out = load ptr, ptr %p2
  call void @kernel(ptr null, i64 0, ptr null, ptr noalias %out, ptr null, ptr null)
  ret void
}

; CHECK: attributes #[[A]] = { "oxide-readonly-pointers"="0:0 1:16" }
