; An atomic read-modify-write or compare-exchange of a host static from a
; kernel (`static HITS: AtomicU32`, `HITS.fetch_add(1, ..)`) is a write to
; host memory as well: the same error as a store, at the user's call, with
; the function that writes named. Atomics on device memory (a local, a kernel
; parameter) are not errors.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

@_ZN4demo4HITS17h0123456789abcdefE = internal global [4 x i8] zeroinitializer, align 4

; AtomicU32::fetch_add(&self, val, order), a line of the standard library.
define internal i32 @_ZN4core4sync6atomic9AtomicU329fetch_add17h0123456789abcdefE(ptr %self, i32 %v) !dbg !20 {
  %old = atomicrmw add ptr %self, i32 %v monotonic, align 4, !dbg !21
  ret i32 %old
}
; AtomicU32::as_ptr(&self) -> *mut u32
define internal ptr @_ZN4core4sync6atomic9AtomicU326as_ptr17h0123456789abcdefE(ptr %self) !dbg !22 {
  ret ptr %self, !dbg !23
}

define internal void @_ZN4demo5count17h0123456789abcdefE(ptr %param) !dbg !10 {
  %local = alloca i32, align 4
  %n = call i32 @_ZN4core4sync6atomic9AtomicU329fetch_add17h0123456789abcdefE(ptr @_ZN4demo4HITS17h0123456789abcdefE, i32 1), !dbg !11
  %raw = call ptr @_ZN4core4sync6atomic9AtomicU326as_ptr17h0123456789abcdefE(ptr @_ZN4demo4HITS17h0123456789abcdefE), !dbg !12
  %pair = cmpxchg ptr %raw, i32 0, i32 1 seq_cst seq_cst, !dbg !12
  %l = call i32 @_ZN4core4sync6atomic9AtomicU329fetch_add17h0123456789abcdefE(ptr %local, i32 1), !dbg !13
  %q = call i32 @_ZN4core4sync6atomic9AtomicU329fetch_add17h0123456789abcdefE(ptr %param, i32 1), !dbg !13
  ret void
}
define ptx_kernel void @_ZN4demo26__oxide_kernel_entry_count17h0123456789abcdefE(ptr %p) {
  call void @_ZN4demo5count17h0123456789abcdefE(ptr %p)
  ret void
}

; CHECK:      error: kernel writes the host static `demo::HITS`: host statics are not shared with the GPU
; CHECK-NEXT:   --> src/main.rs:12:18
; CHECK-NEXT:    = note: in kernel `demo::count`
; CHECK-NEXT:    = note: written by `core::sync::atomic::AtomicU32::fetch_add` (an atomic read-modify-write is a write too)
; CHECK-NEXT:    = note: call chain: `demo::count`{{$}}
; CHECK:      error: kernel writes the host static `demo::HITS`: host statics are not shared with the GPU
; CHECK-NEXT:   --> src/main.rs:13:9
; CHECK-NEXT:    = note: in kernel `demo::count`
; CHECK-NEXT:    = note: call chain: `demo::count`{{$}}
; CHECK-NOT:  error: kernel writes
; CHECK:      error: oxide could not compile the kernels for the GPU (2 errors)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DIFile(filename: "/rustc/0123/library/core/src/sync/atomic.rs", directory: "")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "count", scope: !2, file: !2, line: 10, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 12, column: 18, scope: !10)
!12 = !DILocation(line: 13, column: 9, scope: !10)
!13 = !DILocation(line: 14, column: 9, scope: !10)
!20 = distinct !DISubprogram(name: "fetch_add", scope: !3, file: !3, line: 100, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!21 = !DILocation(line: 101, column: 9, scope: !20)
!22 = distinct !DISubprogram(name: "as_ptr", scope: !3, file: !3, line: 200, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!23 = !DILocation(line: 201, column: 9, scope: !22)
