; A link with no kernel entries (build scripts, proc macros, plain programs)
; goes to the system linker with its arguments unchanged.
; RUN: rm -rf %t && mkdir -p %t
; RUN: echo "not bitcode" > %t/prog-0123456789abcdef.prog.aaaa-cgu.0.rcgu.no-opt.bc
; RUN: env OXIDE_SYSTEM_LINKER=echo %oxide-link -m64 %t/prog-0123456789abcdef.prog.aaaa-cgu.0.rcgu.o -o %t/prog | FileCheck %s
; CHECK: -m64 {{.*}}prog-0123456789abcdef.prog.aaaa-cgu.0.rcgu.o -o {{.*}}prog{{$}}
