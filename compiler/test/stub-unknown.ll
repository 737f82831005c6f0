; A stub the table does not name comes from a cuda-device newer than the
; device linker: an error at its first call, not its host body compiled for
; the GPU in the instruction's place (a declared stub and a defined one).
; RUN: not %oxide-opt -passes=lower-intrinsic-stubs %s 2>&1 >/dev/null | FileCheck %s

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_some_later_instruction(i64)

define void @__oxide_stub_another_later_hint(i64 %address) {
  ret void
}

declare i32 @__oxide_stub_lane_id()

define void @user(i64 %a) {
  call void @__oxide_stub_some_later_instruction(i64 %a)
  call void @__oxide_stub_another_later_hint(i64 %a)
  %lane = call i32 @__oxide_stub_lane_id()
  ret void
}
; CHECK-DAG: error: `cuda-device` calls the intrinsic stub `some_later_instruction`, which this device linker does not know (it is older than the cuda-device crate)
; CHECK-DAG: error: `cuda-device` calls the intrinsic stub `another_later_hint`, which this device linker does not know
; CHECK-DAG: rebuild oxide from the checkout the crates come from
; CHECK-NOT: lane_id
