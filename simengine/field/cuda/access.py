"""Flat loads and stores for the CUDA field kernels (numba-cuda ``intrinsic`` extension API and
llvmlite): plain and read-only (``ld.global.nc``) loads, pair loads/stores."""
from __future__ import annotations

from numba import cuda

from .config import SIMULATOR


# --------------------------------------------------------------------------------------------
# flat loads / stores without numba's index overhead
# --------------------------------------------------------------------------------------------
# The kernels index flat (1-D) buffers with an int64 offset. numba's own ``a[i]`` adds a
# negative-index wraparound per access; the intrinsics below emit a bare address computation and
# either a plain load or ``ld.global.nc`` (the read-only/texture data path, CUDA's ``__ldg``).
@cuda.jit(device=True)
def index_load(a, i):
    """``a[i]`` with numba's own indexing (negative-index wraparound): the simulator's form of
    every load below, and the comparison form of the kernels that use the flat ones."""
    return a[i]


@cuda.jit(device=True)
def index_store(a, i, v):
    """``a[i] = v`` with numba's own indexing (see :func:`index_load`)."""
    a[i] = v


def _make_access():
    if SIMULATOR:
        return index_load, index_load, index_store, False

    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    def _ld(nc):
        @intrinsic
        def impl(typingctx, arr, idx):
            sig = arr.dtype(arr, idx)

            def codegen(context, builder, sig, args):
                aty = sig.args[0]
                ary = context.make_array(aty)(context, builder, value=args[0])
                ptr = builder.gep(ary.data, [args[1]])
                if not nc:
                    return builder.load(ptr)
                llty = context.get_value_type(aty.dtype)
                bw = aty.dtype.bitwidth
                fnty = ir.FunctionType(llty, [llty.as_pointer()])
                asm = ir.InlineAsm(fnty, f"ld.global.nc.f{bw} $0, [$1];",
                                   "=f,l" if bw == 32 else "=d,l")
                return builder.call(asm, [ptr])

            return sig, codegen

        return impl

    @intrinsic
    def st(typingctx, arr, idx, val):
        sig = types.void(arr, idx, arr.dtype)

        def codegen(context, builder, sig, args):
            aty = sig.args[0]
            ary = context.make_array(aty)(context, builder, value=args[0])
            builder.store(args[2], builder.gep(ary.data, [args[1]]))
            return context.get_dummy_value()

        return sig, codegen

    return _ld(False), _ld(True), st, True


LD, LDNC, ST, HAVE_NC_LOADS = _make_access()


def _make_access2():
    """Pair loads / stores of two consecutive elements ``a[i], a[i+1]`` (``i`` even, the buffer
    aligned to 2 elements): ``ld.global.nc.v2.f32/.f64`` (LDNC2), a plain 8/16-byte vector load
    (LD2) and store (ST2) — one instruction for two cells along x."""
    if SIMULATOR:

        @cuda.jit(device=True)
        def ld2(a, i):
            return a[i], a[i + 1]

        @cuda.jit(device=True)
        def st2(a, i, v0, v1):
            a[i] = v0
            a[i + 1] = v1

        return ld2, ld2, st2

    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    def _ld2(nc):
        @intrinsic
        def impl(typingctx, arr, idx):
            sig = types.UniTuple(arr.dtype, 2)(arr, idx)

            def codegen(context, builder, sig, args):
                aty = sig.args[0]
                ary = context.make_array(aty)(context, builder, value=args[0])
                ptr = builder.gep(ary.data, [args[1]])
                llty = context.get_value_type(aty.dtype)
                bw = aty.dtype.bitwidth
                if nc:
                    c = "f" if bw == 32 else "d"
                    fnty = ir.FunctionType(ir.LiteralStructType([llty, llty]),
                                           [llty.as_pointer()])
                    asm = ir.InlineAsm(fnty, f"ld.global.nc.v2.f{bw} {{$0, $1}}, [$2];",
                                       f"={c},={c},l")
                    res = builder.call(asm, [ptr])
                    v0 = builder.extract_value(res, 0)
                    v1 = builder.extract_value(res, 1)
                else:
                    vty = ir.VectorType(llty, 2)
                    vec = builder.load(builder.bitcast(ptr, vty.as_pointer()), align=bw // 4)
                    v0 = builder.extract_element(vec, ir.Constant(ir.IntType(32), 0))
                    v1 = builder.extract_element(vec, ir.Constant(ir.IntType(32), 1))
                return context.make_tuple(builder, sig.return_type, [v0, v1])

            return sig, codegen

        return impl

    @intrinsic
    def st2(typingctx, arr, idx, v0, v1):
        sig = types.void(arr, idx, arr.dtype, arr.dtype)

        def codegen(context, builder, sig, args):
            aty = sig.args[0]
            ary = context.make_array(aty)(context, builder, value=args[0])
            ptr = builder.gep(ary.data, [args[1]])
            llty = context.get_value_type(aty.dtype)
            vty = ir.VectorType(llty, 2)
            vec = ir.Constant(vty, ir.Undefined)
            vec = builder.insert_element(vec, args[2], ir.Constant(ir.IntType(32), 0))
            vec = builder.insert_element(vec, args[3], ir.Constant(ir.IntType(32), 1))
            builder.store(vec, builder.bitcast(ptr, vty.as_pointer()),
                          align=aty.dtype.bitwidth // 4)
            return context.get_dummy_value()

        return sig, codegen

    return _ld2(False), _ld2(True), st2


LD2, LDNC2, ST2 = _make_access2()
