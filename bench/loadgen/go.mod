module triton-platform/bench/loadgen

go 1.26
