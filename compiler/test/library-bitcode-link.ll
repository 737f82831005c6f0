; What the kernels reach and only a library defines is linked from the
; library's bitcode, with what it needs in turn; nothing else is. The
; library here is textual IR, then the same module as an rlib would carry it
; (an object whose `.llvmbc` section holds the bitcode, in an archive).
; RUN: split-file %s %t
; RUN: %oxide-opt -passes=link-library-bitcode -library=%t/core.ll %t/device.ll | FileCheck %s
; RUN: %oxide-opt -passes=link-library-bitcode -library=%t/core.ll %t/device.ll | FileCheck %s --check-prefix=UNLINKED
; RUN: llvm-as %t/core.ll -o %t/core.bc
; RUN: llc -mtriple=x86_64-unknown-linux-gnu -filetype=obj %t/empty.ll -o %t/core.o
; RUN: llvm-objcopy --add-section .llvmbc=%t/core.bc %t/core.o
; RUN: rm -f %t/libcore.rlib && llvm-ar rc %t/libcore.rlib %t/core.o
; RUN: %oxide-opt -passes=link-library-bitcode -library=%t/libcore.rlib %t/device.ll | FileCheck %s
; Without a library the declarations stay (RejectUnsupported reports them).
; RUN: %oxide-opt -passes=link-library-bitcode %t/device.ll | FileCheck %s --check-prefix=NOLIB
; A kernel that formats for real (reaches core::fmt::write) gets the `fmt`
; methods whose addresses it stores too.
; RUN: %oxide-opt -passes=link-library-bitcode -library=%t/core.ll %t/writes.ll | FileCheck %s --check-prefix=WRITES

;--- device.ll
; `<u16 as core::fmt::Display>::fmt`, a shared generic instance
; (core::iter::…::size), core::panicking::panic_fmt, std's `_print`, and a
; function only the host calls, all declared: the user's crates do not
; define them.
declare i64 @_RNvYINtNtNtCsgEmfK2I1SDS_4core5slice4iter4ItertENtNtNtNtB9_4iter8adapters3zip27TrustedRandomAccessNoCoerce4sizeCsfEOYDRpO4Ta_11miniz_oxide(ptr)
declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr, ptr, ptr)
declare i1 @_RNvXs3_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3imptNtB9_7Display3fmt(ptr, ptr)
declare i64 @_RNvNtCsgEmfK2I1SDS_4core4host10only_hosts()
declare void @_RNvNtNtCs1234_3std2io5stdio6__print(ptr)

define ptx_kernel void @kernel(ptr %it, ptr %slot) {
  %n = call i64 @_RNvYINtNtNtCsgEmfK2I1SDS_4core5slice4iter4ItertENtNtNtNtB9_4iter8adapters3zip27TrustedRandomAccessNoCoerce4sizeCsfEOYDRpO4Ta_11miniz_oxide(ptr %it)
  ; A panic message's argument: the address is stored, never called here.
  store ptr @_RNvXs3_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3imptNtB9_7Display3fmt, ptr %slot
  call void @_RNvNtNtCs1234_3std2io5stdio6__print(ptr %slot)
  %c = icmp ugt i64 %n, 4
  br i1 %c, label %panic, label %done
panic:
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr null, ptr %slot, ptr null)
  unreachable
done:
  ret void
}

define i64 @host_main() {
  %x = call i64 @_RNvNtCsgEmfK2I1SDS_4core4host10only_hosts()
  ret i64 %x
}

