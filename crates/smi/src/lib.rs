//! Sans-IO parsers for what `nvidia-smi` (every format), `gpustat --json` and `vramfit probe --json` print,
//! and the `vramfit.snapshot/1` schema they all produce.
