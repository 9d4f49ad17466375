#include "textflag.h"

// func dotF32AVX2(a, b []float32) float32
// Four 8-wide FMA accumulators over blocks of 32, one over blocks of 8,
// then a fixed horizontal reduction and a scalar FMA tail. The order is
// fixed, so the result depends only on the inputs.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-32, DX

loop32:
	CMPQ AX, DX
	JGE  tail8
	VMOVUPS (SI)(AX*4), Y4
	VMOVUPS 32(SI)(AX*4), Y5
	VMOVUPS 64(SI)(AX*4), Y6
	VMOVUPS 96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ $32, AX
	JMP  loop32

tail8:
	MOVQ CX, DX
	ANDQ $-8, DX

loop8:
	CMPQ AX, DX
	JGE  reduce
	VMOVUPS (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ $8, AX
	JMP  loop8

reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

scalar:
	CMPQ AX, CX
	JGE  done
	VMOVSS (SI)(AX*4), X1
	VFMADD231SS (DI)(AX*4), X1, X0
	INCQ AX
	JMP  scalar

done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dotQ8AVX2(row []byte, x []Q8Block) float32
// Per block: |w| times x signed like w (VPMADDUBSW), pairs summed to int32
// (VPMADDWD with ones), converted to float, scaled by the block's two
// scales and accumulated with FMA in eight lanes.
TEXT ·dotQ8AVX2(SB), NOSPLIT, $0-52
	MOVQ row_base+0(FP), SI
	MOVQ x_base+24(FP), DI
	MOVQ x_len+32(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL $0x00010001, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7

q8loop:
	TESTQ CX, CX
	JZ    q8done
	VMOVDQU 2(SI), Y1
	VMOVDQU 4(DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y4
	VPMADDUBSW Y4, Y3, Y5
	VPMADDWD Y7, Y5, Y5
	VCVTDQ2PS Y5, Y5
	MOVWLZX (SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VMULSS (DI), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y5, Y6, Y0
	ADDQ $34, SI
	ADDQ $36, DI
	DECQ CX
	JMP  q8loop

q8done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dotQ4AVX2(row []byte, x []Q8Block) float32
// As dotQ8AVX2, after unpacking 16 bytes of nibbles (low nibbles are
// elements 0-15, high nibbles 16-31) and subtracting 8.
TEXT ·dotQ4AVX2(SB), NOSPLIT, $0-52
	MOVQ row_base+0(FP), SI
	MOVQ x_base+24(FP), DI
	MOVQ x_len+32(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL $0x00010001, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
	MOVL $0x08080808, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9

q4loop:
	TESTQ CX, CX
	JZ    q4done
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND Y8, Y1, Y1
	VPSUBB Y9, Y1, Y1
	VMOVDQU 4(DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y4
	VPMADDUBSW Y4, Y3, Y5
	VPMADDWD Y7, Y5, Y5
	VCVTDQ2PS Y5, Y5
	MOVWLZX (SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VMULSS (DI), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y5, Y6, Y0
	ADDQ $18, SI
	ADDQ $36, DI
	DECQ CX
	JMP  q4loop

q4done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET
