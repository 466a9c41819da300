//! Ctrl-C and SIGTERM for the long-running GPU commands: `watch` stops and prints its summary,
//! `run` passes the signal on to the command it measures.
//!
//! The handler only records the signal; the commands poll [`take`] between samples, because
//! almost nothing is safe to do inside a signal handler.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static PENDING: AtomicI32 = AtomicI32::new(0);
static FROM_TERMINAL: AtomicBool = AtomicBool::new(false);

/// A signal that arrived since the last [`take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub signal: i32,
    /// Sent by the kernel for a key press (Ctrl-C) rather than by `kill`. The terminal sends
    /// such a signal to the whole foreground process group, so a child already has it.
    pub from_terminal: bool,
}

extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // Kernel-generated signals (a terminal's Ctrl-C) have a positive si_code (SI_KERNEL);
    // kill(2), sigqueue(3) and tgkill(2) give zero or negative codes.
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t, or null which is checked.
    let from_terminal = !info.is_null() && unsafe { (*info).si_code } > 0;
    FROM_TERMINAL.store(from_terminal, Ordering::SeqCst);
    PENDING.store(signal, Ordering::SeqCst);
}

/// Routes SIGINT and SIGTERM to [`take`] instead of ending the process.
pub fn install() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid starting value; every field we rely on is set
        // below, and the handler only touches atomics, which is async-signal-safe.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal received since the last call, if any.
pub fn take() -> Option<Received> {
    let signal = PENDING.swap(0, Ordering::SeqCst);
    (signal != 0).then(|| Received {
        signal,
        from_terminal: FROM_TERMINAL.load(Ordering::SeqCst),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_process_records_the_signal_instead_of_dying() {
        install().expect("handlers install");
        // SAFETY: raise(3) on our own process; the handler installed above catches it.
        assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
        assert_eq!(
            take(),
            Some(Received {
                signal: libc::SIGTERM,
                from_terminal: false
            })
        );
        assert_eq!(take(), None);
    }
}
