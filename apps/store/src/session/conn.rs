//! What belongs to the connection rather than the keys: AUTH (Redis's `requirepass`, the
//! default user), HELLO (protocol 2; 3 is refused with NOPROTO, as a server without RESP3
//! answers), and CLIENT ID / SETNAME / GETNAME. Until a connection has authenticated, where a
//! password is set, only AUTH, HELLO and QUIT are answered, as in Redis.

use crate::command::{Argv, Ctx, Done};
use resp::reply::{self, Sink};
use std::sync::atomic::{AtomicU64, Ordering};

/// Connection ids, as CLIENT ID and HELLO give them (from 1, process-wide).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The connection's own state.
pub(super) struct Conn {
    id: u64,
    name: Option<Vec<u8>>,
    /// None until the first request: whether a password is set is the server's to say.
    authed: Option<bool>,
    /// HELLO 3 chose RESP3.
    resp3: bool,
}

impl Default for Conn {
    fn default() -> Conn {
        Conn { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), name: None, authed: None, resp3: false }
    }
}

const WRONGPASS: &[u8] = b"WRONGPASS invalid username-password pair or user is disabled.";

/// Compares without stopping at the first difference (a password's length is no secret).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// A name CLIENT SETNAME takes: no spaces, newlines or other unprintable bytes.
fn valid_name(n: &[u8]) -> bool {
    n.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

impl Conn {
    /// Handles `a` if it is the connection's (or refuses it before authentication); None:
    /// the keys' commands take it.
    pub(super) fn handle(
        &mut self,
        a: Argv<'_>,
        ctx: &mut Ctx<'_>,
        me: Option<&super::ClientView>,
        out: &mut dyn Sink,
    ) -> Option<Done> {
        let authed = *self.authed.get_or_insert_with(|| ctx.info.password().is_none());
        let name = a.get(0);
        let is = |w: &str| name.eq_ignore_ascii_case(w.as_bytes());
        if is("auth") {
            self.auth(a, ctx, out);
        } else if is("hello") {
            self.hello(a, ctx, me, out);
        } else if !authed && !is("quit") {
            reply::error(out, b"NOAUTH Authentication required.");
        } else if is("client") {
            self.client(a, ctx, me, out);
        } else {
            return None;
        }
        Some(Done::default())
    }

    /// Checks `user` (None: the default) and `pass`; false with the error written.
    fn login(&mut self, user: Option<&[u8]>, pass: &[u8], ctx: &Ctx<'_>, out: &mut dyn Sink) -> bool {
        let ok = match ctx.info.password() {
            Some(want) => user.is_none_or(|u| u == b"default") && same(want, pass),
            // Without a password the default user takes any (nopass), as in Redis.
            None => user.is_none_or(|u| u == b"default"),
        };
        if ok {
            self.authed = Some(true);
        } else {
            reply::error(out, WRONGPASS);
        }
        ok
    }

    fn auth(&mut self, a: Argv<'_>, ctx: &Ctx<'_>, out: &mut dyn Sink) {
        match a.len() {
            2 if ctx.info.password().is_none() => reply::error(
                out,
                b"ERR AUTH <password> called without any password configured for the default user. Are you sure \
                  your configuration is correct?",
            ),
            2 => {
                if self.login(None, a.get(1), ctx, out) {
                    reply::ok(out);
                }
            }
            3 => {
                if self.login(Some(a.get(1)), a.get(2), ctx, out) {
                    reply::ok(out);
                }
            }
            1 => reply::error(out, b"ERR wrong number of arguments for 'auth' command"),
            _ => reply::error(out, b"ERR syntax error"),
        }
    }

    /// Names the connection (empty: no name), for CLIENT GETNAME and CLIENT LIST alike.
    fn set_name(&mut self, n: &[u8], me: Option<&super::ClientView>) {
        self.name = (!n.is_empty()).then(|| n.to_vec());
        if let Some(Ok(mut shown)) = me.map(|v| v.name.lock()) {
            shown.clone_from(&self.name);
        }
    }

    fn hello(&mut self, a: Argv<'_>, ctx: &Ctx<'_>, me: Option<&super::ClientView>, out: &mut dyn Sink) {
        let mut j = 1;
        let mut proto = None;
        if a.len() > 1 {
            match resp::num::parse_i64(a.get(1)) {
                Some(v @ (2 | 3)) => proto = Some(v == 3),
                Some(_) => return reply::error(out, b"NOPROTO unsupported protocol version"),
                None => return reply::error(out, b"ERR Protocol version is not an integer or out of range"),
            }
            j = 2;
        }
        let mut name = None;
        while j < a.len() {
            let o = a.get(j);
            if o.eq_ignore_ascii_case(b"auth") && j + 2 < a.len() {
                if !self.login(Some(a.get(j + 1)), a.get(j + 2), ctx, out) {
                    return;
                }
                j += 3;
            } else if o.eq_ignore_ascii_case(b"setname") && j + 1 < a.len() {
                name = Some(a.get(j + 1));
                j += 2;
            } else {
                let mut t = b"ERR Syntax error in HELLO option '".to_vec();
                t.extend_from_slice(o);
                t.push(b'\'');
                return reply::error(out, &t);
            }
        }
        if self.authed != Some(true) {
            return reply::error(
                out,
                b"NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> \
                  AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol \
                  version at the same time",
            );
        }
        if let Some(n) = name {
            if !valid_name(n) {
                return reply::error(out, b"ERR Client names cannot contain spaces, newlines or special characters.");
            }
            self.set_name(n, me);
        }
        if let Some(v3) = proto {
            self.resp3 = v3;
        }
        // The reply is in the protocol just chosen.
        let mut buf = Vec::new();
        let mut v3;
        let o: &mut dyn Sink = if self.resp3 {
            v3 = reply::Resp3(&mut buf);
            &mut v3
        } else {
            &mut buf
        };
        reply::map(o, 7);
        for (k, v) in [("server", "redis"), ("version", crate::server::REDIS_VERSION)] {
            reply::bulk(o, k.as_bytes());
            reply::bulk(o, v.as_bytes());
        }
        reply::bulk(o, b"proto");
        reply::int(o, if self.resp3 { 3 } else { 2 });
        reply::bulk(o, b"id");
        reply::int(o, self.id as i64);
        let role = if ctx.info.upstream().is_some() { "replica" } else { "master" };
        for (k, v) in [("mode", "standalone"), ("role", role)] {
            reply::bulk(o, k.as_bytes());
            reply::bulk(o, v.as_bytes());
        }
        reply::bulk(o, b"modules");
        reply::array(o, 0);
        out.put(&buf);
    }

    /// True once HELLO 3 chose RESP3.
    pub(super) fn resp3(&self) -> bool {
        self.resp3
    }

    /// Its CLIENT ID.
    pub(super) fn id(&self) -> u64 {
        self.id
    }

    fn client(&mut self, a: Argv<'_>, ctx: &Ctx<'_>, me: Option<&super::ClientView>, out: &mut dyn Sink) {
        if a.len() < 2 {
            return reply::error(out, b"ERR wrong number of arguments for 'client' command");
        }
        let sub = a.get(1);
        let is = |w: &str| sub.eq_ignore_ascii_case(w.as_bytes());
        let arity = |n: usize, name: &str, out: &mut dyn Sink| {
            let ok = a.len() == n;
            if !ok {
                reply::error(out, format!("ERR wrong number of arguments for 'client|{name}' command").as_bytes());
            }
            ok
        };
        if is("id") {
            if arity(2, "id", out) {
                reply::int(out, self.id as i64);
            }
        } else if is("getname") {
            if arity(2, "getname", out) {
                match &self.name {
                    Some(n) => reply::bulk(out, n),
                    None => reply::null(out),
                }
            }
        } else if is("setname") {
            if arity(3, "setname", out) {
                let n = a.get(2);
                if valid_name(n) {
                    self.set_name(n, me);
                    reply::ok(out);
                } else {
                    reply::error(out, b"ERR Client names cannot contain spaces, newlines or special characters.");
                }
            }
        } else if is("list") {
            client_list(a, ctx, out);
        } else if is("kill") {
            if a.len() < 3 {
                return reply::error(out, b"ERR wrong number of arguments for 'client|kill' command");
            }
            client_kill(a, ctx, self.id, out);
        } else if is("info") {
            if arity(2, "info", out) {
                let line = me.map(|v| v.line(ctx.now_ms));
                reply::verbatim(out, line.unwrap_or_default().as_bytes());
            }
        } else {
            crate::command::unknown_subcommand(sub, "CLIENT", out);
        }
    }
}

/// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...], as Redis answers it.
fn client_list(a: Argv<'_>, ctx: &Ctx<'_>, out: &mut dyn Sink) {
    use std::sync::atomic::Ordering::Relaxed;
    let (mut kind, mut ids) = (None, None::<Vec<u64>>);
    let mut j = 2;
    while j < a.len() {
        let o = a.get(j);
        if o.eq_ignore_ascii_case(b"type") && j + 1 < a.len() {
            let t = a.get(j + 1).to_ascii_lowercase();
            match &t[..] {
                b"normal" | b"master" | b"replica" | b"slave" | b"pubsub" => kind = Some(t),
                _ => {
                    let mut e = b"ERR Unknown client type '".to_vec();
                    e.extend_from_slice(a.get(j + 1));
                    e.push(b'\'');
                    return reply::error(out, &e);
                }
            }
            j += 2;
        } else if o.eq_ignore_ascii_case(b"id") && j + 1 < a.len() {
            let mut list = Vec::new();
            j += 1;
            while j < a.len() {
                match resp::num::parse_i64(a.get(j)) {
                    Some(n) if n > 0 => list.push(n as u64),
                    _ => return reply::error(out, b"ERR Invalid client ID"),
                }
                j += 1;
            }
            ids = Some(list);
        } else {
            return reply::error(out, b"ERR syntax error");
        }
    }
    let mut text = String::new();
    for c in ctx.info.clients() {
        let replica = c.replica.load(Relaxed);
        let keep = match kind.as_deref() {
            None => true,
            Some(b"normal") => !replica,
            Some(b"replica") | Some(b"slave") => replica,
            Some(_) => false,
        };
        if keep && ids.as_ref().is_none_or(|l| l.contains(&c.id)) {
            text.push_str(&c.line(ctx.now_ms));
        }
    }
    reply::verbatim(out, text.as_bytes());
}

/// CLIENT KILL: the old form (`ip:port`: +OK or no such client) and the filters (ID, ADDR,
/// LADDR, TYPE, USER, SKIPME, MAXAGE: the count). The connections are marked; their engines
/// close them (this one too, after its reply, if it chose itself).
fn client_kill(a: Argv<'_>, ctx: &Ctx<'_>, me: u64, out: &mut dyn Sink) {
    use std::sync::atomic::Ordering::Relaxed;
    let clients = ctx.info.clients();
    if a.len() == 3 {
        let target = a.get(2);
        match clients.iter().find(|c| c.addr.as_bytes() == target) {
            Some(c) => {
                c.killed.store(true, Relaxed);
                ctx.info.killed_some();
                reply::ok(out);
            }
            None => reply::error(out, b"ERR No such client"),
        }
        return;
    }
    let (mut id, mut addr, mut laddr, mut kind, mut skipme, mut maxage) = (None, None, None, None, true, None);
    let mut j = 2;
    while j < a.len() {
        if j + 1 >= a.len() {
            return reply::error(out, b"ERR syntax error");
        }
        let (o, v) = (a.get(j), a.get(j + 1));
        let is = |w: &[u8]| o.eq_ignore_ascii_case(w);
        if is(b"id") {
            match resp::num::parse_i64(v) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => return reply::error(out, b"ERR client-id should be greater than 0"),
            }
        } else if is(b"addr") {
            addr = Some(v);
        } else if is(b"laddr") {
            laddr = Some(v);
        } else if is(b"type") {
            let t = v.to_ascii_lowercase();
            match &t[..] {
                b"normal" | b"master" | b"replica" | b"slave" | b"pubsub" => kind = Some(t),
                _ => {
                    let mut e = b"ERR Unknown client type '".to_vec();
                    e.extend_from_slice(v);
                    e.push(b'\'');
                    return reply::error(out, &e);
                }
            }
        } else if is(b"user") {
            if v != b"default" {
                let mut e = b"ERR No such user '".to_vec();
                e.extend_from_slice(v);
                e.push(b'\'');
                return reply::error(out, &e);
            }
        } else if is(b"skipme") {
            skipme = match v.to_ascii_lowercase().as_slice() {
                b"yes" => true,
                b"no" => false,
                _ => return reply::error(out, b"ERR syntax error"),
            };
        } else if is(b"maxage") {
            match resp::num::parse_i64(v) {
                Some(n) => maxage = Some(n),
                None => return reply::error(out, b"ERR value is not an integer or out of range"),
            }
        } else {
            return reply::error(out, b"ERR syntax error");
        }
        j += 2;
    }
    let mut n = 0;
    for c in &clients {
        let replica = c.replica.load(Relaxed);
        let hit = id.is_none_or(|i| c.id == i)
            && addr.is_none_or(|x| c.addr.as_bytes() == x)
            && laddr.is_none_or(|x| c.laddr.as_bytes() == x)
            && match kind.as_deref() {
                None => true,
                Some(b"normal") => !replica,
                Some(b"replica") | Some(b"slave") => replica,
                Some(_) => false,
            }
            && maxage.is_none_or(|m| (ctx.now_ms - c.created_ms) / 1000 >= m)
            && !(skipme && c.id == me);
        if hit {
            c.killed.store(true, Relaxed);
            n += 1;
        }
    }
    if n > 0 {
        ctx.info.killed_some();
    }
    reply::int(out, n);
}
