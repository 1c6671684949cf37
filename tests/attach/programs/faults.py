"""A program that compiles one function, then ends the way argv[1] says:

raise, exit3 (sys.exit(3)), _exit3 (os._exit(3)), wait (sleeps until a signal ends it), or
stall (starts a second compile that sleeps inside Inductor until a signal ends it).
"READY <pid>" on stdout says the first compile is done (and, for stall, the second started)."""

import os
import sys
import time

import torch

mode = sys.argv[1]
first = torch.compile(lambda x: torch.sin(x) + 1)
print(f"first {float(first(torch.ones(4)).sum()):.6f}", flush=True)


def stall(graph):
    print(f"READY {os.getpid()}", flush=True)
    time.sleep(600)


if mode == "raise":
    raise ValueError("the program fails after its first compile")
if mode == "exit3":
    sys.exit(3)
if mode == "_exit3":
    os._exit(3)
if mode == "wait":
    print(f"READY {os.getpid()}", flush=True)
    time.sleep(600)
if mode == "stall":
    torch._inductor.config.post_grad_custom_pre_pass = stall
    second = torch.compile(lambda x: torch.cos(x) * 2)
    second(torch.ones(4))
