//! The real [`GpuSource`]: a thin adapter from nvml-wrapper to the `vramfit.snapshot/1` types.
//!
//! It only translates. Anything worth testing (formatting, thresholds, accounting) lives above
//! the trait, because this file can only run where there is an NVIDIA driver.

use std::time::SystemTime;

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{nvml_sym, nvml_try, NvmlError};
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper::structs::device::MigMode;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    nvmlMemory_t, nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
};
use vramfit_smi::{Gpu, Memory, MigDevice, Process, Snapshot, SourceFormat};

use super::error::GpuError;
use super::procfs;
use super::source::{DeviceSample, GpuSource, GpustatExtras, ProcessUsage};
use super::units::rfc3339;

/// Reads the GPUs through NVML.
pub struct NvmlSource {
    nvml: Nvml,
}

impl NvmlSource {
    /// Loads `libnvidia-ml.so.1` and initialises NVML.
    pub fn new() -> Result<NvmlSource, GpuError> {
        Nvml::init()
            .map(|nvml| NvmlSource { nvml })
            .map_err(|e| GpuError::from_nvml(e, "NVML"))
    }

    fn gpu(&self, index: u32, warnings: &mut Vec<String>) -> Gpu {
        let mut gpu = Gpu {
            index: Some(index),
            ..Gpu::default()
        };
        let label = format!("GPU {index}");
        let device = match self.nvml.device_by_index(index) {
            Ok(device) => device,
            Err(e) => {
                warnings.push(GpuError::from_nvml(e, &label).to_string());
                return gpu;
            }
        };
        let what = |field: &str| format!("{label}'s {field}");
        gpu.name = optional(device.name(), &what("name"), warnings);
        gpu.uuid = optional(device.uuid(), &what("UUID"), warnings);
        gpu.pci_bus_id = optional(
            device.pci_info().map(|p| p.bus_id),
            &what("PCI bus id"),
            warnings,
        );
        gpu.memory =
            optional(memory(&self.nvml, &device), &what("memory"), warnings).unwrap_or_default();
        gpu.utilization_pct = optional(
            device.utilization_rates().map(|u| f64::from(u.gpu)),
            &what("utilisation"),
            warnings,
        );
        gpu.temperature_c = optional(
            device.temperature(TemperatureSensor::Gpu).map(f64::from),
            &what("temperature"),
            warnings,
        );
        let mig = optional(device.mig_mode(), &what("MIG mode"), warnings);
        gpu.mig_mode = mig.as_ref().map(mig_mode_label);
        let mut listed =
            optional(processes(&device), &what("processes"), warnings).unwrap_or_default();
        if mig.is_some_and(|m| m.current == 1) {
            self.read_mig_devices(&device, &label, &mut gpu, &mut listed, warnings);
        }
        for p in &mut listed {
            p.name = p.pid.and_then(procfs::process_name);
        }
        gpu.processes = listed;
        gpu
    }

    /// Adds the MIG devices of `device` (MIG on) to `gpu`, one per GPU instance, and their
    /// processes to `listed`.
    fn read_mig_devices(
        &self,
        device: &Device,
        label: &str,
        gpu: &mut Gpu,
        listed: &mut Vec<Process>,
        warnings: &mut Vec<String>,
    ) {
        let handles = optional(
            mig_handles(device),
            &format!("{label}'s MIG device count"),
            warnings,
        )
        .unwrap_or_default();
        for (slot, mig_device) in handles {
            let mig_label = format!("{label} MIG device {slot}");
            let mig_device = match mig_device {
                Ok(d) => d,
                Err(e) => {
                    warnings.push(GpuError::from_nvml(e, &mig_label).to_string());
                    continue;
                }
            };
            let entry = self.mig_device(slot, &mig_device, &mig_label, warnings);
            // With MIG on, processes are listed per instance rather than on the parent.
            let on_mig = optional(
                processes(&mig_device),
                &format!("{mig_label}'s processes"),
                warnings,
            );
            for mut p in on_mig.unwrap_or_default() {
                p.gpu_instance = p.gpu_instance.or(entry.gpu_instance);
                p.compute_instance = p.compute_instance.or(entry.compute_instance);
                merge_process(listed, p);
            }
            // NVML has one MIG device per compute instance, but compute instances share
            // their GPU instance's memory: the schema keeps one entry per GPU instance so
            // that summing entries never counts memory twice.
            let known = gpu
                .mig_devices
                .iter()
                .any(|d| d.gpu_instance.is_some() && d.gpu_instance == entry.gpu_instance);
            if !known {
                gpu.mig_devices.push(entry);
            }
        }
    }

