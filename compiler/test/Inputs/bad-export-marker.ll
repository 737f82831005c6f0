@__oxide_device_export_rust_cube = constant <{ ptr }> <{ ptr @other }>, align 8
define float @other(float %x) {
  ret float %x
}
