; core compares bytes and strings with libc's memcmp (through the
; compare_bytes intrinsic) and LLVM's bcmp (str::find's searcher); the GPU
; has neither, so each declared one gets a device body: a loop over the
; bytes that stops at the first difference, memcmp returning the difference
; of those bytes as unsigned chars, bcmp 1.
; RUN: %oxide-opt -passes=define-memory-compare %s | FileCheck %s

declare i32 @memcmp(ptr, ptr, i64)
declare i32 @bcmp(ptr, ptr, i64)
; Another shape is not C's: left for RejectUnsupported.
declare i64 @strlen(ptr)

define i1 @str_eq(ptr %a, ptr %b, i64 %n) {
  %c = call i32 @memcmp(ptr %a, ptr %b, i64 %n)
  %e = icmp eq i32 %c, 0
  %d = call i32 @bcmp(ptr %a, ptr %b, i64 %n)
  %f = icmp eq i32 %d, 0
  %r = and i1 %e, %f
  ret i1 %r
}

; CHECK-LABEL: define internal i32 @memcmp(ptr %0, ptr %1, i64 %2)
; CHECK: br i1 %{{.*}}, label %equal, label %byte
; CHECK: byte:
; CHECK: %a = load i8, ptr
; CHECK: %b = load i8, ptr
; CHECK: br i1 %{{.*}}, label %differ, label %next
; CHECK: next:
; CHECK: icmp ult i64
; CHECK: differ:
; CHECK: zext i8 %a to i32
; CHECK: zext i8 %b to i32
; CHECK: ret i32 %
; CHECK: equal:
; CHECK-NEXT: ret i32 0
; CHECK-LABEL: define internal i32 @bcmp(ptr %0, ptr %1, i64 %2)
; CHECK: differ:
; CHECK-NEXT: ret i32 1
; CHECK: declare i64 @strlen(ptr)
