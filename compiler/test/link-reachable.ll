; The codegen units are read lazily and only what a device root reaches is
; linked (LinkReachable.cpp): the kernel entry and what it calls across
; units, the #[constant] static the host writes by name, the function a
; device export marker names; not host code, host statics or host aliases,
; whose bodies are never read. The strongest definition of a name is the one
; linked (the linkonce_odr helper over its available_externally copy).
; An internal entry is kept without the host static that held it.
; RUN: split-file %s %t
; RUN: llvm-as %t/a.ll -o %t/a.bc
; RUN: llvm-as %t/b.ll -o %t/b.bc
; RUN: rm -rf %t/dump
; RUN: env OXIDE_DUMP_DIR=%t/dump %oxide-opt --ptx --arch sm_90 %t/a.bc %t/b.bc | FileCheck %s --check-prefix=PTX
; RUN: FileCheck %s --input-file=%t/dump/device-input.ll
; The same units as textual IR (read whole) give the same module.
; RUN: rm -rf %t/dump2
; RUN: env OXIDE_DUMP_DIR=%t/dump2 %oxide-opt --ptx --arch sm_90 %t/a.ll %t/b.ll > /dev/null
; RUN: FileCheck %s --input-file=%t/dump2/device-input.ll

; CHECK-DAG: define internal void @_ZN4demo22__oxide_kernel_entry_k17h0123456789abcdefE
; CHECK-DAG: define linkonce_odr i32 @helper(i32 %x)
; CHECK-DAG: define internal i32 @helper_inner
; CHECK-DAG: @CONST = global i32 7, section ".oxide.constant"
; CHECK-DAG: define void @exported()
; CHECK-NOT: define void @host_main
; CHECK-NOT: define i32 @host_only
; CHECK-NOT: HOST_TABLE
; CHECK-NOT: @host_alias =
; CHECK-NOT: add i32 %x, 1000
; PTX-DAG: .entry _ZN4demo22__oxide_kernel_entry_k17h0123456789abcdefE(
; PTX-DAG: .const .align 4 .u32 CONST = 7
; PTX-DAG: .visible .func exported()
; PTX-DAG: mul.lo.s32

;--- a.ll
target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()
declare i32 @host_only()

; The host's copy: never linked, the linkonce_odr one of b is stronger.
define available_externally i32 @helper(i32 %x) {
  %r = add i32 %x, 1000
  ret i32 %r
}

define internal void @_ZN4demo22__oxide_kernel_entry_k17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %v = call i32 @helper(i32 %t)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %v, ptr %p
  ret void
}

@KEEP = internal constant ptr @_ZN4demo22__oxide_kernel_entry_k17h0123456789abcdefE
@llvm.used = appending global [1 x ptr] [ptr @KEEP], section "llvm.metadata"

define void @host_main() {
  %n = call i32 @host_only()
  ret void
}

;--- b.ll
target triple = "x86_64-unknown-linux-gnu"

declare ptr @__rust_alloc(i64, i64)

define internal i32 @helper_inner(i32 %x) {
  %r = mul i32 %x, 3
  ret i32 %r
}

define linkonce_odr i32 @helper(i32 %x) {
  %r = call i32 @helper_inner(i32 %x)
  ret i32 %r
}

@CONST = global i32 7, section ".oxide.constant"

define i32 @host_only() {
  %m = call ptr @__rust_alloc(i64 4, i64 4)
  %v = load i32, ptr @HOST_TABLE
  ret i32 %v
}

@HOST_TABLE = internal global i32 1
@host_alias = alias i32 (), ptr @host_only

define void @exported() {
  ret void
}
@__oxide_device_export_exported = internal constant ptr @exported