; LowerPanics defines the panic functions; a `fmt` method only stored, what
; only the host calls and what is not core's (RejectUnsupported names it)
; are not linked; nor is the library's llvm.used.
; CHECK: declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(
; CHECK: declare i1 @_RNvXs3_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3imptNtB9_7Display3fmt(
; CHECK: declare i64 @_RNvNtCsgEmfK2I1SDS_4core4host10only_hosts()
; CHECK: declare void @_RNvNtNtCs1234_3std2io5stdio6__print(
; CHECK: define ptx_kernel void @kernel(
; The instance, and the function of the library it calls.
; CHECK-DAG: define i64 @_RNvYINtNtNtCsgEmfK2I1SDS_4core5slice4iter4ItertENtNtNtNtB9_4iter8adapters3zip27TrustedRandomAccessNoCoerce4sizeCsfEOYDRpO4Ta_11miniz_oxide(ptr %it) {
; CHECK-DAG: define i64 @_RNvNtCsgEmfK2I1SDS_4core5slice3len(ptr %it) {
; UNLINKED-NOT: llvm.used
; UNLINKED-NOT: define {{.*}}panic_fmt
; UNLINKED-NOT: host_body_only

; NOLIB: declare i64 @_RNvYINtNtNtCsgEmfK2I1SDS_4core5slice4iter4ItertENtNtNtNtB9_4iter8adapters3zip27TrustedRandomAccessNoCoerce4sizeCsfEOYDRpO4Ta_11miniz_oxide(
; NOLIB: define ptx_kernel void @kernel(
; NOLIB-NOT: define {{.*}} @_R

; Only unwinding reaches the drop (LowerUnwinding deletes the landing pad),
; and only a panic is handed the vtable (LowerPanics reads it, never runs
; it): neither is linked.
declare void @_RNvNtCsgEmfK2I1SDS_4core4hint13drop_on_panic(ptr)
declare void @_RNvNtCsgEmfK2I1SDS_4core6result13unwrap_failed(ptr, i64, ptr, ptr, ptr)
declare i32 @rust_eh_personality(...)
declare i64 @_RNvNtCsgEmfK2I1SDS_4core5slice3len(ptr)
declare i1 @_RNvNtCsgEmfK2I1SDS_4core4hint9in_vtable(ptr, ptr)
@vtable = private constant <{ ptr, [16 x i8], ptr }> <{ ptr null, [16 x i8] zeroinitializer, ptr @_RNvNtCsgEmfK2I1SDS_4core4hint9in_vtable }>

define ptx_kernel void @unwinds(ptr %it) personality ptr @rust_eh_personality {
  %n = invoke i64 @_RNvNtCsgEmfK2I1SDS_4core5slice3len(ptr %it)
          to label %ok unwind label %cleanup
ok:
  call void @_RNvNtCsgEmfK2I1SDS_4core6result13unwrap_failed(ptr null, i64 0, ptr %it, ptr @vtable, ptr null)
  unreachable
cleanup:
  %lp = landingpad { ptr, i32 } cleanup
  call void @_RNvNtCsgEmfK2I1SDS_4core4hint13drop_on_panic(ptr %it)
  resume { ptr, i32 } %lp
}
; UNLINKED-NOT: define {{.*}} @_RNvNtCsgEmfK2I1SDS_4core4hint13drop_on_panic(
; UNLINKED-NOT: define {{.*}} @_RNvNtCsgEmfK2I1SDS_4core4hint9in_vtable(
; UNLINKED-NOT: define {{.*}} @_RNvNtCsgEmfK2I1SDS_4core6result13unwrap_failed(

;--- writes.ll
declare i1 @_RNvNtCsgEmfK2I1SDS_4core3fmt5write(ptr, ptr, ptr, ptr)
declare i1 @_RNvXs3_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3imptNtB9_7Display3fmt(ptr, ptr)

; WRITES-LABEL: define ptx_kernel void @formats(
define ptx_kernel void @formats(ptr %out, ptr %vtable, ptr %args) {
  store ptr @_RNvXs3_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3imptNtB9_7Display3fmt, ptr %args
  %ok = call i1 @_RNvNtCsgEmfK2I1SDS_4core3fmt5write(ptr %out, ptr %vtable, ptr null, ptr %args)
  ret void
}
; WRITES-DAG: define i1 @_RNvNtCsgEmfK2I1SDS_4core3fmt5write(
; WRITES-DAG: define i1 @_RNvXs3_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3imptNtB9_7Display3fmt(

;--- core.ll
; The library: optimised x86_64 bitcode in the real rlibs.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@llvm.used = appending global [1 x ptr] [ptr @host_body_only], section "llvm.metadata"

define internal void @host_body_only() {
  ret void
}

define i64 @_RNvNtCsgEmfK2I1SDS_4core5slice3len(ptr %it) {
  %p = load i64, ptr %it
  ret i64 %p
}

define i64 @_RNvYINtNtNtCsgEmfK2I1SDS_4core5slice4iter4ItertENtNtNtNtB9_4iter8adapters3zip27TrustedRandomAccessNoCoerce4sizeCsfEOYDRpO4Ta_11miniz_oxide(ptr %it) {
  %n = call i64 @_RNvNtCsgEmfK2I1SDS_4core5slice3len(ptr %it)
  ret i64 %n
}

; The host's panic: formats and unwinds.
define void @_RNvNtCsgEmfK2I1SDS_4core9panicking9panic_fmt(ptr %t, ptr %a, ptr %l) {
  call void @host_body_only()
  unreachable
}

define i1 @_RNvXs3_NtNtNtCsgEmfK2I1SDS_4core3fmt3num3imptNtB9_7Display3fmt(ptr %v, ptr %f) {
  ret i1 false
}

define i1 @_RNvNtCsgEmfK2I1SDS_4core3fmt5write(ptr %out, ptr %vtable, ptr %t, ptr %args) {
  %fmt = load ptr, ptr %args
  %r = call i1 %fmt(ptr null, ptr null)
  ret i1 %r
}

define void @_RNvNtNtCs1234_3std2io5stdio6__print(ptr %args) {
  call void @host_body_only()
  ret void
}

define void @_RNvNtCsgEmfK2I1SDS_4core4hint13drop_on_panic(ptr %p) {
  ret void
}

define i1 @_RNvNtCsgEmfK2I1SDS_4core4hint9in_vtable(ptr %v, ptr %f) {
  ret i1 false
}

define void @_RNvNtCsgEmfK2I1SDS_4core6result13unwrap_failed(ptr %m, i64 %l, ptr %e, ptr %v, ptr %loc) {
  unreachable
}

define i64 @_RNvNtCsgEmfK2I1SDS_4core4host10only_hosts() {
  call void @host_body_only()
  ret i64 0
}

;--- empty.ll
target triple = "x86_64-unknown-linux-gnu"