    /// The MIG device in `slot`: its instances, profile, UUID and memory.
    fn mig_device(
        &self,
        slot: u32,
        device: &Device,
        label: &str,
        warnings: &mut Vec<String>,
    ) -> MigDevice {
        let what = |field: &str| format!("{label}'s {field}");
        MigDevice {
            gpu_instance: instance_id(&self.nvml, device, Instance::Gpu),
            compute_instance: instance_id(&self.nvml, device, Instance::Compute),
            mig_index: Some(slot),
            profile: device.name().ok().as_deref().and_then(profile_from_name),
            uuid: optional(device.uuid(), &what("UUID"), warnings),
            memory: optional(memory(&self.nvml, device), &what("memory"), warnings)
                .unwrap_or_default(),
        }
    }
}

/// `Enabled` or `Disabled`, with nvidia-smi's `*` when a change waits for a GPU reset.
fn mig_mode_label(mode: &MigMode) -> String {
    let state = if mode.current == 1 {
        "Enabled"
    } else {
        "Disabled"
    };
    let pending = if mode.pending != mode.current {
        "*"
    } else {
        ""
    };
    format!("{state}{pending}")
}

impl GpuSource for NvmlSource {
    fn snapshot(&mut self) -> Result<Snapshot, GpuError> {
        let mut snap = Snapshot::new(SourceFormat::VramfitProbe);
        snap.timestamp = Some(rfc3339(SystemTime::now()));
        snap.host = host_name();
        let count = self
            .nvml
            .device_count()
            .map_err(|e| GpuError::from_nvml(e, "the number of GPUs"))?;
        let mut warnings = Vec::new();
        snap.driver_version = optional(
            self.nvml.sys_driver_version(),
            "the driver version",
            &mut warnings,
        );
        snap.cuda_version = optional(
            self.nvml.sys_cuda_driver_version(),
            "the CUDA version",
            &mut warnings,
        )
        .map(|v| {
            format!(
                "{}.{}",
                nvml_wrapper::cuda_driver_version_major(v),
                nvml_wrapper::cuda_driver_version_minor(v)
            )
        });
        for index in 0..count {
            snap.gpus.push(self.gpu(index, &mut warnings));
        }
        for warning in warnings {
            if !snap.warnings.contains(&warning) {
                snap.warnings.push(warning);
            }
        }
        Ok(snap)
    }

    fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
        gpus.iter()
            .map(|&index| (index, self.sample_one(index)))
            .collect()
    }

    fn gpustat_extras(&mut self, index: u32) -> GpustatExtras {
        let Ok(device) = self.nvml.device_by_index(index) else {
            return GpustatExtras::default();
        };
        // gpustat's units: whole watts (NVML gives milliwatts, gpustat floors) and percent.
        GpustatExtras {
            power_draw_w: device.power_usage().ok().map(|mw| mw / 1000),
            power_limit_w: device.enforced_power_limit().ok().map(|mw| mw / 1000),
            fan_speed_pct: device.fan_speed(0).ok(),
            encoder_pct: device.encoder_utilization().ok().map(|u| u.utilization),
            decoder_pct: device.decoder_utilization().ok().map(|u| u.utilization),
        }
    }
}

