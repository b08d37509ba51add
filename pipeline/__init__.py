"""CALM: composing a frozen anchor LM with frozen augmenting LMs (Bansal et al., 2024)."""
import os

# OpenMP threads that spin while they wait for each other collapse when anything else wants the same cores. On
# this 2-core machine, with one busy process beside a 2-thread training stage, mB's training ran ~13x slower (150
# steps: 251 s vs 20 s with 1 thread); speed/bench_thread_contention.py (one run, idle vs beside one busy process,
# 2 threads) measured libgomp's default at 0.97 | 0.32 of the best idle rate and PASSIVE at 0.85 | 0.62 (1 thread
# beside the busy process: 0.61): passive waiting costs ~15% on an idle CPU and halves, or worse, the loss on a
# shared one. It must be set before torch loads libgomp, which is why it lives here, the first module every stage
# imports; a value the user exported wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The CPU float path (ATen, MKL and oneDNN kernels) is pinned here for the same reason: the libraries read it when
# torch loads them. Without it the same recipe gives other figures on another CPU (pipeline/float_path.py).
from pipeline.float_path import pin as _pin_float_path  # noqa: E402

_pin_float_path()
