/* dlsym interposer entry (libripple-cuhook.so). Calls ripple_dlsym_hook(handle, name);
 * a non-NULL result is returned, NULL means "not ours": tail-jump to the real dlsym with
 * the original arguments and the caller's return address, so RTLD_NEXT keeps meaning
 * "after the caller" (a C wrapper would make it "after libripple-cuhook.so"). */
#if defined(__x86_64__)
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
  push %rdi
  .cfi_adjust_cfa_offset 8
  push %rsi
  .cfi_adjust_cfa_offset 8
  sub $8, %rsp
  .cfi_adjust_cfa_offset 8
  call ripple_dlsym_hook
  add $8, %rsp
  .cfi_adjust_cfa_offset -8
  pop %rsi
  .cfi_adjust_cfa_offset -8
  pop %rdi
  .cfi_adjust_cfa_offset -8
  test %rax, %rax
  jz 1f
  ret
1:
  jmp *ripple_real_dlsym_ptr(%rip)
  .cfi_endproc
  .size dlsym, .-dlsym
#elif defined(__aarch64__)
  .text
  .globl dlsym
  .type dlsym, %function
  .p2align 4
dlsym:
  .cfi_startproc
  stp x29, x30, [sp, #-32]!
  .cfi_def_cfa_offset 32
  .cfi_offset 29, -32
  .cfi_offset 30, -24
  mov x29, sp
  stp x0, x1, [sp, #16]
  bl ripple_dlsym_hook
  mov x2, x0
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #32
  .cfi_def_cfa_offset 0
  cbnz x2, 1f
  adrp x16, ripple_real_dlsym_ptr
  ldr x16, [x16, :lo12:ripple_real_dlsym_ptr]
  br x16
1:
  mov x0, x2
  ret
  .cfi_endproc
  .size dlsym, .-dlsym
#else
#error "dlsym_trampoline.S: no trampoline for this architecture"
#endif
  .section .note.GNU-stack,"",%progbits
