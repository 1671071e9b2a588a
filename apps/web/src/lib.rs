//! Sandstorm: a static web server whose responses are cut into TCP segments once, when the
//! site loads ([`store`], [`segment`]), and sent per client with a few header fields
//! rewritten — from copies ([`replicas`]) kept in pinned frames, or copied per send. The HTTP
//! logic ([`server`], [`conn`]) is sans-IO; [`service`] puts it on an engine.

pub mod conn;
pub mod demo;
pub mod fetch;
pub mod replicas;
pub mod report;
pub mod segment;
pub mod server;
pub mod service;
pub mod site;
pub mod store;
pub mod streamer;

pub use server::{Settings, WebApp, WebStats};
pub use service::WebService;
pub use site::Site;
