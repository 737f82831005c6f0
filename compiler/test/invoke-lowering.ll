; No unwinding on the GPU: invokes become calls, landing pads and the
; personality go away.
; RUN: %oxide-opt -passes=lower-unwinding %s | FileCheck %s

declare i32 @rust_eh_personality(...)
declare void @may_panic()
declare void @drop_guard()

define void @user() personality ptr @rust_eh_personality {
entry:
  invoke void @may_panic() to label %ok unwind label %cleanup
ok:
  ret void
cleanup:
  %lp = landingpad { ptr, i32 } cleanup
  call void @drop_guard()
  resume { ptr, i32 } %lp
}
; CHECK-LABEL: define void @user() {
; CHECK: call void @may_panic()
; CHECK-NOT: invoke
; CHECK-NOT: landingpad
; CHECK-NOT: resume
