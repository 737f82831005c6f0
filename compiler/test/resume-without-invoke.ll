; rustc leaves cleanup blocks ending in `resume` that no invoke reaches; they
; go with the personality even when the function has no invoke.
; RUN: %oxide-opt -passes=lower-unwinding %s | FileCheck %s

declare i32 @rust_eh_personality(...)

define i32 @user(i32 %x) personality ptr @rust_eh_personality {
entry:
  ret i32 %x
dead_cleanup:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
}
; CHECK-LABEL: define i32 @user(i32 %x) {
; CHECK-NOT: resume
; CHECK-NOT: landingpad
