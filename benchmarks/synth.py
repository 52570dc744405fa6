"""Synthetic multi-rank PyTorch profiler traces at any scale, for benchmarks.

    python benchmarks/synth.py OUT_DIR --ranks 64 --events 1000000 [--seed 0] [--gzip] [--from-one]

Each rank file looks like what ``torch.profiler.tensorboard_trace_handler`` writes for a
data-parallel transformer training loop: ProfilerStep iterations; a forward pass on the
main thread and a backward pass on the autograd thread (nested ``cpu_op`` events calling
``cudaLaunchKernel``); GEMM, elementwise, softmax and layer-norm kernels on the compute
stream; bucketed NCCL all-reduces on a communication stream that overlap the backward pass
and synchronise across ranks (a collective ends at the same time on every rank, after the
last rank arrives); host-to-device copies on a copy stream, memsets, an optimizer step and
a stream synchronisation; ``ac2g`` flow events; ``distributedInfo``; realistic kernel
names and log-normal durations. Rank 1 (when there are >= 4 ranks) computes 15% slower,
which makes it the straggler.

``--events`` is per rank and counts every JSON event, flow events included (about a third
of them: the tables hold about two thirds of that number); whole iterations are written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GEMMS = [
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
    "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
    "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn",
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align8::Params)",
]
ELEMENTWISE = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
]
BACKWARD = [
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
]
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
OPTIMIZER = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, double, bool, float*, float*)"

COMPUTE, COMM, COPY = 7, 20, 24


@dataclass(frozen=True)
class Op:
    """One launch: CPU scope names, the kernel, its stream and mean durations (us)."""

    outer: str
    inner: str
    runtime: str
    kernel: str
    stream: int
    cpu_us: float
    gpu_us: float
    thread: int  # 0 main, 1 autograd
    kind: str = "kernel"  # kernel, memcpy, memset, nccl


def program(layers: int) -> list[Op]:
    """The launches of one training iteration."""
    ops: list[Op] = [
        Op(
            "aten::copy_",
            "aten::_to_copy",
            "cudaMemcpyAsync",
            "Memcpy HtoD (Pinned -> Device)",
            COPY,
            12,
            40,
            0,
            "memcpy",
        ),
        Op("aten::zero_", "aten::fill_", "cudaMemsetAsync", "Memset (Device)", COMPUTE, 6, 3, 0, "memset"),
    ]
    for layer in range(layers):
        ops += [
            Op("aten::layer_norm", "aten::native_layer_norm", "cudaLaunchKernel", ELEMENTWISE[3], COMPUTE, 14, 18, 0),
            Op("aten::linear", "aten::addmm", "cudaLaunchKernel", GEMMS[layer % 2], COMPUTE, 20, 90, 0),
            Op("aten::softmax", "aten::_softmax", "cudaLaunchKernel", ELEMENTWISE[2], COMPUTE, 10, 25, 0),
            Op("aten::linear", "aten::addmm", "cudaLaunchKernel", GEMMS[2], COMPUTE, 20, 120, 0),
            Op("aten::gelu", "aten::gelu", "cudaLaunchKernel", ELEMENTWISE[0], COMPUTE, 9, 15, 0),
            Op("aten::add", "aten::add", "cudaLaunchKernel", ELEMENTWISE[1], COMPUTE, 8, 8, 0),
        ]
    for layer in reversed(range(layers)):
        ops += [
            Op(
                "autograd::engine::evaluate_function: AddmmBackward0",
                "aten::mm",
                "cudaLaunchKernel",
                GEMMS[3],
                COMPUTE,
                22,
                110,
                1,
            ),
            Op(
                "autograd::engine::evaluate_function: AddmmBackward0",
                "aten::mm",
                "cudaLaunchKernel",
                GEMMS[layer % 2],
                COMPUTE,
                22,
                100,
                1,
            ),
            Op(
                "autograd::engine::evaluate_function: GeluBackward0",
                "aten::gelu_backward",
                "cudaLaunchKernel",
                BACKWARD[1],
                COMPUTE,
                10,
                20,
                1,
            ),
            Op(
                "autograd::engine::evaluate_function: NativeLayerNormBackward0",
                "aten::native_layer_norm_backward",
                "cudaLaunchKernel",
                BACKWARD[0],
                COMPUTE,
                16,
                30,
                1,
            ),
            Op(
                "autograd::engine::evaluate_function: SumBackward1",
                "aten::sum",
                "cudaLaunchKernel",
                BACKWARD[2],
                COMPUTE,
                9,
                12,
                1,
            ),
        ]
        if layer % 2 == 0:  # a gradient bucket is ready: all-reduce it
            ops.append(Op("c10d::allreduce_", "record_param_comms", "cudaLaunchKernel", NCCL, COMM, 30, 180, 1, "nccl"))
    ops.append(
        Op("Optimizer.step#AdamW.step", "aten::_fused_adam_", "cudaLaunchKernel", OPTIMIZER, COMPUTE, 40, 160, 0)
    )
    return ops


def _json_str(s: str) -> str:
    return json.dumps(s)


@dataclass
class Schedule:
    """Times (us) of every op of every iteration for all ranks, computed together."""

    cpu_start: np.ndarray  # (iters, ops, ranks)
    cpu_dur: np.ndarray
    gpu_start: np.ndarray
    gpu_dur: np.ndarray
    step_start: np.ndarray  # (iters, ranks)
    step_end: np.ndarray

    def of_rank(self, rank: int) -> Schedule:
        """One rank's times, as a schedule of one rank (small enough to send to a worker)."""
        r = slice(rank, rank + 1)
        return Schedule(
            self.cpu_start[:, :, r],
            self.cpu_dur[:, :, r],
            self.gpu_start[:, :, r],
            self.gpu_dur[:, :, r],
            self.step_start[:, r],
            self.step_end[:, r],
        )


