//! Receivers: the incoming payment a quote or an outgoing payment names,
//! on this server or on another one.

pub mod remote;
