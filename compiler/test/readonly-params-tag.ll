; After O3, loads whose address can only come from a read-only slice slot
; listed in `oxide-readonly-pointers` become !invariant.load (PTX
; ld.global.nc), through GEPs and loop phis; loads that may read other
; memory stay plain, and the attribute is dropped.
; RUN: %oxide-opt -passes=tag-invariant-loads %s | FileCheck %s

define ptx_kernel void @entry(ptr byval([16 x i8]) %p0, ptr byval([24 x i8]) %p1, ptr byval([16 x i8]) %p2, i1 %c) #0 {
entry:
  %in = load ptr, ptr %p0
  %slot = getelementptr inbounds i8, ptr %p1, i64 16
  %in2 = load ptr, ptr %slot
  %first = getelementptr inbounds i8, ptr %p1, i64 0
  %notlisted = load ptr, ptr %first
  %out = load ptr, ptr %p2
  br label %loop

loop:
  %ptr = phi ptr [ %in, %entry ], [ %next, %loop ]
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
; CHECK: %x = load float, ptr %ptr, align 4, !invariant.load ![[E:[0-9]+]]
  %x = load float, ptr %ptr, align 4
  %q = getelementptr float, ptr %in2, i64 %i
; CHECK: %y = load float, ptr %q, align 4, !invariant.load ![[E]]
  %y = load float, ptr %q, align 4
  %either = select i1 %c, ptr %in, ptr %in2
; CHECK: %z = load float, ptr %either, align 4, !invariant.load ![[E]]
  %z = load float, ptr %either, align 4
  %mixed = select i1 %c, ptr %in, ptr %notlisted
; CHECK: %w = load float, ptr %mixed, align 4{{$}}
  %w = load float, ptr %mixed, align 4
; CHECK: %o = load float, ptr %out, align 4{{$}}
  %o = load float, ptr %out, align 4
; CHECK: %v = load volatile float, ptr %in, align 4{{$}}
  %v = load volatile float, ptr %in, align 4
  %s1 = fadd float %x, %y
  %s2 = fadd float %z, %w
  %s3 = fadd float %o, %v
  %s4 = fadd float %s1, %s2
  %s = fadd float %s3, %s4
  store float %s, ptr %out, align 4
  %next = getelementptr float, ptr %ptr, i64 1
  %i.next = add i64 %i, 1
  %done = icmp eq i64 %i.next, 64
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; A function without the attribute is left alone.
; CHECK-LABEL: define void @device_fn(
; CHECK: %x = load float, ptr %p, align 4{{$}}
define void @device_fn(ptr %p) {
  %x = load float, ptr %p, align 4
  ret void
}

; CHECK-NOT: oxide-readonly-pointers
; CHECK: ![[E]] = !{}
attributes #0 = { "oxide-readonly-pointers"="0:0 1:16" }
