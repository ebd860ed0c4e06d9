"""Hopper (sm_90a) programs in CUDA C++: tensor maps and TMA copies, mbarrier pipelines, wgmma."""