def schedule(ops: list[Op], iters: int, ranks: int, seed: int) -> Schedule:
    rng = np.random.default_rng(seed)
    n = len(ops)
    speed = np.ones(ranks)
    if ranks >= 4:
        speed[1] = 1.15
    cpu_mean = np.array([o.cpu_us for o in ops])
    gpu_mean = np.array([o.gpu_us for o in ops])
    # At least 4 us: the inner op and the launch call nest inside with room to spare.
    cpu_dur = np.maximum(4.0, rng.lognormal(np.log(cpu_mean)[None, :, None], 0.25, (iters, n, ranks)))
    gpu_dur = np.maximum(1.0, rng.lognormal(np.log(gpu_mean)[None, :, None], 0.15, (iters, n, ranks)))
    is_nccl = np.array([o.kind == "nccl" for o in ops])
    gpu_dur[:, ~is_nccl, :] *= speed[None, None, :]
    cpu_start = np.zeros((iters, n, ranks))
    gpu_start = np.zeros((iters, n, ranks))
    step_start = np.zeros((iters, ranks))
    step_end = np.zeros((iters, ranks))
    t = np.full(ranks, 1_000.0) + rng.uniform(0, 50, ranks)
    streams = sorted({o.stream for o in ops})
    for it in range(iters):
        step_start[it] = t
        free = {s: t.copy() for s in streams}
        cpu = t + 20.0
        last_comm_end = t.copy()
        for j, op in enumerate(ops):
            cpu_start[it, j] = cpu
            launch_end = cpu + cpu_dur[it, j] * 0.6
            start = np.maximum(launch_end + 4.0, free[op.stream])
            if op.kind == "nccl":
                # Waits for the gradients (compute stream), then for the slowest rank.
                start = np.maximum(start, free[COMPUTE])
                release = start.max()
                end = release + gpu_dur[it, j]
                gpu_dur[it, j] = end - start
            elif op.outer.startswith("Optimizer"):
                start = np.maximum(start, last_comm_end)  # waits for the last all-reduce
            gpu_start[it, j] = start
            free[op.stream] = start + gpu_dur[it, j]
            if op.kind == "nccl":
                last_comm_end = free[op.stream]
            cpu = cpu + cpu_dur[it, j] + 2.0
        end_all = np.maximum.reduce([free[s] for s in streams])
        step_end[it] = np.maximum(cpu, end_all) + 15.0  # cudaStreamSynchronize at the end
        t = step_end[it] + 5.0
    return Schedule(cpu_start, cpu_dur, gpu_start, gpu_dur, step_start, step_end)


