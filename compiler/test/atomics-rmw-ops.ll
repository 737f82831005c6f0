; The read-modify-writes PTX has one `atom` for, by type: add/and/or/xor/exch
; on 32/64-bit integers, min/max signed (.s) or unsigned (.u), sub as the add
; of the negation, inc/dec (LLVM's uinc_wrap/udec_wrap) on 32-bit, add and
; sub on f32/f64 (registers .f/.d), exch of floats and of pointers (as
; integers).
; RUN: %oxide-opt -passes=lower-atomics %s | FileCheck %s

define void @ops(ptr %p, i32 %v, i64 %w, float %f, double %d, ptr %q) {
  %1 = atomicrmw add ptr %p, i64 %w acquire
  %2 = atomicrmw and ptr %p, i32 %v acquire
  %3 = atomicrmw or ptr %p, i64 %w acquire
  %4 = atomicrmw xor ptr %p, i32 %v acquire
  %5 = atomicrmw max ptr %p, i32 %v acquire
  %6 = atomicrmw min ptr %p, i64 %w acquire
  %7 = atomicrmw umax ptr %p, i64 %w acquire
  %8 = atomicrmw umin ptr %p, i32 %v acquire
  %9 = atomicrmw sub ptr %p, i32 %v acquire
  %10 = atomicrmw uinc_wrap ptr %p, i32 %v acquire
  %11 = atomicrmw udec_wrap ptr %p, i32 %v acquire
  %12 = atomicrmw fadd ptr %p, float %f acquire
  %13 = atomicrmw fsub ptr %p, double %d acquire
  %14 = atomicrmw xchg ptr %p, i64 %w acquire
  %15 = atomicrmw xchg ptr %p, float %f acquire
  %16 = atomicrmw xchg ptr %p, ptr %q acquire
  ret void
}
; CHECK-LABEL: define void @ops(
; CHECK: call i64 asm sideeffect "atom.acquire.sys.add.u64 \09$0, [$1], $2;", "=l,l,l,~{memory}"
; CHECK: call i32 asm sideeffect "atom.acquire.sys.and.b32 \09$0, [$1], $2;", "=r,l,r,~{memory}"
; CHECK: "atom.acquire.sys.or.b64
; CHECK: "atom.acquire.sys.xor.b32
; CHECK: "atom.acquire.sys.max.s32
; CHECK: "atom.acquire.sys.min.s64
; CHECK: "atom.acquire.sys.max.u64
; CHECK: "atom.acquire.sys.min.u32
; CHECK: %[[NEG:.*]] = sub i32 0, %v
; CHECK: "atom.acquire.sys.add.u32 \09$0, [$1], $2;", "=r,l,r,~{memory}"(i64 %{{.*}}, i32 %[[NEG]])
; CHECK: "atom.acquire.sys.inc.u32
; CHECK: "atom.acquire.sys.dec.u32
; CHECK: call float asm sideeffect "atom.acquire.sys.add.f32 \09$0, [$1], $2;", "=f,l,f,~{memory}"
; CHECK: %[[FNEG:.*]] = fneg double %d
; CHECK: call double asm sideeffect "atom.acquire.sys.add.f64 \09$0, [$1], $2;", "=d,l,d,~{memory}"(i64 %{{.*}}, double %[[FNEG]])
; CHECK: "atom.acquire.sys.exch.b64
; CHECK: call float asm sideeffect "atom.acquire.sys.exch.b32 \09$0, [$1], $2;", "=f,l,f,~{memory}"
; CHECK: %[[QI:.*]] = ptrtoint ptr %q to i64
; CHECK: %[[OLD:.*]] = call i64 asm sideeffect "atom.acquire.sys.exch.b64 \09$0, [$1], $2;", "=l,l,l,~{memory}"(i64 %{{.*}}, i64 %[[QI]])
; CHECK: inttoptr i64 %[[OLD]] to ptr
; CHECK-NOT: atomicrmw
