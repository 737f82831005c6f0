; A generic-pointer phi or select that joins null with a stack or shared
; address gets an opaque null (inttoptr of an inline-asm zero, once per
; function), so that the backend keeps it generic; phis of null and a
; global stay. (The whole compile of tests/gpu/core_paths shows the
; rest: without it, core's float formatting did `cvta.to.local` of a zero
; register, which the device-code emulator refuses and which made the GPU
; take `None` for `Some`.)
; RUN: %oxide-opt -passes=keep-null-pointers-generic %s | FileCheck %s

target triple = "x86_64-unknown-linux-gnu"

@table = internal constant [4 x i8] c"abcd"
@tile = internal addrspace(3) global [4 x i8] undef

; CHECK-LABEL: define i8 @stack_or_none(
; CHECK: %buf = alloca
; CHECK-NEXT: %oxide.null.bits = call i64 asm "mov.b64 $0, 0;", "=l"()
; CHECK-NEXT: %oxide.null = inttoptr i64 %oxide.null.bits to ptr
; CHECK: %p = phi ptr [ %buf, %some ], [ %oxide.null, %entry ]
; CHECK: %q = select i1 %c, ptr %oxide.null, ptr %buf
define i8 @stack_or_none(i1 %c) {
entry:
  %buf = alloca [8 x i8]
  store i8 7, ptr %buf
  br i1 %c, label %some, label %join
some:
  br label %join
join:
  %p = phi ptr [ %buf, %some ], [ null, %entry ]
  %q = select i1 %c, ptr null, ptr %buf
  %none = icmp eq ptr %p, null
  %none2 = icmp eq ptr %q, null
  %both = or i1 %none, %none2
  br i1 %both, label %out, label %read
read:
  %v = load i8, ptr %p
  ret i8 %v
out:
  ret i8 0
}

; CHECK-LABEL: define i1 @shared_or_none(
; CHECK-NEXT: %oxide.null.bits = call i64 asm
; CHECK: select i1 %c, ptr %g, ptr %oxide.null
define i1 @shared_or_none(i1 %c) {
  %g = addrspacecast ptr addrspace(3) @tile to ptr
  %s = select i1 %c, ptr %g, ptr null
  %n = icmp eq ptr %s, null
  ret i1 %n
}

; CHECK-LABEL: define i1 @global_or_none(
; CHECK-NOT: oxide.null
; CHECK: %s = select i1 %c, ptr @table, ptr null
define i1 @global_or_none(i1 %c) {
  %s = select i1 %c, ptr @table, ptr null
  %n = icmp eq ptr %s, null
  ret i1 %n
}


; A null check of a pointer into shared memory (a debug build's
; `slice::from_raw_parts` of a `shared!` array): compared with the opaque
; null, so the backend does not compare in the shared space against
; `cvta.to.shared` of 0 (null-check-shared-ptx.ll has the whole compile).
; CHECK-LABEL: define i1 @shared_checked(
; CHECK-NEXT: %oxide.null.bits = call i64 asm
; CHECK: %n = icmp ne ptr %e, %oxide.null
; CHECK: %m = icmp eq ptr %oxide.null, %e
define i1 @shared_checked(i64 %i) {
  %g = addrspacecast ptr addrspace(3) @tile to ptr
  %e = getelementptr i8, ptr %g, i64 %i
  %n = icmp ne ptr %e, null
  %m = icmp eq ptr null, %e
  %r = and i1 %n, %m
  ret i1 %r
}

; A null check of a global pointer is left alone.
; CHECK-LABEL: define i1 @global_checked(
; CHECK-NOT: oxide.null
; CHECK: icmp ne ptr %p, null
define i1 @global_checked(ptr %p) {
  %n = icmp ne ptr %p, null
  ret i1 %n
}
