; A kernel calling a function of the user's own `extern "C"` block that no
; device source of the build defines is an error naming the kernel, the
; symbol and the call chain, with a note on how to name the CUDA C++ file.
; The same call, bound to a device source, is accepted
; (bind-device-sources.ll).
; RUN: not %oxide-opt -passes=bind-device-sources,reject-unsupported -device-symbol=cxx_other=src/ops.cu %s 2>&1 >/dev/null | FileCheck %s

declare float @cxx_missing(float)

define internal void @_ZN4demo3run17h0123456789abcdefE(ptr %out, float %x) !dbg !10 {
  %r = call float @cxx_missing(float %x), !dbg !11
  store float %r, ptr %out
  ret void
}
define ptx_kernel void @__oxide_kernel_entry__ZN4demo3run17h0123456789abcdefE(ptr %out, float %x) {
  call void @_ZN4demo3run17h0123456789abcdefE(ptr %out, float %x)
  ret void
}
; CHECK: error: `cxx_missing` cannot be called on the GPU: its body is not part of any crate the device linker was given
; CHECK-NEXT: --> src/main.rs:12:23
; CHECK: = note: in kernel `{{.*}}run{{.*}}`
; CHECK: = note: `cxx_missing` is declared in an `extern` block, and no device source of this build defines it: if it is CUDA C++, name its .cu file in the package's build script (`println!("cargo::rustc-link-arg=--oxide-device-source=src/FILE.cu")`; README, "CUDA C++ device code"), and check that the C++ function is `extern "C" __device__` and not `static`
; CHECK: = note: call chain: `demo::run` → `cxx_missing`

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DISubroutineType(types: !{})
!10 = distinct !DISubprogram(name: "run", scope: !2, file: !2, line: 10, type: !3, unit: !1)
!11 = !DILocation(line: 12, column: 23, scope: !10)
