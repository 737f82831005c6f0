; The front of the device link runs LLVM's O3 in pieces on OXIDE_JOBS threads
; (cutFront, Compile.cpp's optimizeInPieces) when every piece gets at least 8
; kernels: kernels by a hash of their name, each piece in a context of its
; own, linked into the whole module again before the post-O3 passes. What
; kernels of two pieces share stays one definition: the helper `shared` (M
; keeps its body; the other piece optimises a copy it may inline, then drops),
; the table `TABLE` it reads, the `#[device_global]` `HITS` every kernel
; counts in, and the block-shared `SCRATCH`, internal, which M lends the
; other piece under its own name while O3 runs and then keeps internal.
; Each kernel keeps its own code (`own_N`, reached by kernel N alone, moved
; into its piece). The records
; name every kernel, and each kernel still reads its launch's thread index.
; OXIDE_JOBS=1, OXIDE_SPLIT=0 and fewer kernels than two pieces need keep
; the front whole.
; RUN: env OXIDE_JOBS=2 OXIDE_VERBOSE=1 %oxide-opt --ptx --arch sm_90 %s 2>%t.log > %t.two.ptx
; RUN: FileCheck %s --check-prefix=PIECES < %t.log
; RUN: FileCheck %s --check-prefixes=CHECK,ONCE < %t.two.ptx
; RUN: env OXIDE_JOBS=1 OXIDE_VERBOSE=1 %oxide-opt --ptx --arch sm_90 %s 2>%t.one.log > %t.one.ptx
; RUN: FileCheck %s --check-prefix=WHOLE < %t.one.log
; RUN: FileCheck %s --check-prefixes=CHECK,ONCE < %t.one.ptx
; RUN: env OXIDE_JOBS=2 OXIDE_SPLIT=0 OXIDE_VERBOSE=1 %oxide-opt --ptx --arch sm_90 %s 2>&1 >/dev/null | FileCheck %s --check-prefix=WHOLE
; RUN: %if ptxas %{ env OXIDE_JOBS=2 %oxide-opt --ptx --assemble --arch sm_90 %s | FileCheck %s --check-prefix=PTXAS %}

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()

@TABLE = internal constant [4 x i32] [i32 3, i32 5, i32 7, i32 11]
@HITS = internal global i32 0, section ".oxide.global"
@SCRATCH = internal global [32 x i32] zeroinitializer, section ".oxide.shared"

define internal i32 @shared(i32 %x) #0 {
  %i = and i32 %x, 3
  %p = getelementptr [4 x i32], ptr @TABLE, i32 0, i32 %i
  %v = load i32, ptr %p
  %h = atomicrmw add ptr @HITS, i32 1 monotonic
  %j = and i32 %x, 31
  %q = getelementptr [32 x i32], ptr @SCRATCH, i32 0, i32 %j
  store volatile i32 %h, ptr %q
  %w = load volatile i32, ptr %q
  %r = mul i32 %v, %x
  %s = add i32 %r, %w
  ret i32 %s
}