def rank_json(rank: int, world: int, ops: list[Op], sch: Schedule, first_step: int) -> str:
    """The trace file of ``rank``; ``sch`` holds that rank's times only (``Schedule.of_rank``)."""
    pid = 4000 + rank
    main_tid, grad_tid = pid, pid + 17
    iters = sch.step_start.shape[0]
    out: list[str] = []
    add = out.append
    names = {o: (_json_str(o.outer), _json_str(o.inner), _json_str(o.runtime), _json_str(o.kernel)) for o in set(ops)}
    corr = 1000 + rank * 7
    ext = 1
    # Kineto's own layout: one event over several indented lines.
    for it in range(iters):
        s0, s1 = sch.step_start[it, 0], sch.step_end[it, 0]
        add(
            f'{{\n    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{first_step + it}", "pid": {pid}, "tid": {main_tid},\n'
            f'    "ts": {s0:.3f}, "dur": {s1 - s0:.3f},\n    "args": {{\n      "External id": {ext}\n    }}\n  }}'
        )
        ext += 1
        for j, op in enumerate(ops):
            outer, inner, runtime, kernel = names[op]
            tid = grad_tid if op.thread else main_tid
            c0 = sch.cpu_start[it, j, 0]
            cd = sch.cpu_dur[it, j, 0]
            g0 = sch.gpu_start[it, j, 0]
            gd = sch.gpu_dur[it, j, 0]
            corr += 1
            add(
                f'{{\n    "ph": "X", "cat": "cpu_op", "name": {outer}, "pid": {pid}, "tid": {tid},\n'
                f'    "ts": {c0:.3f}, "dur": {cd:.3f},\n    "args": {{\n      "External id": {ext},"Sequence number": {ext}, '
                f'"Fwd thread id": 0, "Input Dims": [[4096, 4096], [4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]\n    }}\n  }}'
            )
            add(
                f'{{\n    "ph": "X", "cat": "cpu_op", "name": {inner}, "pid": {pid}, "tid": {tid},\n'
                f'    "ts": {c0 + 1:.3f}, "dur": {cd - 2:.3f},\n    "args": {{\n      "External id": {ext + 1},'
                f'"Input Dims": [[4096, 4096]], "Input type": ["c10::BFloat16"]\n    }}\n  }}'
            )
            rt = c0 + cd * 0.3
            add(
                f'{{\n    "ph": "X", "cat": "cuda_runtime", "name": {runtime}, "pid": {pid}, "tid": {tid},\n'
                f'    "ts": {rt:.3f}, "dur": {cd * 0.3:.3f},\n    "args": {{\n      "External id": {ext + 1},\n'
                f'      "cbid": 211, "correlation": {corr}\n    }}\n  }}'
            )
            add(
                f'{{\n    "ph": "s", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {rt:.3f},\n    "cat": "ac2g", "name": "ac2g"\n  }}'
            )
            dev_args = (
                f'      "External id": {ext + 1},\n      "device": {rank}, "context": 1,\n'
                f'      "stream": {op.stream}, "correlation": {corr},\n'
            )
            if op.kind in ("memcpy", "memset"):
                cat, nbytes = ("gpu_memcpy", 4194304) if op.kind == "memcpy" else ("gpu_memset", 1048576)
                add(
                    f'{{\n    "ph": "X", "cat": "{cat}", "name": {kernel}, "pid": {rank}, "tid": {op.stream},\n'
                    f'    "ts": {g0:.3f}, "dur": {gd:.3f},\n    "args": {{\n{dev_args}'
                    f'      "bytes": {nbytes}, "memory bandwidth (GB/s)": {nbytes / (gd * 1e3):.3f}\n    }}\n  }}'
                )
            else:
                coll = ""
                if op.kind == "nccl":
                    coll = (
                        f',\n      "Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 25165824,'
                        f' "Out msg nelems": 25165824, "Group size": {world}, "Process Group Name": "0",'
                        f' "Process Group Description": "default_pg", "Seq": {it * 100 + j}'
                    )
                add(
                    f'{{\n    "ph": "X", "cat": "kernel", "name": {kernel}, "pid": {rank}, "tid": {op.stream},\n'
                    f'    "ts": {g0:.3f}, "dur": {gd:.3f},\n    "args": {{\n{dev_args}'
                    f'      "queued": 0,\n      "registers per thread": 128,\n      "shared memory": 49152,\n'
                    f'      "blocks per SM": 1.2,\n      "warps per SM": 9.6,\n      "grid": [132, 4, 1],\n'
                    f'      "block": [256, 1, 1],\n      "est. achieved occupancy %": 25{coll}\n    }}\n  }}'
                )
            add(
                f'{{\n    "ph": "f", "id": {corr}, "pid": {rank}, "tid": {op.stream}, "ts": {g0:.3f},\n'
                f'    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }}'
            )
            ext += 2
        corr += 1
        sync_ts = s1 - 15.0
        add(
            f'{{\n    "ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": {pid}, "tid": {main_tid},\n'
            f'    "ts": {sync_ts:.3f}, "dur": 14.000,\n    "args": {{\n      "External id": {ext},\n'
            f'      "cbid": 131, "correlation": {corr}\n    }}\n  }}'
        )
        add(
            f'{{\n    "ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": {rank}, "tid": {COMPUTE},\n'
            f'    "ts": {sync_ts + 1:.3f}, "dur": 12.000,\n    "args": {{\n      "External id": {ext}, "cuda_sync_kind": "Stream Sync",\n'
            f'      "stream": {COMPUTE}, "correlation": {corr}, "device": {rank}, "context": 1\n    }}\n  }}'
        )
    return _prefix(rank, world) + ",\n  ".join(out) + "\n]}\n"


