; Addresses `P + (X + C)` that share P and X in different blocks (an
; unrolled loop's guarded reads of one tile column) get one base `P + X`,
; computed right after the later of P's and X's definitions, and each keeps
; only its constant: a register plus an immediate in PTX.
; RUN: %oxide-opt -passes=share-address-bases %s | FileCheck %s

@tile = internal addrspace(3) global [256 x float] undef, align 4

; CHECK-LABEL: define ptx_kernel void @rows(
; CHECK: entry:
; CHECK-NEXT: %addr.base = getelementptr float, ptr addrspace(3) @tile, i64 %y
; CHECK: then0:
; CHECK-NEXT: %v0 = load float, ptr addrspace(3) %addr.base, align 4
; CHECK: then1:
; CHECK-NEXT: %a1 = getelementptr float, ptr addrspace(3) %addr.base, i64 8
; CHECK-NEXT: %v1 = load float, ptr addrspace(3) %a1, align 4
; CHECK: then2:
; CHECK-NEXT: %a2 = getelementptr float, ptr addrspace(3) %addr.base, i64 16
define ptx_kernel void @rows(i64 %y, i1 %c0, i1 %c1, i1 %c2, ptr %out) {
entry:
  %r1 = add nuw nsw i64 %y, 8
  %r2 = or disjoint i64 %y, 16
  br i1 %c0, label %then0, label %next0
then0:
  %a0 = getelementptr inbounds float, ptr addrspace(3) @tile, i64 %y
  %v0 = load float, ptr addrspace(3) %a0, align 4
  store float %v0, ptr %out, align 4
  br label %next0
next0:
  br i1 %c1, label %then1, label %next1
then1:
  %a1 = getelementptr inbounds float, ptr addrspace(3) @tile, i64 %r1
  %v1 = load float, ptr addrspace(3) %a1, align 4
  store float %v1, ptr %out, align 4
  br label %next1
next1:
  br i1 %c2, label %then2, label %done
then2:
  %a2 = getelementptr inbounds float, ptr addrspace(3) @tile, i64 %r2
  %v2 = load float, ptr addrspace(3) %a2, align 4
  store float %v2, ptr %out, align 4
  br label %done
done:
  ret void
}

; The base goes after the later definition: here the pointer, computed
; after the index, and after the phis where the index is a phi.
; CHECK-LABEL: define ptx_kernel void @late(
; CHECK: join:
; CHECK-NEXT: %x = phi i64
; CHECK-NEXT: %p = getelementptr inbounds i8, ptr %in, i64 64
; CHECK-NEXT: %addr.base = getelementptr float, ptr %p, i64 %x
define ptx_kernel void @late(ptr %in, i64 %i, i64 %j, i1 %c, i1 %d, ptr %out) {
entry:
  br i1 %c, label %left, label %join
left:
  br label %join
join:
  %x = phi i64 [ %i, %entry ], [ %j, %left ]
  %p = getelementptr inbounds i8, ptr %in, i64 64
  %x1 = add i64 %x, 1
  br i1 %d, label %a, label %b
a:
  %pa = getelementptr inbounds float, ptr %p, i64 %x1
  %va = load float, ptr %pa, align 4
  store float %va, ptr %out, align 4
  ret void
b:
  %pb = getelementptr inbounds float, ptr %p, i64 %x
  %vb = load float, ptr %pb, align 4
  store float %vb, ptr %out, align 4
  ret void
}

; Left alone: addresses in one block (the backend's EarlyCSE shares those),
; a single address, different variable parts, a 32-bit index (the GEP would
; sign-extend it) and a constant index.
; CHECK-LABEL: define ptx_kernel void @alone(
; CHECK-NOT: addr.base
; CHECK: ret void
define ptx_kernel void @alone(i64 %y, i64 %z, i64 %q, i32 %w, i1 %c, ptr %out) {
entry:
  %y1 = add i64 %y, 1
  %s0 = getelementptr float, ptr addrspace(3) @tile, i64 %y
  %s1 = getelementptr float, ptr addrspace(3) @tile, i64 %y1
  %v0 = load float, ptr addrspace(3) %s0, align 4
  %v1 = load float, ptr addrspace(3) %s1, align 4
  %w1 = add i32 %w, 1
  br i1 %c, label %then, label %else
then:
  %t0 = getelementptr float, ptr addrspace(3) @tile, i64 %z
  %t1 = getelementptr float, ptr addrspace(3) @tile, i32 %w
  %t2 = getelementptr float, ptr addrspace(3) @tile, i64 3
  %u0 = load float, ptr addrspace(3) %t0, align 4
  %u1 = load float, ptr addrspace(3) %t1, align 4
  %u2 = load float, ptr addrspace(3) %t2, align 4
  store float %u0, ptr %out, align 4
  store float %u1, ptr %out, align 4
  store float %u2, ptr %out, align 4
  ret void
else:
  %e0 = getelementptr float, ptr addrspace(3) @tile, i64 %q
  %e1 = getelementptr float, ptr addrspace(3) @tile, i32 %w1
  %f0 = load float, ptr addrspace(3) %e0, align 4
  %f1 = load float, ptr addrspace(3) %e1, align 4
  store float %f0, ptr %out, align 4
  store float %f1, ptr %out, align 4
  ret void
}
