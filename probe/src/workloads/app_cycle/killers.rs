//! Who ends an app, and the counts of why: the activity manager (the cached-app limit, trims),
//! lmkd on PSI triggers (`lmkd`), the controller after a launch that timed out, and the kernel's
//! OOM killer, which sees the apps' order through their oom_score_adj.

use super::*;

/// Who killed an app, as far as benchlab knows.
#[derive(Clone, Copy)]
pub(super) enum Killer {
    ActivityManager,
    Lmkd(&'static str),
    /// the controller, after a launch that did not answer in time
    Timeout,
}

#[derive(Default)]
pub(super) struct Kills {
    pub(super) am: u64,
    pub(super) lmk: BTreeMap<&'static str, u64>,
    pub(super) oom: u64,
    pub(super) timeouts: u64,
    pub(super) crashes: u64,
}

/// Android's oom_score_adj of the foreground app, the previous app and the cached range.
pub(super) const FOREGROUND_APP_ADJ: i32 = 0;
pub(super) const PREVIOUS_APP_ADJ: i32 = 700;
pub(super) const CACHED_APP_MIN_ADJ: i32 = 900;
pub(super) const CACHED_APP_MAX_ADJ: i32 = 999;
/// The activity manager trims when few cached apps are left (Android's TRIM_LOW_THRESHOLD and
/// TRIM_CRITICAL_THRESHOLD) or, here, when lmkd saw a complete-stall event within the last window.
pub(super) const TRIM_LOW_CACHED: usize = 5;
pub(super) const TRIM_CRITICAL_CACHED: usize = 3;
pub(super) const PRESSURE_RECENT_NS: u64 = 2_000_000_000;

impl Controller {
    pub(super) fn ended(&mut self, pid: i32, status: i32) {
        match self.sent.remove(&pid) {
            Some(Killer::ActivityManager) => self.kills.am += 1,
            Some(Killer::Lmkd(reason)) => *self.kills.lmk.entry(reason).or_default() += 1,
            Some(Killer::Timeout) => self.kills.timeouts += 1,
            None if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL => {
                self.kills.oom += 1
            }
            None => self.kills.crashes += 1,
        }
        if let Some(slot) = self.slots.iter_mut().find(|s| s.pid == pid) {
            *slot = Slot::default();
        }
    }

    pub(super) fn kill(&mut self, app: usize, killer: Killer) {
        let pid = self.slots[app].pid;
        self.sent.insert(pid, killer);
        // SAFETY: our own child, not yet reaped (its slot still names it).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        self.gone(app);
    }

    /// lmkd's turn after a stall event: its decision, then the victim with the highest adj
    /// (the least recently used among equals); the foreground app is never its victim.
    pub(super) fn pressure(&mut self, event: lmkd::Event) {
        let now = monotonic_ns();
        let Some(decision) = self.lmkd.as_mut().and_then(|l| l.decide(event, now)) else {
            return;
        };
        let victim = (0..self.slots.len())
            .filter(|&a| self.alive(a))
            .map(|a| (self.adj(a), a))
            .filter(|&(adj, _)| adj > FOREGROUND_APP_ADJ && adj >= decision.min_adj)
            .max_by_key(|&(adj, a)| (adj, std::cmp::Reverse(self.slots[a].used)));
        if let Some((_, app)) = victim {
            self.kill(app, Killer::Lmkd(decision.reason));
            if let Some(l) = self.lmkd.as_mut() {
                l.killed(monotonic_ns());
            }
        }
    }

    /// Alive apps, most recently used first.
    pub(super) fn by_recency(&self) -> Vec<usize> {
        let mut alive: Vec<usize> = (0..self.slots.len()).filter(|&a| self.alive(a)).collect();
        alive.sort_by_key(|&a| std::cmp::Reverse(self.slots[a].used));
        alive
    }

    /// The adj the activity manager gives an app by its place in the recency order.
    pub(super) fn adj(&self, app: usize) -> i32 {
        let order = self.by_recency();
        let rank = order.iter().position(|&a| a == app).unwrap_or(order.len());
        match rank {
            0 => FOREGROUND_APP_ADJ,
            1 => PREVIOUS_APP_ADJ,
            r => {
                let span = (CACHED_APP_MAX_ADJ - CACHED_APP_MIN_ADJ) as usize;
                CACHED_APP_MIN_ADJ
                    + ((r - 2) * span / self.settings.cached_limit.max(1)).min(span) as i32
            }
        }
    }

    /// Writes every app's oom_score_adj, so the kernel's OOM killer prefers the same victims.
    pub(super) fn write_adjs(&mut self) {
        for app in self.by_recency() {
            let adj = self.adj(app);
            let path = format!("/proc/{}/oom_score_adj", self.slots[app].pid);
            if let Err(e) = fs::write(&path, adj.to_string()) {
                self.adj_note.get_or_insert_with(|| {
                    format!("{path}: {e}: the kernel's OOM killer does not see the apps' order")
                });
            }
        }
    }

    /// The activity manager after a launch: over the cached-app limit the oldest cached apps
    /// are killed; under pressure the oldest cached apps get TRIM_MEMORY_COMPLETE, which makes
    /// them release their activity state: a third of them when memory is low (few cached apps
    /// left, as Android counts it, or a complete-stall event within the last window), two
    /// thirds when it is critical (fewer still). Partial stalls trim nothing: under lasting
    /// pressure they come every window, and every app, the oldest when its turn comes again in
    /// the cycle, would start warm.
    pub(super) fn manage(&mut self, foreground: usize) {
        let order = self.by_recency();
        let cached: Vec<usize> = order
            .into_iter()
            .filter(|&a| a != foreground)
            .skip(1)
            .collect();
        let mut kept = cached.len();
        for &app in cached.iter().rev() {
            if kept <= self.settings.cached_limit {
                break;
            }
            self.kill(app, Killer::ActivityManager);
            kept -= 1;
        }
        let now = monotonic_ns();
        let recent = |t: u64| t != 0 && now - t < PRESSURE_RECENT_NS;
        let stalled = self.lmkd.as_ref().is_some_and(|l| recent(l.last_full_ns));
        let cached: Vec<usize> = cached.into_iter().filter(|&a| self.alive(a)).collect();
        let trimmed = if cached.len() <= TRIM_CRITICAL_CACHED {
            cached.len() * 2 / 3
        } else if stalled || cached.len() <= TRIM_LOW_CACHED {
            cached.len() / 3
        } else {
            0
        };
        for &app in &cached[cached.len() - trimmed..] {
            if self.slots[app].activity {
                if let Some(m) = self.ask(app, app::TRIM, app::TRIM_MEMORY_COMPLETE) {
                    self.slots[app].activity = m.detail == 0;
                }
            }
        }
    }
}
