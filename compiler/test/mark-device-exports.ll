; `#[device] #[no_mangle] pub extern "C" fn rust_cube` writes the marker
; static __oxide_device_export_rust_cube (in llvm.used) holding the function's
; address. mark-device-exports gives the function oxide-device-export and
; deletes the marker (host data), keeping llvm.used's other entries;
; select-reachable then keeps the export external though no kernel calls it,
; and drops the helper nobody reaches.
; RUN: %oxide-opt -passes=mark-device-exports,select-reachable %s | FileCheck %s
; A marker that does not hold the named function is refused.
; RUN: not %oxide-opt -passes=mark-device-exports %S/Inputs/bad-export-marker.ll 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD

@__oxide_device_export_rust_cube = constant <{ ptr }> <{ ptr @rust_cube }>, align 8
@keep_me = internal global i32 0
@llvm.used = appending global [2 x ptr] [ptr @__oxide_device_export_rust_cube, ptr @keep_me], section "llvm.metadata"

define float @rust_cube(float %x) {
  %a = fmul float %x, %x
  %b = fmul float %a, %x
  ret float %b
}
define float @_ZN4demo6unused17h0123456789abcdefE(float %x) {
  ret float %x
}
; CHECK-NOT: __oxide_device_export_rust_cube
; CHECK: @llvm.used = appending global [1 x ptr] [ptr @keep_me], section "llvm.metadata"
; CHECK: define float @rust_cube(float %x) [[ATTR:#[0-9]+]]
; CHECK-NOT: unused
; CHECK: attributes [[ATTR]] = { "oxide-device-export" }
; BAD: error: the device export marker `__oxide_device_export_rust_cube` does not hold the address of the function `rust_cube`
