; A `Function` stub calls the device function the table names: printf's
; stub becomes CUDA's `vprintf`.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s | FileCheck %s

declare i32 @__oxide_stub_vprintf(ptr, ptr)

define i32 @user(ptr %fmt, ptr %args) {
  %r = call i32 @__oxide_stub_vprintf(ptr %fmt, ptr %args)
  ret i32 %r
}
; CHECK: call i32 @vprintf(ptr %fmt, ptr %args)
; CHECK-NOT: __oxide_stub_vprintf
