//! State a control thread publishes to every engine (a reloaded zone catalog, a reloaded
//! site): the engines follow it between batches, never inside one, and the old state is freed
//! on the control thread once the last engine has let go of it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

struct Inner<T> {
    current: Mutex<Arc<T>>,
    generation: AtomicU64,
}

/// The published value, shared by the control thread and the engines' followers.
pub struct Published<T>(Arc<Inner<T>>);

impl<T> Clone for Published<T> {
    fn clone(&self) -> Self {
        Published(Arc::clone(&self.0))
    }
}

impl<T: Send + Sync + 'static> Published<T> {
    /// Publishes `value` as generation 0.
    pub fn new(value: T) -> Self {
        Self::from_arc(Arc::new(value))
    }

    /// Publishes a value already shared.
    pub fn from_arc(value: Arc<T>) -> Self {
        Published(Arc::new(Inner { current: Mutex::new(value), generation: AtomicU64::new(0) }))
    }

    /// Replaces the value; engines switch at their next check. Returns the old value, to be
    /// freed off the data path once no engine holds it.
    pub fn publish(&self, value: T) -> Retired {
        let old = {
            let mut g = self.0.current.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *g, Arc::new(value))
        };
        self.0.generation.fetch_add(1, Ordering::Release);
        let mut old = Some(old);
        Retired(Box::new(move || {
            if old.as_ref().is_some_and(|o| Arc::strong_count(o) == 1) {
                old = None;
            }
            old.is_none()
        }))
    }

    /// The value now published and its generation.
    pub fn current(&self) -> (Arc<T>, u64) {
        let g = self.0.current.lock().unwrap_or_else(|e| e.into_inner());
        (Arc::clone(&g), self.0.generation.load(Ordering::Acquire))
    }

    /// A follower for one engine, holding the current value.
    pub fn follow(&self) -> Follower<T> {
        let (current, seen) = self.current();
        Follower { published: self.clone(), current, seen }
    }
}

/// One engine's view of a [`Published`] value: reading it takes no lock and no atomic;
/// [`Follower::refresh`] reads one atomic to see whether a newer value is out.
pub struct Follower<T> {
    published: Published<T>,
    current: Arc<T>,
    seen: u64,
}

impl<T: Send + Sync + 'static> Follower<T> {
    /// A follower of a value nobody else publishes (tests, tools).
    pub fn fixed(value: Arc<T>) -> Self {
        Published::from_arc(value).follow()
    }

    /// The value followed.
    #[inline]
    pub fn get(&self) -> &Arc<T> {
        &self.current
    }

    /// Switches to a newer published value if there is one; true if it switched.
    #[inline]
    pub fn refresh(&mut self) -> bool {
        if self.published.0.generation.load(Ordering::Acquire) == self.seen {
            return false;
        }
        (self.current, self.seen) = self.published.current();
        true
    }
}

/// A value replaced by [`Published::publish`]: kept until every engine has switched, then
/// freed by [`Retired::try_free`] on the thread that published (a large catalog freed on an
/// engine would stall its queue). Dropping it lets go at once.
pub struct Retired(Box<dyn FnMut() -> bool + Send>);

impl Retired {
    /// Frees the old value if no engine holds it any more; true once it is freed.
    pub fn try_free(&mut self) -> bool {
        (self.0)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn followers_switch_at_refresh_and_the_old_value_is_freed_after() {
        let p = Published::new(String::from("one"));
        let mut a = p.follow();
        let mut b = p.follow();
        assert!(!a.refresh());
        let mut old = p.publish(String::from("two"));
        assert_eq!(a.get().as_str(), "one", "nothing changes until the follower asks");
        assert!(!old.try_free(), "both followers still hold it");
        assert!(a.refresh());
        assert_eq!(a.get().as_str(), "two");
        assert!(!old.try_free(), "b still holds it");
        assert!(b.refresh());
        assert!(old.try_free());
        assert!(old.try_free(), "stays freed");
        assert_eq!(p.current().1, 1);
    }

    #[test]
    fn a_fixed_follower_never_switches() {
        let mut f = Follower::fixed(Arc::new(7u32));
        assert!(!f.refresh());
        assert_eq!(**f.get(), 7);
    }
}