define internal i32 @own_0(i32 %x) #0 {
  %a = mul i32 %x, 3
  %b = xor i32 %a, 1
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0017h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_0(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_1(i32 %x) #0 {
  %a = mul i32 %x, 4
  %b = xor i32 %a, 8
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0117h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_1(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_2(i32 %x) #0 {
  %a = mul i32 %x, 5
  %b = xor i32 %a, 15
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0217h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_2(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_3(i32 %x) #0 {
  %a = mul i32 %x, 6
  %b = xor i32 %a, 22
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0317h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_3(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_4(i32 %x) #0 {
  %a = mul i32 %x, 7
  %b = xor i32 %a, 29
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0417h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_4(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_5(i32 %x) #0 {
  %a = mul i32 %x, 8
  %b = xor i32 %a, 36
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0517h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_5(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_6(i32 %x) #0 {
  %a = mul i32 %x, 9
  %b = xor i32 %a, 43
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0617h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_6(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_7(i32 %x) #0 {
  %a = mul i32 %x, 10
  %b = xor i32 %a, 50
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0717h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_7(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_8(i32 %x) #0 {
  %a = mul i32 %x, 11
  %b = xor i32 %a, 57
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0817h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_8(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_9(i32 %x) #0 {
  %a = mul i32 %x, 12
  %b = xor i32 %a, 64
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k0917h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_9(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_10(i32 %x) #0 {
  %a = mul i32 %x, 13
  %b = xor i32 %a, 71
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k1017h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_10(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_11(i32 %x) #0 {
  %a = mul i32 %x, 14
  %b = xor i32 %a, 78
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k1117h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_11(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_12(i32 %x) #0 {
  %a = mul i32 %x, 15
  %b = xor i32 %a, 85
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k1217h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_12(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_13(i32 %x) #0 {
  %a = mul i32 %x, 16
  %b = xor i32 %a, 92
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k1317h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_13(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_14(i32 %x) #0 {
  %a = mul i32 %x, 17
  %b = xor i32 %a, 99
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k1417h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_14(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal i32 @own_15(i32 %x) #0 {
  %a = mul i32 %x, 18
  %b = xor i32 %a, 106
  ret i32 %b
}

define internal void @_ZN4demo23__oxide_kernel_entry_k1517h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %o = call i32 @own_15(i32 %t)
  %s = call i32 @shared(i32 %o)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

@launch_0 = global ptr @_ZN4demo23__oxide_kernel_entry_k0017h0123456789abcdefE
@launch_1 = global ptr @_ZN4demo23__oxide_kernel_entry_k0117h0123456789abcdefE
@launch_2 = global ptr @_ZN4demo23__oxide_kernel_entry_k0217h0123456789abcdefE
@launch_3 = global ptr @_ZN4demo23__oxide_kernel_entry_k0317h0123456789abcdefE
@launch_4 = global ptr @_ZN4demo23__oxide_kernel_entry_k0417h0123456789abcdefE
@launch_5 = global ptr @_ZN4demo23__oxide_kernel_entry_k0517h0123456789abcdefE
@launch_6 = global ptr @_ZN4demo23__oxide_kernel_entry_k0617h0123456789abcdefE
@launch_7 = global ptr @_ZN4demo23__oxide_kernel_entry_k0717h0123456789abcdefE
@launch_8 = global ptr @_ZN4demo23__oxide_kernel_entry_k0817h0123456789abcdefE
@launch_9 = global ptr @_ZN4demo23__oxide_kernel_entry_k0917h0123456789abcdefE
@launch_10 = global ptr @_ZN4demo23__oxide_kernel_entry_k1017h0123456789abcdefE
@launch_11 = global ptr @_ZN4demo23__oxide_kernel_entry_k1117h0123456789abcdefE
@launch_12 = global ptr @_ZN4demo23__oxide_kernel_entry_k1217h0123456789abcdefE
@launch_13 = global ptr @_ZN4demo23__oxide_kernel_entry_k1317h0123456789abcdefE
@launch_14 = global ptr @_ZN4demo23__oxide_kernel_entry_k1417h0123456789abcdefE
@launch_15 = global ptr @_ZN4demo23__oxide_kernel_entry_k1517h0123456789abcdefE

define void @host_main() #1 {
  ret void
}

attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { uwtable "target-cpu"="x86-64" }

; PIECES: oxide-link: cut in 2 pieces for O3:
; PIECES: oxide-link: O3 in 2 pieces:
; PIECES: oxide-link: post-O3 passes:
; WHOLE-NOT: pieces
; WHOLE: oxide-link: O3 and post-O3 passes:

; One definition of what the pieces share, under its own name.
; ONCE-NOT: {{TABLE\[|\.u32 HITS;|shared\(|SCRATCH\[|_\$_1|__oxide_front_lent}}
; ONCE: .global {{.*}} TABLE[
; ONCE: .global {{.*}} HITS;
; ONCE: .func {{.*}} shared(
; ONCE: .shared {{.*}} SCRATCH[
; ONCE-NOT: {{TABLE\[|\.u32 HITS;|shared\(|SCRATCH\[|_\$_1|__oxide_front_lent}}

; Every kernel, with its own function.
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0017h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_0(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0117h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_1(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0217h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_2(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0317h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_3(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0417h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_4(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0517h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_5(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0617h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_6(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0717h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_7(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0817h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_8(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k0917h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_9(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k1017h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_10(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k1117h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_11(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k1217h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_12(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k1317h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_13(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k1417h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_14(
; CHECK-DAG: .entry _ZN4demo23__oxide_kernel_entry_k1517h0123456789abcdefE(
; CHECK-DAG: .func {{.*}}own_15(
; PTXAS: ; ptxas accepted it: a cubin
