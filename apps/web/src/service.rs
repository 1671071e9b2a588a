//! The web server on an engine: TCP with the HTTP application, plus what runs beside the
//! packets — the date (read from the wall clock at most every 100 ms, so heads are refreshed
//! once a second), the switch to a reloaded site, and a sweep for connections past their
//! deadlines.

use crate::server::{Settings, WebApp};
use crate::site::Site;
use crate::store::Store;
use engine::published::Follower;
use engine::{Originate, Service, TcpService};
use std::time::{SystemTime, UNIX_EPOCH};
use tcp::{Config, Limits};
use wire::tcp::TcpRepr;
use wire::Ipv4Addr;

fn wall_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// How connections are swept for deadlines.
const SWEEP_MS: u64 = 500;
/// How often the wall clock is read.
const CLOCK_MS: u64 = 100;

/// The web server of one engine.
pub struct WebService {
    /// TCP and the HTTP application.
    pub tcp: TcpService<WebApp>,
    site: Follower<Site>,
    last_clock_ms: u64,
    last_sweep_ms: u64,
    /// Sites switched to after a reload.
    pub reloads: u64,
}

impl WebService {
    /// A server on `port` for the site `site` follows, packetised for segments of `cfg.mss` less the
    /// timestamp option, at most `cache_bytes` of packetised objects; with `precopy`, sent
    /// from replicas in at most that many pinned frames.
    pub fn new(
        site: Follower<Site>,
        port: u16,
        cfg: Config,
        limits: Limits,
        settings: Settings,
        cache_bytes: u64,
        precopy: Option<usize>,
    ) -> Self {
        let mut store = Store::new(site.get().clone(), u32::from(cfg.mss) - 12, cache_bytes, wall_secs());
        store.preload();
        let mut app = WebApp::new(store, settings);
        if let Some(frames) = precopy {
            app = app.precopy(frames);
        }
        WebService {
            tcp: TcpService::new(app, &[port], cfg, limits),
            site,
            last_clock_ms: 0,
            last_sweep_ms: 0,
            reloads: 0,
        }
    }

    fn housekeeping(&mut self, now_ms: u64) {
        if now_ms >= self.last_clock_ms + CLOCK_MS {
            self.last_clock_ms = now_ms;
            self.tcp.app.store.set_date(wall_secs());
            if self.site.refresh() {
                self.tcp.app.store.replace_site(self.site.get().clone());
                self.tcp.app.store.preload();
                self.reloads += 1;
            }
        }
        if now_ms >= self.last_sweep_ms + SWEEP_MS {
            self.last_sweep_ms = now_ms;
            let ep = &mut self.tcp.ep;
            let app = &mut self.tcp.app;
            for h in ep.handles() {
                let Some(c) = ep.conn_mut(h) else { continue };
                match app.expire(c) {
                    None => {}
                    Some(false) => {
                        ep.close(h);
                        ep.kick(h);
                    }
                    Some(true) => ep.abort(app, h),
                }
            }
        }
    }
}

impl Service for WebService {
    fn tcp_ports(&self) -> Vec<u16> {
        self.tcp.tcp_ports()
    }

    #[inline]
    fn tcp(&mut self, now_ns: u64, src: Ipv4Addr, dst: Ipv4Addr, seg: &TcpRepr, payload: &[u8], view: u32) {
        self.tcp.app.now_ms = now_ns / 1_000_000;
        self.tcp.tcp(now_ns, src, dst, seg, payload, view);
    }

    fn produce(&mut self, now_ns: u64, out: &mut dyn Originate) -> usize {
        let now_ms = now_ns / 1_000_000;
        self.tcp.app.now_ms = now_ms;
        self.housekeeping(now_ms);
        self.tcp.app.tend_replicas(out);
        self.tcp.produce(now_ns, out)
    }

    fn busy(&self) -> bool {
        self.tcp.busy()
    }

    fn idle_wait_ms(&self) -> u32 {
        self.tcp.idle_wait_ms().min(SWEEP_MS as u32)
    }
}