def _prefix(rank: int, world: int) -> str:
    """A rank file up to its first timed event: the header and the metadata events."""
    pid = 4000 + rank
    main_tid, grad_tid = pid, pid + 17
    header = {
        "schemaVersion": 1,
        "deviceProperties": [
            {
                "id": i,
                "name": "NVIDIA H100 80GB HBM3",
                "totalGlobalMem": 85029158912,
                "computeMajor": 9,
                "computeMinor": 0,
                "maxThreadsPerBlock": 1024,
                "numSms": 132,
            }
            for i in range(min(world, 8))
        ],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "record_shapes": 1,
        "traceName": f"synthetic/rank-{rank}.pt.trace.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1761955200000000000,
    }
    meta = [
        f'{{"name":"process_name","ph":"M","ts":0,"pid":{pid},"tid":0,"args":{{"name":"python3"}}}}',
        f'{{"name":"process_labels","ph":"M","ts":0,"pid":{pid},"tid":0,"args":{{"labels":"CPU"}}}}',
        f'{{"name":"process_name","ph":"M","ts":0,"pid":{rank},"tid":0,"args":{{"name":"python3"}}}}',
        f'{{"name":"process_labels","ph":"M","ts":0,"pid":{rank},"tid":0,"args":{{"labels":"GPU {rank}"}}}}',
        f'{{"name":"thread_name","ph":"M","ts":0,"pid":{pid},"tid":{main_tid},"args":{{"name":"thread {main_tid} (python3)"}}}}',
        f'{{"name":"thread_name","ph":"M","ts":0,"pid":{pid},"tid":{grad_tid},"args":{{"name":"thread {grad_tid} (pt_autograd_0)"}}}}',
    ]
    head = json.dumps(header, indent=2)[:-2]
    return head + ',\n  "traceEvents": [\n  ' + ",\n  ".join(meta) + ",\n  "


def events_per_iteration(ops: list[Op]) -> int:
    return 1 + len(ops) * 6 + 2


