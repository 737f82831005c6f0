; Non-generic panic helpers of core that the table does not list (their
; bodies live in libcore, which is never gathered) are panics too.
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

declare void @_RNvNtNtNtNtCsgEmfK2I1SDS_4core5slice4sort6shared9smallsort22panic_on_ord_violation()

define void @user() {
  call void @_RNvNtNtNtNtCsgEmfK2I1SDS_4core5slice4sort6shared9smallsort22panic_on_ord_violation()
  ret void
}
; CHECK: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked:\0Apanic on ord violation\0A\00"
; CHECK: define internal void @_RNvNtNtNtNtCsgEmfK2I1SDS_4core5slice4sort6shared9smallsort22panic_on_ord_violation()
; CHECK: call void @llvm.trap()