impl NvmlSource {
    /// One GPU's memory and process list. With MIG on, processes are listed per MIG device (the
    /// parent's list needs root and would repeat them), as `snapshot` does.
    fn sample_one(&self, index: u32) -> Result<DeviceSample, GpuError> {
        let label = format!("GPU {index}");
        let device = self
            .nvml
            .device_by_index(index)
            .map_err(|e| GpuError::from_nvml(e, &label))?;
        let own_memory = memory(&self.nvml, &device)
            .map_err(|e| GpuError::from_nvml(e, &format!("{label}'s memory")));
        // A GPU without MIG support answers NotSupported: it has no MIG devices.
        let mig_on = device.mig_mode().is_ok_and(|m| m.current == 1);
        let mut reads = Vec::new();
        if !mig_on {
            reads.push(ListRead {
                instance: None,
                memory: None,
                processes: processes(&device)
                    .map_err(|e| GpuError::from_nvml(e, &format!("{label}'s processes"))),
            });
        } else {
            match mig_handles(&device) {
                Ok(handles) => {
                    for (slot, mig_device) in handles {
                        let what = |field: &str| format!("{label} MIG device {slot}'s {field}");
                        reads.push(match mig_device {
                            Ok(d) => ListRead {
                                instance: Some((
                                    instance_id(&self.nvml, &d, Instance::Gpu),
                                    instance_id(&self.nvml, &d, Instance::Compute),
                                )),
                                memory: Some(
                                    memory(&self.nvml, &d)
                                        .map_err(|e| GpuError::from_nvml(e, &what("memory"))),
                                ),
                                processes: processes(&d)
                                    .map_err(|e| GpuError::from_nvml(e, &what("processes"))),
                            },
                            Err(e) => ListRead {
                                instance: None,
                                memory: None,
                                processes: Err(GpuError::from_nvml(
                                    e,
                                    &format!("{label} MIG device {slot}"),
                                )),
                            },
                        });
                    }
                }
                Err(e) => reads.push(ListRead {
                    instance: None,
                    memory: None,
                    processes: Err(GpuError::from_nvml(e, &format!("{label}'s MIG devices"))),
                }),
            }
        }
        combine_sample(index, own_memory, reads)
    }
}

/// One process list read for a sample: the GPU's own, or one MIG device's with its memory and its
/// (GPU instance, compute instance) ids.
#[derive(Debug)]
struct ListRead {
    instance: Option<(Option<u32>, Option<u32>)>,
    memory: Option<Result<Memory, GpuError>>,
    processes: Result<Vec<Process>, GpuError>,
}

/// Puts one GPU's reads together: the GPU's own memory figure, or where that failed with MIG on,
/// the sum over its GPU instances (compute instances share theirs, so each counts once); every
/// process listed, tagged with its instance; and the first list that failed, so that `run` says
/// why instead of taking a missing list for an empty one.
fn combine_sample(
    index: u32,
    memory: Result<Memory, GpuError>,
    reads: Vec<ListRead>,
) -> Result<DeviceSample, GpuError> {
    let memory = match memory {
        Ok(m) => m,
        Err(error) => mig_memory_sum(&reads).ok_or(error)?,
    };
    let mut listed = Vec::new();
    let mut process_error = None;
    for read in reads {
        match read.processes {
            Ok(list) => {
                for mut p in list {
                    if let Some((gi, ci)) = read.instance {
                        p.gpu_instance = p.gpu_instance.or(gi);
                        p.compute_instance = p.compute_instance.or(ci);
                    }
                    merge_process(&mut listed, p);
                }
            }
            Err(e) => {
                process_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    Ok(DeviceSample {
        index,
        memory,
        processes: listed
            .into_iter()
            .filter_map(|p| {
                Some(ProcessUsage {
                    pid: p.pid?,
                    used_bytes: p.used_bytes,
                })
            })
            .collect(),
        process_error,
    })
}

/// The memory of a MIG-enabled GPU as the sum over its GPU instances, each counted once (its
/// compute instances repeat its figure); `None` unless every MIG device and figure was read.
fn mig_memory_sum(reads: &[ListRead]) -> Option<Memory> {
    let mut seen = Vec::new();
    let (mut total, mut used, mut free) = (0u64, 0u64, 0u64);
    for read in reads {
        let (Some(Ok(m)), Some((Some(gi), _))) = (&read.memory, read.instance) else {
            return None;
        };
        if seen.contains(&gi) {
            continue;
        }
        seen.push(gi);
        total = total.saturating_add(m.total_bytes?);
        used = used.saturating_add(m.used_bytes?);
        free = free.saturating_add(m.free_bytes?);
    }
    (!seen.is_empty()).then_some(Memory {
        total_bytes: Some(total),
        used_bytes: Some(used),
        free_bytes: Some(free),
        reserved_bytes: None,
    })
}

/// A MIG device by its slot, or why its handle could not be had.
type MigHandle<'n> = (u32, Result<Device<'n>, NvmlError>);

/// The MIG devices of a GPU with MIG on, by slot. Empty slots are left out: the count is the
/// maximum, not the number in use.
fn mig_handles<'n>(device: &Device<'n>) -> Result<Vec<MigHandle<'n>>, NvmlError> {
    let slots = device.mig_device_count()?;
    Ok((0..slots)
        .filter_map(|slot| match device.mig_device_by_index(slot) {
            Err(NvmlError::NotFound) => None,
            other => Some((slot, other)),
        })
        .collect())
}

