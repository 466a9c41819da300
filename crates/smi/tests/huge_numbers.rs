//! Sizes near and past `u64::MAX` bytes in every format: nothing overflows (debug and fuzz builds
//! panic on overflow), a size that fits in bytes is read exactly, and one that does not is `None`.

use proptest::prelude::*;
use vramfit_smi::{parse, Snapshot};

const MIB: u64 = 1_048_576;

/// Mostly values around the largest MiB count that still fits in bytes, where `x + 2 MiB`-style
/// arithmetic overflows, plus small and arbitrary ones.
fn mib_count() -> impl Strategy<Value = u64> {
    let edge = u64::MAX / MIB;
    prop_oneof![
        (edge - 4)..=(edge + 4),
        Just(u64::MAX),
        (u64::MAX - 4)..=u64::MAX,
        0..100_000u64,
        any::<u64>(),
    ]
}

/// What a paste printing `n` MiB must read as.
fn bytes(n: u64) -> Option<u64> {
    n.checked_mul(MIB)
}

/// Uses every derived figure, so arithmetic in the helpers is exercised too, and checks that the
/// snapshot survives a JSON round trip.
fn exercise(snap: &Snapshot) {
    for gpu in &snap.gpus {
        let _ = gpu.used_by_processes();
        let _ = gpu.memory.free_or_derived();
        for mig in &gpu.mig_devices {
            let _ = mig.memory.free_or_derived();
        }
    }
    let json = serde_json::to_string(snap).unwrap();
    assert_eq!(&parse(&json).unwrap(), snap);
}

fn table(total: u64, used: u64, process: u64) -> String {
    format!(
        "+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090        On  |   00000000:01:00.0 Off |                  Off |
|  0%   44C    P8             36W /  450W |  {used}MiB /  {total}MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|=========================================================================================|
|    0   N/A  N/A         3230642      G   /usr/lib/xorg/Xorg                 {process}MiB |
+-----------------------------------------------------------------------------------------+"
    )
}

fn query_text(total: u64, used: u64, free: u64, process: u64) -> String {
    format!(
        "==============NVSMI LOG==============

Attached GPUs                             : {total}
GPU 00000000:01:00.0
    Product Name                          : NVIDIA L40S
    FB Memory Usage
        Total                             : {total} MiB
        Reserved                          : {free} MiB
        Used                              : {used} MiB
        Free                              : {free} MiB
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : {process}
            Type                          : C
            Name                          : python
            Used GPU Memory               : {process} MiB
"
    )
}

fn xml(total: u64, used: u64, free: u64, process: u64) -> String {
    format!(
        "<?xml version=\"1.0\" ?>
<nvidia_smi_log>
  <attached_gpus>{total}</attached_gpus>
  <gpu id=\"00000000:01:00.0\">
    <product_name>NVIDIA L40S</product_name>
    <fb_memory_usage>
      <total>{total} MiB</total>
      <reserved>{free} MiB</reserved>
      <used>{used} MiB</used>
      <free>{free} MiB</free>
    </fb_memory_usage>
    <processes>
      <process_info>
        <pid>{process}</pid>
        <type>C</type>
        <process_name>python</process_name>
        <used_memory>{process} MiB</used_memory>
      </process_info>
    </processes>
  </gpu>
</nvidia_smi_log>"
    )
}

/// The totals of the snapshot's single GPU and the memory of its single process.
fn read(snap: &Snapshot) -> (Option<u64>, Option<u64>, Option<u64>) {
    let gpu = &snap.gpus[0];
    (
        gpu.memory.total_bytes,
        gpu.memory.used_bytes,
        gpu.processes.first().and_then(|p| p.used_bytes),
    )
}

