; i128 shifts by a run-time amount are split into 64-bit halves whose every
; shift amount is in 0..=63, chosen between by `amount >= 64`; funnel shifts
; of i128 become their two shifts, split the same way; shifts by a constant
; and narrower shifts stay. The whole compile then keeps the low word's
; select for `!(1u128 << s)` (the backend's own split made it a 64-bit
; rotate, wrong for s >= 64).
; RUN: %oxide-opt -passes=expand-wide-shifts %s | FileCheck %s
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "x86_64-unknown-linux-gnu"

; CHECK-LABEL: define i128 @shl(
; CHECK-NEXT: %m = and i128 %s, 127
; CHECK-NEXT: %[[T:.*]] = trunc i128 %m to i64
; CHECK-NEXT: %[[A:.*]] = and i64 %[[T]], 127
; CHECK-NEXT: %[[IN:.*]] = and i64 %[[A]], 63
; CHECK-NEXT: %[[SPILL:.*]] = xor i64 %[[IN]], 63
; CHECK-NEXT: %[[CROSS:.*]] = icmp uge i64 %[[A]], 64
; CHECK-NEXT: %[[LO:.*]] = trunc i128 %x to i64
; CHECK-NEXT: %[[H:.*]] = lshr i128 %x, 64
; CHECK-NEXT: %[[HI:.*]] = trunc i128 %[[H]] to i64
; CHECK-NEXT: %[[LOS:.*]] = shl i64 %[[LO]], %[[IN]]
; CHECK-NEXT: %[[C1:.*]] = lshr i64 %[[LO]], 1
; CHECK-NEXT: %[[C2:.*]] = lshr i64 %[[C1]], %[[SPILL]]
; CHECK-NEXT: %[[HIS:.*]] = shl i64 %[[HI]], %[[IN]]
; CHECK-NEXT: %[[HIC:.*]] = or i64 %[[HIS]], %[[C2]]
; CHECK-NEXT: %[[NLO:.*]] = select i1 %[[CROSS]], i64 0, i64 %[[LOS]]
; CHECK-NEXT: %[[NHI:.*]] = select i1 %[[CROSS]], i64 %[[LOS]], i64 %[[HIC]]
; CHECK-NEXT: %[[ZL:.*]] = zext i64 %[[NLO]] to i128
; CHECK-NEXT: %[[ZH:.*]] = zext i64 %[[NHI]] to i128
; CHECK-NEXT: %[[UP:.*]] = shl i128 %[[ZH]], 64
; CHECK-NEXT: %r = or i128 %[[ZL]], %[[UP]]
; CHECK-NEXT: ret i128 %r
define i128 @shl(i128 %x, i128 %s) {
  %m = and i128 %s, 127
  %r = shl i128 %x, %m
  ret i128 %r
}

; CHECK-LABEL: define i128 @lshr(
; CHECK: %[[CROSS:.*]] = icmp uge i64 %{{.*}}, 64
; CHECK: %[[HIS:.*]] = lshr i64 %[[HI:.*]], %[[IN:.*]]
; CHECK-NEXT: %[[C1:.*]] = shl i64 %[[HI]], 1
; CHECK-NEXT: %[[C2:.*]] = shl i64 %[[C1]], %[[SPILL:.*]]
; CHECK-NEXT: %[[LOS:.*]] = lshr i64 %[[LO:.*]], %[[IN]]
; CHECK-NEXT: %[[LOC:.*]] = or i64 %[[LOS]], %[[C2]]
; CHECK-NEXT: select i1 %[[CROSS]], i64 %[[HIS]], i64 %[[LOC]]
; CHECK-NEXT: select i1 %[[CROSS]], i64 0, i64 %[[HIS]]
define i128 @lshr(i128 %x, i128 %s) {
  %r = lshr exact i128 %x, %s
  ret i128 %r
}

; The half an arithmetic shift vacates takes the sign.
; CHECK-LABEL: define i128 @ashr(
; CHECK: %[[CROSS:.*]] = icmp uge i64 %{{.*}}, 64
; CHECK: %[[HIS:.*]] = ashr i64 %[[HI:.*]], %[[IN:.*]]
; CHECK: %[[SIGN:.*]] = ashr i64 %[[HI]], 63
; CHECK-NEXT: select i1 %[[CROSS]], i64 %[[HIS]], i64
; CHECK-NEXT: select i1 %[[CROSS]], i64 %[[SIGN]], i64 %[[HIS]]
define i128 @ashr(i128 %x, i128 %s) {
  %r = ashr i128 %x, %s
  ret i128 %r
}

; fshl(x, y, s) = x << C | (y >> 1) >> (127 - C), C = s mod 128.
; CHECK-LABEL: define i128 @rotate_left(
; CHECK-NEXT: %[[C:.*]] = and i128 %s, 127
; CHECK-NEXT: %[[REST:.*]] = xor i128 %[[C]], 127
; CHECK-NEXT: trunc i128 %[[C]] to i64
; CHECK: %[[Y1:.*]] = lshr i128 %x, 1
; CHECK-NEXT: trunc i128 %[[REST]] to i64
; CHECK-NOT: call i128 @llvm.fshl
; CHECK: %r = or i128
define i128 @rotate_left(i128 %x, i128 %s) {
  %r = call i128 @llvm.fshl.i128(i128 %x, i128 %x, i128 %s)
  ret i128 %r
}

; fshr(x, y, s) = y >> C | (x << 1) << (127 - C).
; CHECK-LABEL: define i128 @funnel_right(
; CHECK-NEXT: %[[C:.*]] = and i128 %s, 127
; CHECK-NEXT: %[[REST:.*]] = xor i128 %[[C]], 127
; CHECK: trunc i128 %y to i64
; CHECK: %[[X1:.*]] = shl i128 %x, 1
; CHECK-NEXT: trunc i128 %[[REST]] to i64
; CHECK-NOT: call i128 @llvm.fshr
; CHECK: %r = or i128
define i128 @funnel_right(i128 %x, i128 %y, i128 %s) {
  %r = call i128 @llvm.fshr.i128(i128 %x, i128 %y, i128 %s)
  ret i128 %r
}

; CHECK-LABEL: define i128 @constant_amounts(
; CHECK-NEXT: %a = shl i128 %x, 100
; CHECK-NEXT: %b = ashr i128 %a, 3
; CHECK-NEXT: %r = call i128 @llvm.fshl.i128(i128 %b, i128 %x, i128 70)
; CHECK-NEXT: ret i128 %r
define i128 @constant_amounts(i128 %x) {
  %a = shl i128 %x, 100
  %b = ashr i128 %a, 3
  %r = call i128 @llvm.fshl.i128(i128 %b, i128 %x, i128 70)
  ret i128 %r
}

; CHECK-LABEL: define i64 @narrow(
; CHECK-NEXT: %r = shl i64 %x, %s
; CHECK-NEXT: ret i64 %r
define i64 @narrow(i64 %x, i64 %s) {
  %r = shl i64 %x, %s
  ret i64 %r
}

; PTX-LABEL: .entry _ZN4demo26__oxide_kernel_entry_wides
; PTX: and.b32 [[A:%r[0-9]+]], {{%r[0-9]+}}, 127;
; PTX-NEXT: setp.gt.u32 [[CROSS:%p[0-9]+]], [[A]], 63;
; PTX: shl.b64 [[BIT:%rd[0-9]+]],
; PTX-DAG: selp.b64 [[LO:%rd[0-9]+]], 0, [[BIT]], [[CROSS]];
; PTX-DAG: selp.b64 [[HI:%rd[0-9]+]], [[BIT]], 0, [[CROSS]];
; PTX-DAG: not.b64 [[NLO:%rd[0-9]+]], [[LO]];
; PTX-DAG: not.b64 [[NHI:%rd[0-9]+]], [[HI]];
; PTX: st.global.v2.b64 [{{%rd[0-9]+}}], {[[NLO]], [[NHI]]};
declare void @__oxide_stub_param_layout(i32, i64, i64)

define internal void @_ZN4demo26__oxide_kernel_entry_wides17h0123456789abcdefE(ptr %0, ptr %1) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 4, i64 4)
  %out = load ptr, ptr %0, align 8
  %s = load i32, ptr %1, align 4
  %a = and i32 %s, 127
  %z = zext i32 %a to i128
  %sh = shl nuw i128 1, %z
  %r = xor i128 %sh, -1
  store i128 %r, ptr %out, align 16
  ret void
}
@launch_site = global ptr @_ZN4demo26__oxide_kernel_entry_wides17h0123456789abcdefE
attributes #0 = { noinline "target-cpu"="x86-64" }

declare i128 @llvm.fshl.i128(i128, i128, i128)
declare i128 @llvm.fshr.i128(i128, i128, i128)
