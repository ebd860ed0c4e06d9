"""Programs that span several simulated GPUs (`gpusim.System`): see matmul.py."""
