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
use tcp::{Config, Duration, Instant, Limits};
use wire::tcp::TcpRepr;
use wire::Ipv4Addr;

fn wall_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// How connections are swept for deadlines.
const SWEEP: Duration = Duration::from_millis(500);
/// How often the wall clock is read.
const CLOCK: Duration = Duration::from_millis(100);

/// The web server of one engine.
pub struct WebService {
    /// TCP and the HTTP application.
    pub tcp: TcpService<WebApp>,
    site: Follower<Site>,
    last_clock: Instant,
    last_sweep: Instant,
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
            last_clock: Instant::ZERO,
            last_sweep: Instant::ZERO,
            reloads: 0,
        }
    }

    fn housekeeping(&mut self, now: Instant) {
        if now >= self.last_clock + CLOCK {
            self.last_clock = now;
            self.tcp.app.store.set_date(wall_secs());
            if self.site.refresh() {
                self.tcp.app.store.replace_site(self.site.get().clone());
                self.tcp.app.store.preload();
                self.reloads += 1;
            }
        }
        if now >= self.last_sweep + SWEEP {
            self.last_sweep = now;
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
    fn tcp(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, seg: &TcpRepr, payload: &[u8], view: u32) {
        self.tcp.app.now = now;
        self.tcp.tcp(now, src, dst, seg, payload, view);
    }

    fn produce(&mut self, now: Instant, out: &mut dyn Originate) -> usize {
        self.tcp.app.now = now;
        self.housekeeping(now);
        self.tcp.app.tend_replicas(out);
        self.tcp.produce(now, out)
    }

    fn busy(&self) -> bool {
        self.tcp.busy()
    }

    fn idle_wait(&self) -> Duration {
        self.tcp.idle_wait().min(SWEEP)
    }
}
