; A kernel that writes a mutable host static (`static mut COUNTER`) would only
; change the device's copy: a compile error at the user's line, whether the
; store is there, in a function the static's address is passed to, or through
; a local variable holding that address. One error per line, shared by every
; kernel that reaches it. A mutable static that is only read (SEEN) is an
; error of its own (the device copy never changes); constant statics and
; statics in GPU address spaces (shared memory) are not errors.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

@_ZN4demo7COUNTER17h0123456789abcdefE = internal global i32 0
@_ZN4demo5TOTAL17h0123456789abcdefE = internal global i32 0
@_ZN4demo5TABLE17h0123456789abcdefE = internal constant [4 x i32] [i32 1, i32 2, i32 3, i32 4]
@_ZN4demo4SEEN17h0123456789abcdefE = internal global i32 0
@tile = internal addrspace(3) global [32 x i32] undef

; fn bump(p: &mut u32) { *p += 1 }
define internal void @_ZN4demo4bump17h0123456789abcdefE(ptr %p) !dbg !14 {
  %v = load i32, ptr %p, !dbg !15
  %w = add i32 %v, 1, !dbg !15
  store i32 %w, ptr %p, !dbg !15
  ret void
}

; fn touch() { unsafe { TOTAL = 1 } }
define internal void @_ZN4demo5touch17h0123456789abcdefE() !dbg !16 {
  store i32 1, ptr @_ZN4demo5TOTAL17h0123456789abcdefE, !dbg !17
  ret void
}

define internal void @_ZN4demo1a17h0123456789abcdefE() !dbg !10 {
  %slot = alloca ptr, align 8
  %c = load i32, ptr @_ZN4demo7COUNTER17h0123456789abcdefE, !dbg !11
  %c1 = add i32 %c, 1, !dbg !11
  store i32 %c1, ptr @_ZN4demo7COUNTER17h0123456789abcdefE, !dbg !11
  call void @_ZN4demo4bump17h0123456789abcdefE(ptr @_ZN4demo7COUNTER17h0123456789abcdefE), !dbg !12
  store ptr @_ZN4demo7COUNTER17h0123456789abcdefE, ptr %slot, !dbg !13
  %p = load ptr, ptr %slot, !dbg !13
  store i32 2, ptr %p, !dbg !13
  %t = getelementptr inbounds [4 x i32], ptr @_ZN4demo5TABLE17h0123456789abcdefE, i64 0, i64 2, !dbg !18
  %tv = load i32, ptr %t, !dbg !18
  %s = load i32, ptr @_ZN4demo4SEEN17h0123456789abcdefE, !dbg !18
  store i32 %s, ptr addrspace(3) @tile, !dbg !18
  call void @_ZN4demo5touch17h0123456789abcdefE(), !dbg !18
  ret void
}
define ptx_kernel void @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE() {
  call void @_ZN4demo1a17h0123456789abcdefE()
  ret void
}

define internal void @_ZN4demo1b17h0123456789abcdefE() !dbg !19 {
  call void @_ZN4demo5touch17h0123456789abcdefE(), !dbg !30
  ret void
}
define ptx_kernel void @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE() {
  call void @_ZN4demo1b17h0123456789abcdefE()
  ret void
}

; CHECK:      error: kernel writes the host static `demo::COUNTER`: host statics are not shared with the GPU (a kernel would only change a device copy); declare it `#[device_global]` to keep it in GPU memory, shared by the kernels and read by the host with KernelModule::read_global, or write results through a kernel parameter such as `mut out: DisjointSlice<T>`
; CHECK-NEXT:   --> src/main.rs:10:14
; CHECK-NEXT:    = note: in kernel `demo::a`
; CHECK-NEXT:    = note: call chain: `demo::a`{{$}}
; CHECK:      error: kernel writes the host static `demo::COUNTER`: host statics are not shared with the GPU
; CHECK-NEXT:   --> src/main.rs:11:5
; CHECK-NEXT:    = note: in kernel `demo::a`
; CHECK-NEXT:    = note: written by `demo::bump`
; CHECK:      error: kernel writes the host static `demo::COUNTER`: host statics are not shared with the GPU
; CHECK-NEXT:   --> src/main.rs:12:9
; CHECK:      error: kernel reads the mutable host static `demo::SEEN`: host statics are not shared with the GPU (a kernel would see only the value it had when the program was linked)
; CHECK-NEXT:   --> src/main.rs:13:5
; CHECK:      error: kernel writes the host static `demo::TOTAL`: host statics are not shared with the GPU
; CHECK-NEXT:   --> src/main.rs:30:5
; CHECK-NEXT:    = note: in kernels `demo::a`, `demo::b`
; CHECK-NEXT:    = note: call chain: `demo::a` → `demo::touch`{{$}}
; CHECK-NOT:  TABLE
; CHECK:      error: oxide could not compile the kernels for the GPU (5 errors)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "a", scope: !2, file: !2, line: 9, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 10, column: 14, scope: !10)
!12 = !DILocation(line: 11, column: 5, scope: !10)
!13 = !DILocation(line: 12, column: 9, scope: !10)
!18 = !DILocation(line: 13, column: 5, scope: !10)
!14 = distinct !DISubprogram(name: "bump", scope: !2, file: !2, line: 25, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!15 = !DILocation(line: 25, column: 30, scope: !14)
!16 = distinct !DISubprogram(name: "touch", scope: !2, file: !2, line: 29, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!17 = !DILocation(line: 30, column: 5, scope: !16)
!19 = distinct !DISubprogram(name: "b", scope: !2, file: !2, line: 40, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!30 = !DILocation(line: 41, column: 5, scope: !19)
