//! The pipeline's port on a whole interface: io's [`WholePort`] as a [`NetPort`].

use io::whole::WholePort;
use pipeline::port::NetPort;

pub struct XdpPort(pub WholePort);

impl NetPort for XdpPort {
    fn recv(&mut self, max: usize, each: &mut dyn FnMut(&[u8])) -> usize {
        self.0.recv(max, each)
    }

    fn send(&mut self, frame: &[u8]) -> bool {
        self.0.send(frame)
    }

    fn flush(&mut self) {
        self.0.flush()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.0.counters().to_vec()
    }
}
