"""The benchmarks' timing loop (tools/bench_dynamic.py, tools/bench_models.py, tools/bench/*.py):
the implementations of one case are called interleaved, round by round, so that machine noise
hits all alike; medians. Torch-free, so it imports before --isa has set the environment.
"""
import random
import statistics
import time


def interleaved_medians(fns, min_time, warmup=2, min_reps=5, max_reps=None, shuffle_seed=None,
                        clock=time.perf_counter):
    """Calls each fn `warmup` times, then one call of each fn a round until at least `min_reps`
    rounds and `min_time` seconds (wall clock) have passed, or `max_reps` rounds; returns each
    fn's median time in seconds, as `clock` measures it (time.thread_time: CPU time of the
    calling thread). shuffle_seed: a fresh order every round, from random.Random(shuffle_seed)."""
    for f in fns:
        for _ in range(warmup):
            f()
    times = [[] for _ in fns]
    order = list(range(len(fns)))
    rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
    start = time.perf_counter()
    while True:
        if rng is not None:
            rng.shuffle(order)
        for i in order:
            t0 = clock()
            fns[i]()
            times[i].append(clock() - t0)
        n = len(times[0])
        if ((max_reps is not None and n >= max_reps)
                or (n >= min_reps and time.perf_counter() - start >= min_time)):
            break
    return [statistics.median(t) for t in times]
