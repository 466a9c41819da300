//! What Linux's `/proc` says about the processes NVML lists: their names and owners for `probe`,
//! and the parent links from which `run` finds the process tree of the command it measures.
//!
//! Inside a container NVML reports host PIDs that this `/proc` may not show; every lookup here
//! therefore answers `None` (or leaves the PID out) instead of failing.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;

/// The process's short name, as `ps` and gpustat show it, where `/proc` lets us read it.
pub fn process_name(pid: u32) -> Option<String> {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok();
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok();
    choose_name(comm.as_deref(), cmdline.as_deref())
}

/// `comm` is cut at 15 bytes by the kernel; where it may have been cut and argv[0] continues
/// it, the longer name wins (the same rule psutil uses, so names match gpustat's).
pub(crate) fn choose_name(comm: Option<&str>, cmdline: Option<&[u8]>) -> Option<String> {
    const COMM_LEN: usize = 15;
    let comm = comm.map(str::trim_end).filter(|c| !c.is_empty());
    let argv0 = cmdline
        .and_then(|c| c.split(|&b| b == 0).next())
        .map(String::from_utf8_lossy)
        .map(|a| a.rsplit('/').next().unwrap_or_default().to_string())
        .filter(|a| !a.is_empty());
    match (comm, argv0) {
        (Some(c), Some(a)) if c.len() >= COMM_LEN && a.starts_with(c) => Some(a),
        (Some(c), _) => Some(c.to_string()),
        (None, a) => a,
    }
}

/// The login name owning `pid`, from the owner of `/proc/<pid>` and `/etc/passwd`.
pub fn process_user(pid: u32) -> Option<String> {
    let uid = fs::metadata(format!("/proc/{pid}")).ok()?.uid();
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    user_from_passwd(&passwd, uid)
}

pub(crate) fn user_from_passwd(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let line_uid: u32 = fields.nth(1)?.parse().ok()?;
        (line_uid == uid && !name.is_empty()).then(|| name.to_string())
    })
}

/// The process's arguments, as gpustat's `full_command` lists them.
pub fn command_line(pid: u32) -> Option<Vec<String>> {
    split_cmdline(&fs::read(format!("/proc/{pid}/cmdline")).ok()?)
}

/// `/proc/<pid>/cmdline`'s NUL-separated arguments; `None` for a kernel thread or a zombie,
/// which have none.
pub(crate) fn split_cmdline(raw: &[u8]) -> Option<Vec<String>> {
    let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
    (!raw.is_empty()).then(|| {
        raw.split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    })
}

/// The process's resident memory in bytes (gpustat's `cpu_memory_usage`), from the second field
/// of `/proc/<pid>/statm`, which counts pages.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let statm = fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf(3) only reads a system constant.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    pages.checked_mul(page)
}

/// Every visible process's parent, from `/proc/<pid>/stat`.
pub fn parent_map() -> HashMap<u32, u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            // A process can exit between listing and reading; it is simply not in the tree.
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, stat_parent(&stat)?))
        })
        .collect()
}

/// The parent PID in a `/proc/<pid>/stat` line.
///
/// The name field is in parentheses and may itself hold spaces and `)`, so the fields are
/// counted from the last `)`.
pub(crate) fn stat_parent(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

/// `root` and every process descended from it.
pub fn descendants(root: u32, parents: &HashMap<u32, u32>) -> HashSet<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, &parent) in parents {
        children.entry(parent).or_default().push(pid);
    }
    let mut tree = HashSet::from([root]);
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            // `insert` refusing a PID already seen also guards against a cycle from PID reuse.
            if tree.insert(child) {
                queue.push(child);
            }
        }
    }
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parent_survives_odd_names() {
        assert_eq!(stat_parent("42 (python3) S 7 42 42 0 -1"), Some(7));
        assert_eq!(stat_parent("42 (a) b) (c) R 1234 1 1"), Some(1234));
        assert_eq!(stat_parent("42 (x y z) S 9"), Some(9));
        assert_eq!(stat_parent("garbage"), None);
        assert_eq!(stat_parent("42 (cut) S"), None);
    }

    #[test]
    fn names_prefer_untruncated_argv0() {
        assert_eq!(
            choose_name(Some("python3\n"), Some(b"/usr/bin/python3\0train.py\0")),
            Some("python3".into())
        );
        let long = b"/opt/bin/torchrun-elastic-agent\0--nproc\0";
        assert_eq!(
            choose_name(Some("torchrun-elasti\n"), Some(long)),
            Some("torchrun-elastic-agent".into())
        );
        // A renamed thread (prctl) keeps its own name.
        assert_eq!(
            choose_name(Some("pt_main_thread\n"), Some(b"python\0")),
            Some("pt_main_thread".into())
        );
        assert_eq!(
            choose_name(None, Some(b"/bin/sleep\0")),
            Some("sleep".into())
        );
        assert_eq!(choose_name(Some("\n"), Some(b"")), None);
        assert_eq!(choose_name(None, None), None);
    }

    #[test]
    fn passwd_lookup() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      broken line\n\
                      alice:x:1000:1000::/home/alice:/bin/sh\n";
        assert_eq!(user_from_passwd(passwd, 1000), Some("alice".into()));
        assert_eq!(user_from_passwd(passwd, 0), Some("root".into()));
        assert_eq!(user_from_passwd(passwd, 5), None);
    }

    #[test]
    fn descendants_walk_the_whole_tree() {
        let parents = HashMap::from([(10, 1), (11, 10), (12, 11), (13, 10), (20, 1), (21, 20)]);
        let tree = descendants(10, &parents);
        assert_eq!(tree, HashSet::from([10, 11, 12, 13]));
        assert_eq!(descendants(99, &parents), HashSet::from([99]));
        let cycle = HashMap::from([(5, 6), (6, 5)]);
        assert_eq!(descendants(5, &cycle), HashSet::from([5, 6]));
    }

    #[test]
    fn command_lines_split_on_nul() {
        assert_eq!(
            split_cmdline(b"python3\0train.py\0--lr\0\0"),
            Some(vec![
                "python3".into(),
                "train.py".into(),
                "--lr".into(),
                String::new()
            ])
        );
        assert_eq!(split_cmdline(b"sleep\0"), Some(vec!["sleep".into()]));
        assert_eq!(split_cmdline(b""), None);
    }

    #[test]
    fn this_process_is_visible() {
        let me = std::process::id();
        assert!(command_line(me).is_some_and(|args| !args.is_empty()));
        assert!(resident_bytes(me).is_some_and(|b| b > 0));
        let me = std::process::id();
        let parents = parent_map();
        assert_eq!(
            parents.get(&me).copied(),
            Some(std::os::unix::process::parent_id())
        );
        assert!(process_name(me).is_some());
    }
}
