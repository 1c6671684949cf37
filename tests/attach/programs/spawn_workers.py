"""A program that compiles, then starts two worker processes the multiprocessing way
(spawn): one compiles its own function, the other imports torch and compiles nothing."""

import multiprocessing as mp

import torch


def compiling_worker(queue):
    f = torch.compile(lambda x: torch.cos(x) * 3)
    queue.put(float(f(torch.ones(4)).sum()))


def idle_worker(queue):
    queue.put(float(torch.ones(4).sum()))


if __name__ == "__main__":
    g = torch.compile(lambda x: torch.sin(x) + 1)
    print(f"main {float(g(torch.ones(4)).sum()):.6f}", flush=True)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    for target in (compiling_worker, idle_worker):
        worker = ctx.Process(target=target, args=(queue,))
        worker.start()
        print(f"worker {queue.get():.6f}", flush=True)
        worker.join()
        assert worker.exitcode == 0, worker.exitcode