/// `Some` on success; `None` (with a warning unless the device simply lacks the feature) on
/// failure, so one unreadable field never loses the rest of the GPU.
fn optional<T>(result: Result<T, NvmlError>, what: &str, warnings: &mut Vec<String>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(NvmlError::NotSupported) => None,
        Err(e) => {
            warnings.push(GpuError::from_nvml(e, what).to_string());
            None
        }
    }
}

/// Memory through `nvmlDeviceGetMemoryInfo_v2`, which reports the driver's reserve; drivers
/// before 510 lack it and get the v1 call, without the reserve.
fn memory(nvml: &Nvml, device: &Device) -> Result<Memory, NvmlError> {
    match device.memory_info() {
        Ok(m) => Ok(Memory {
            total_bytes: Some(m.total),
            used_bytes: Some(m.used),
            free_bytes: Some(m.free),
            reserved_bytes: Some(m.reserved),
        }),
        Err(NvmlError::FailedToLoadSymbol(_))
        | Err(NvmlError::FunctionNotFound)
        | Err(NvmlError::NotSupported) => memory_v1(nvml, device),
        Err(NvmlError::UnexpectedVariant(code))
            if code == nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH =>
        {
            memory_v1(nvml, device)
        }
        Err(e) => Err(e),
    }
}

