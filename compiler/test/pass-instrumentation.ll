; oxide's passes run under LLVM's pass manager, registered by their
; Passes.def names: `-passes=` takes them beside LLVM's own, and LLVM's
; instrumentation knows them. -print-after=NAME prints the IR after that
; pass (here: the invoke is a call), and only after it.
; RUN: %oxide-opt '-passes=lower-unwinding,function(simplifycfg)' -print-after=lower-unwinding %s 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
; AFTER: IR Dump After oxide::LowerUnwindingPass on [module]
; AFTER: define void @user() {
; AFTER-NEXT: entry:
; AFTER-NEXT: call void @may_panic()
; AFTER-NOT: IR Dump After

; -print-after-all shows LLVM's passes too; -verify-each checks the module
; after each of them (and is silent when it is valid).
; RUN: %oxide-opt '-passes=lower-unwinding,function(simplifycfg)' -print-after-all -verify-each %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ALL
; ALL: IR Dump After oxide::LowerUnwindingPass on [module]
; ALL: IR Dump After SimplifyCFGPass on user
; ALL-NOT: error

; -time-passes reports the time of each pass, oxide's by class.
; RUN: %oxide-opt -passes=lower-unwinding -time-passes %s 2>&1 >/dev/null | FileCheck %s --check-prefix=TIME
; TIME: Pass execution timing report
; TIME: oxide::LowerUnwindingPass

; Every row of Passes.def parses by its name, in the device pipeline's order.
; RUN: %oxide-opt -print-pipeline-passes %s -passes=build-kernel-entries,record-readonly-params,lower-unwinding,lower-panics,lower-atomic-stubs,lower-wgmma,lower-shared-address,lower-intrinsic-stubs,assign-address-spaces,map-math,lower-wide-conversions,retarget,select-reachable,reject-unsupported,link-libdevice,device-debug-info,lower-atomics,record-kernel-dimensions,tag-invariant-loads,version-bounds-checks,merge-bounds-checks,defer-shared-stores,hoist-bounds-checks,align-barriers,share-address-bases,keep-nan-payloads | FileCheck %s --check-prefix=NAMES
; NAMES: build-kernel-entries,record-readonly-params,lower-unwinding,lower-panics,lower-atomic-stubs,lower-wgmma,lower-shared-address,lower-intrinsic-stubs,assign-address-spaces,map-math,lower-wide-conversions,retarget,select-reachable,reject-unsupported,link-libdevice,device-debug-info,lower-atomics,record-kernel-dimensions,tag-invariant-loads,version-bounds-checks,merge-bounds-checks,defer-shared-stores,hoist-bounds-checks,align-barriers,share-address-bases,keep-nan-payloads

; A name that is no pass is an error that says so.
; RUN: not %oxide-opt -passes=lower-unwinding,no-such-pass %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: oxide-opt: unknown module pass 'no-such-pass'

declare i32 @rust_eh_personality(...)
declare void @may_panic()
declare void @drop_guard()

define void @user() personality ptr @rust_eh_personality {
entry:
  invoke void @may_panic() to label %ok unwind label %cleanup
ok:
  ret void
cleanup:
  %lp = landingpad { ptr, i32 } cleanup
  call void @drop_guard()
  resume { ptr, i32 } %lp
}
