"""vramfit's GPU measurement kit: runs a vramfit scenario for real with PyTorch, transformers and
peft (random weights from a published config.json, no download), and writes one
`vramfit.measurement/1` document per scenario with torch's and NVML's peaks, the scenario and where
it ran. `plan` turns a matrix line or a scenario export into what to run, `build` makes the model,
`step` runs it and reads the peaks, `runner` runs a matrix under `vramfit run`, `matrix` writes the
campaign's matrix.jsonl, `provenance` records the versions.
"""
