pub mod demo;
pub mod segment;
pub mod site;
pub mod store;