fn memory_v1(nvml: &Nvml, device: &Device) -> Result<Memory, NvmlError> {
    let get = nvml_sym(nvml.lib().nvmlDeviceGetMemoryInfo.as_ref())?;
    let mut raw = nvmlMemory_t {
        total: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: the handle belongs to `nvml`, which outlives this call, and `raw` is a live,
    // writable nvmlMemory_t of the layout the v1 call fills.
    nvml_try(unsafe { get(device.handle(), &mut raw) })?;
    Ok(Memory {
        total_bytes: Some(raw.total),
        used_bytes: Some(raw.used),
        free_bytes: Some(raw.free),
        reserved_bytes: None,
    })
}

enum Instance {
    Gpu,
    Compute,
}

/// A MIG device's GPU or compute instance id, which nvml-wrapper does not wrap.
fn instance_id(nvml: &Nvml, device: &Device, which: Instance) -> Option<u32> {
    let lib = nvml.lib();
    let get = match which {
        Instance::Gpu => lib.nvmlDeviceGetGpuInstanceId.as_ref(),
        Instance::Compute => lib.nvmlDeviceGetComputeInstanceId.as_ref(),
    }
    .ok()?;
    let mut id = 0;
    // SAFETY: the handle belongs to `nvml`, which outlives this call, and `id` is a live u32.
    nvml_try(unsafe { get(device.handle(), &mut id) }).ok()?;
    Some(id)
}

/// `3g.40gb` from a MIG device's name, `NVIDIA H100 80GB HBM3 MIG 3g.40gb`.
fn profile_from_name(name: &str) -> Option<String> {
    name.rsplit_once(" MIG ")
        .map(|(_, profile)| profile.trim().to_string())
        .filter(|p| !p.is_empty())
}

/// Compute and graphics processes of `device`, one entry per PID and instance (`C+G` where a
/// process is both).
fn processes(device: &Device) -> Result<Vec<Process>, NvmlError> {
    let compute = with_v2_fallback(device.running_compute_processes(), || {
        device.running_compute_processes_v2()
    })?;
    // Graphics processes are optional: headless and MIG GPUs may refuse the query.
    let graphics = with_v2_fallback(device.running_graphics_processes(), || {
        device.running_graphics_processes_v2()
    })
    .unwrap_or_default();
    let mut list = Vec::new();
    for (infos, kind) in [(compute, "C"), (graphics, "G")] {
        for info in infos {
            merge_process(&mut list, process(info, kind));
        }
    }
    Ok(list)
}

/// The v3 process calls arrived with driver 510; older drivers only have v2.
fn with_v2_fallback(
    v3: Result<Vec<ProcessInfo>, NvmlError>,
    v2: impl FnOnce() -> Result<Vec<ProcessInfo>, NvmlError>,
) -> Result<Vec<ProcessInfo>, NvmlError> {
    match v3 {
        Err(NvmlError::FailedToLoadSymbol(_)) | Err(NvmlError::FunctionNotFound) => v2(),
        other => other,
    }
}

fn process(info: ProcessInfo, kind: &str) -> Process {
    Process {
        pid: Some(info.pid),
        name: None,
        kind: Some(kind.to_string()),
        used_bytes: match info.used_gpu_memory {
            UsedGpuMemory::Used(bytes) => Some(bytes),
            UsedGpuMemory::Unavailable => None,
        },
        gpu_instance: info.gpu_instance_id,
        compute_instance: info.compute_instance_id,
    }
}

/// Adds `p`, or folds it into the entry for the same PID and instance: NVML lists a process
/// that does both compute and graphics once per list, with the same allocation.
fn merge_process(list: &mut Vec<Process>, p: Process) {
    let same = |q: &&mut Process| {
        q.pid == p.pid
            && q.gpu_instance == p.gpu_instance
            && q.compute_instance == p.compute_instance
    };
    match list.iter_mut().find(same) {
        Some(existing) => {
            if existing.kind != p.kind {
                existing.kind = Some("C+G".to_string());
            }
            existing.used_bytes = existing.used_bytes.or(p.used_bytes);
        }
        None => list.push(p),
    }
}

/// This machine's host name, where the OS gives one.
pub(crate) fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its whole length, which is what we pass.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Library directories a driver install puts `libnvidia-ml.so.1` in.
    fn nvml_installed() -> bool {
        let mut dirs: Vec<String> = [
            "/usr/lib",
            "/usr/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/lib/x86_64-linux-gnu",
            "/lib/aarch64-linux-gnu",
            "/usr/local/nvidia/lib64",
            "/usr/lib/wsl/lib",
        ]
        .map(String::from)
        .to_vec();
        if let Ok(path) = std::env::var("LD_LIBRARY_PATH") {
            dirs.extend(path.split(':').map(String::from));
        }
        dirs.iter()
            .any(|d| std::path::Path::new(d).join("libnvidia-ml.so.1").exists())
    }

    #[test]
    fn without_a_driver_new_reports_the_missing_library() {
        match NvmlSource::new() {
            // A machine with a working driver: nothing to check here.
            Ok(_) => assert!(nvml_installed()),
            Err(err) if !nvml_installed() => {
                assert!(matches!(err, GpuError::NoLibrary(_)), "{err:?}");
                let mut out = Vec::new();
                let code = err.report(&mut out);
                assert_eq!(code, std::process::ExitCode::from(3));
                let text = String::from_utf8_lossy(&out);
                assert!(text.starts_with("vramfit: no NVML library: "), "{text}");
                assert!(text.contains("libnvidia-ml.so.1"), "{text}");
                assert!(text.contains("nvidia-smi | vramfit parse-smi"), "{text}");
            }
            // The library is there but the driver is not usable: still a clean exit 3.
            Err(err) => assert_eq!(err.exit_code(), 3, "{err:?}"),
        }
    }

    #[test]
    fn mig_profiles_come_from_device_names() {
        assert_eq!(
            profile_from_name("NVIDIA H100 80GB HBM3 MIG 3g.40gb"),
            Some("3g.40gb".into())
        );
        assert_eq!(
            profile_from_name("NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb"),
            Some("1c.3g.40gb".into())
        );
        assert_eq!(profile_from_name("NVIDIA H100 80GB HBM3"), None);
    }

    #[test]
    fn compute_and_graphics_entries_merge() {
        let mut list = Vec::new();
        let p = |kind: &str, used| Process {
            pid: Some(7),
            kind: Some(kind.into()),
            used_bytes: used,
            ..Process::default()
        };
        merge_process(&mut list, p("C", None));
        merge_process(&mut list, p("G", Some(10)));
        merge_process(
            &mut list,
            Process {
                gpu_instance: Some(2),
                ..p("C", Some(5))
            },
        );
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].kind.as_deref(), Some("C+G"));
        assert_eq!(list[0].used_bytes, Some(10));
        assert_eq!(list[1].gpu_instance, Some(2));
    }

    #[test]
    fn v2_is_tried_only_when_v3_is_missing() {
        let v2 = || Ok(Vec::new());
        assert!(matches!(
            with_v2_fallback(Err(NvmlError::FunctionNotFound), v2).as_deref(),
            Ok([])
        ));
        assert!(matches!(
            with_v2_fallback(Err(NvmlError::GpuLost), || panic!("v2 must not be called")),
            Err(NvmlError::GpuLost)
        ));
    }

    /// The reads `sample_one` makes on the recorded MIG GPU: one per MIG device, each with its
    /// instance ids, memory and the processes the recording lists in its GPU instance.
    fn mig_reads() -> (Memory, Vec<ListRead>) {
        use super::super::source::tests::MIG;
        use super::super::source::{GpuSource, RecordedSource};
        let snap = RecordedSource::from_json(MIG)
            .and_then(|mut s| s.snapshot())
            .expect("fixture");
        let gpu = &snap.gpus[0];
        let reads = gpu
            .mig_devices
            .iter()
            .map(|d| ListRead {
                instance: Some((d.gpu_instance, d.compute_instance)),
                memory: Some(Ok(d.memory)),
                processes: Ok(gpu
                    .processes
                    .iter()
                    .filter(|p| p.gpu_instance == d.gpu_instance)
                    .map(|p| Process {
                        gpu_instance: None,
                        compute_instance: None,
                        ..p.clone()
                    })
                    .collect()),
            })
            .collect();
        (gpu.memory, reads)
    }

    #[test]
    fn mig_samples_take_processes_from_every_mig_device() {
        let (memory, reads) = mig_reads();
        let sample = combine_sample(0, Ok(memory), reads).expect("sample");
        assert_eq!(sample.memory, memory);
        assert_eq!(sample.processes.len(), 3);
        assert!(sample.processes.iter().all(|p| p.used_bytes.is_some()));
        assert_eq!(sample.process_error, None);
    }

    #[test]
    fn a_failed_mig_list_is_reported_not_taken_for_empty() {
        let (memory, mut reads) = mig_reads();
        reads[0].processes = Err(GpuError::NoPermission(
            "GPU 0 MIG device 0's processes".into(),
        ));
        let sample = combine_sample(0, Ok(memory), reads).expect("sample");
        assert!(sample.processes.is_empty());
        assert_eq!(
            sample.process_error.as_deref(),
            Some(
                "no permission to read GPU 0 MIG device 0's processes; run as a user who may \
                 open /dev/nvidia*"
            )
        );
        let own = ListRead {
            instance: None,
            memory: None,
            processes: Err(GpuError::Unsupported("GPU 1's processes".into())),
        };
        let sample = combine_sample(1, Ok(memory), vec![own]).expect("sample");
        assert!(sample
            .process_error
            .is_some_and(|e| e.contains("GPU 1's processes")));
    }

    #[test]
    fn without_the_gpu_figure_mig_memory_is_summed_once_per_gpu_instance() {
        let (_, mut reads) = mig_reads();
        let lost = GpuError::NoPermission("GPU 0's memory".into());
        let instances: Vec<Memory> = reads
            .iter()
            .map(|r| {
                *r.memory
                    .as_ref()
                    .and_then(|m| m.as_ref().ok())
                    .expect("memory")
            })
            .collect();
        let used: u64 = instances.iter().filter_map(|m| m.used_bytes).sum();
        // A second compute instance of the first GPU instance repeats its memory.
        let first = &reads[0];
        let repeat = ListRead {
            instance: first.instance.map(|(gi, _)| (gi, Some(1))),
            memory: Some(Ok(instances[0])),
            processes: Ok(Vec::new()),
        };
        reads.push(repeat);
        let sample = combine_sample(0, Err(lost.clone()), reads).expect("sample");
        assert_eq!(sample.memory.used_bytes, Some(used));
        assert_eq!(sample.memory.reserved_bytes, None);
        // Without MIG devices (or with one unreadable) the GPU's own error stands.
        assert_eq!(
            combine_sample(0, Err(lost.clone()), Vec::new()),
            Err(lost.clone())
        );
        let (_, mut reads) = mig_reads();
        reads[1].memory = Some(Err(GpuError::GpuLost("GPU 0 MIG device 1".into())));
        assert_eq!(combine_sample(0, Err(lost.clone()), reads), Err(lost));
    }

    #[test]
    fn host_name_is_read() {
        assert!(host_name().is_some_and(|h| !h.is_empty()));
    }
}