/// The reviewer's case: `t + 2 MiB` overflowed while checking a header-less row.
#[test]
fn headerless_csv_with_the_largest_total_does_not_overflow() {
    let snap = parse("17592186044415,0,0").unwrap();
    assert_eq!(
        snap.gpus[0].memory.total_bytes,
        Some(17_592_186_044_415 * MIB)
    );
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(0));
    assert_eq!(snap.gpus[0].memory.free_bytes, Some(0));
    let snap = parse("17592186044414, 17592186044414, 0").unwrap();
    assert_eq!(
        snap.gpus[0].memory.used_bytes,
        Some(17_592_186_044_414 * MIB)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn table_sizes(total in mib_count(), used in mib_count(), process in mib_count()) {
        let snap = parse(&table(total, used, process)).unwrap();
        prop_assert_eq!(read(&snap), (bytes(total), bytes(used), bytes(process)));
        exercise(&snap);
    }

    #[test]
    fn query_gpu_csv_sizes(total in mib_count(), used in mib_count(), free in mib_count()) {
        let with_header = format!(
            "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB]\n\
             0, NVIDIA L40S, {total}, {used}, {free}"
        );
        let snap = parse(&with_header).unwrap();
        prop_assert_eq!(snap.gpus[0].memory.total_bytes, bytes(total));
        prop_assert_eq!(snap.gpus[0].memory.used_bytes, bytes(used));
        prop_assert_eq!(snap.gpus[0].memory.free_bytes, bytes(free));
        exercise(&snap);
        // Header-less rows go through the field-order guess, which compares the sizes.
        for row in [
            format!("{total}, {used}, {free}"),
            format!("{total} MiB, {used} MiB, {free} MiB"),
            format!("{used}, {total}"),
            format!("0, NVIDIA L40S, {total}, {used}, {free}"),
            format!("{free}, {total}, {used}, {free}, P0, 40, NVIDIA L40S, GPU-1, Default, 0, 0, 0"),
        ] {
            if let Ok(snap) = parse(&row) {
                exercise(&snap);
            }
        }
    }

    #[test]
    fn compute_apps_csv_sizes(used in mib_count(), pid in mib_count()) {
        let text = format!(
            "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\nGPU-1, {pid}, python, {used} MiB"
        );
        let snap = parse(&text).unwrap();
        prop_assert_eq!(snap.gpus[0].processes[0].used_bytes, bytes(used));
        exercise(&snap);
    }

    #[test]
    fn query_text_sizes(
        total in mib_count(),
        used in mib_count(),
        free in mib_count(),
        process in mib_count(),
    ) {
        let snap = parse(&query_text(total, used, free, process)).unwrap();
        prop_assert_eq!(read(&snap), (bytes(total), bytes(used), bytes(process)));
        prop_assert_eq!(snap.gpus[0].memory.reserved_bytes, bytes(free));
        exercise(&snap);
    }

    #[test]
    fn xml_sizes(total in mib_count(), used in mib_count(), free in mib_count(), process in mib_count()) {
        let snap = parse(&xml(total, used, free, process)).unwrap();
        prop_assert_eq!(read(&snap), (bytes(total), bytes(used), bytes(process)));
        prop_assert_eq!(snap.gpus[0].memory.free_bytes, bytes(free));
        exercise(&snap);
    }

    #[test]
    fn gpustat_sizes(total in mib_count(), used in mib_count(), process in mib_count()) {
        let text = format!(
            r#"{{"hostname":"h","gpus":[{{"index":0,"name":"X","memory.total":{total},
            "memory.used":{used},"processes":[{{"pid":1,"gpu_memory_usage":{process}}}]}}]}}"#
        );
        let snap = parse(&text).unwrap();
        prop_assert_eq!(read(&snap), (bytes(total), bytes(used), bytes(process)));
        exercise(&snap);
    }

    #[test]
    fn snapshot_json_sizes(total in any::<u64>(), used in any::<u64>(), a in any::<u64>(), b in any::<u64>()) {
        let text = format!(
            r#"{{"schema":"vramfit.snapshot/1","gpus":[{{"memory":{{"total_bytes":{total},
            "used_bytes":{used}}},"processes":[{{"used_bytes":{a}}},{{"used_bytes":{b}}}]}}]}}"#
        );
        let snap = parse(&text).unwrap();
        prop_assert_eq!(snap.gpus[0].memory.total_bytes, Some(total));
        prop_assert_eq!(snap.gpus[0].memory.free_or_derived(), Some(total.saturating_sub(used)));
        prop_assert_eq!(snap.gpus[0].used_by_processes(), Some(a.saturating_add(b)));
        exercise(&snap);
    }

    #[test]
    fn nvitop_sizes(total in any::<u64>(), used in any::<u64>(), repr in mib_count()) {
        let text = format!(
            "PhysicalDevice(index=0, name=\"X\", total_memory={repr}MiB)\n\
             PhysicalDeviceSnapshot(\n    index=0,\n    memory_total={total},\n    \
             memory_used={used},\n)\n"
        );
        let snap = parse(&text).unwrap();
        prop_assert_eq!(snap.gpus[0].memory.total_bytes, Some(total));
        prop_assert_eq!(snap.gpus[0].memory.used_bytes, Some(used));
        exercise(&snap);
    }
}
