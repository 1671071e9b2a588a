pub mod conn;
pub mod demo;
pub mod replicas;
pub mod segment;
pub mod server;
pub mod service;
pub mod site;
pub mod store;

pub use server::{Settings, WebApp, WebStats};
pub use service::WebService;
pub use site::Site;