def _write(out_dir: Path, rank: int, text: bytes, gz: bool) -> int:
    name = f"rank-{rank}.pt.trace.json" + (".gz" if gz else "")
    tmp = out_dir / f".{name}.tmp"
    tmp.write_bytes(gzip.compress(text, 1) if gz else text)
    os.replace(tmp, out_dir / name)
    return len(text)


def _write_rank(args: tuple[Path, int, int, list[Op], Schedule, int, bool]) -> int:
    out_dir, rank, world, ops, sch, first_step, gz = args
    return _write(out_dir, rank, rank_json(rank, world, ops, sch, first_step).encode(), gz)


def derive_rank(body: bytes, rank: int, world: int) -> bytes:
    """Rank ``rank``'s file made from rank 0's timed events (``body``): the header and the
    metadata written for ``rank``, and in every event rank 0's process, thread and device ids
    replaced by ``rank``'s (the same replacements ``rank_json`` would have made). Times,
    correlation ids and everything else stay rank 0's."""
    if rank:
        for old, new in (
            ('"pid": 4000,', f'"pid": {4000 + rank},'),
            ('"tid": 4000,', f'"tid": {4000 + rank},'),
            ('"tid": 4017,', f'"tid": {4017 + rank},'),
            ('"pid": 0,', f'"pid": {rank},'),
            ('"device": 0,', f'"device": {rank},'),
        ):
            body = body.replace(old.encode(), new.encode())
    return _prefix(rank, world).encode() + body


_BODY: list[bytes] = []  # rank 0's timed events, in a pool worker of ``generate(from_one=True)``


def _keep_body(body: bytes) -> None:
    _BODY[:] = [body]


def _write_derived(args: tuple[Path, int, int, bool]) -> int:
    out_dir, rank, world, gz = args
    return _write(out_dir, rank, derive_rank(_BODY[0], rank, world), gz)


def generate(
    out_dir: Path,
    ranks: int,
    events: int,
    *,
    seed: int = 0,
    layers: int = 12,
    gz: bool = False,
    workers: int | None = None,
    from_one: bool = False,
) -> int:
    """Write ``ranks`` rank files of about ``events`` events each; returns total JSON bytes.

    ``from_one``: compute rank 0 only and derive every other rank from its events
    (``derive_rank``): all ranks then have rank 0's times (no straggler; each collective ends at
    the same time everywhere) and the same size, and a large set is written at the speed of the
    disk (and of gzip) instead of the speed of formatting JSON in Python.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    ops = program(layers)
    iters = max(1, round(events / events_per_iteration(ops)))
    if from_one:
        sch0 = schedule(ops, iters, 1, seed)
        whole = rank_json(0, ranks, ops, sch0, 100).encode()
        body = whole[len(_prefix(0, ranks).encode()) :]
        del whole
        derived = [(out_dir, r, ranks, gz) for r in range(ranks)]
        if workers == 1 or ranks == 1:
            _keep_body(body)
            return sum(_write_derived(j) for j in derived)
        with ProcessPoolExecutor(
            max_workers=workers or os.cpu_count(), initializer=_keep_body, initargs=(body,)
        ) as pool:
            return sum(pool.map(_write_derived, derived))
    sch = schedule(ops, iters, ranks, seed)
    jobs = [(out_dir, r, ranks, ops, sch.of_rank(r), 100, gz) for r in range(ranks)]
    if workers == 1 or ranks == 1:
        sizes = [_write_rank(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
            sizes = list(pool.map(_write_rank, jobs))
    return sum(sizes)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--events", type=int, default=100_000, help="events per rank (approximately)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--gzip", action="store_true")
    p.add_argument(
        "--from-one",
        action="store_true",
        help="compute rank 0 only and derive the other ranks from it (fast; every rank gets rank 0's times)",
    )
    p.add_argument("--workers", type=int, default=None, help="writing processes (default: one per core)")
    a = p.parse_args()
    t = time.perf_counter()
    size = generate(
        a.out_dir, a.ranks, a.events, seed=a.seed, layers=a.layers, gz=a.gzip, workers=a.workers, from_one=a.from_one
    )
    print(f"wrote {a.ranks} ranks, {size / 1e6:.0f} MB of JSON to {a.out_dir} in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
