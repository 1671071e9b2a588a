//! Log events to stderr through `tracing`, one line per event (never per packet): as text for
//! people — `sirocco: MESSAGE`, warnings and errors marked, an event's fields after it as
//! `key=value` — or, with `--log-format json`, one JSON object per line for collectors
//! (time, level, target, message and fields).

use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// How log lines look.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// `sirocco: MESSAGE key=value`.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Sends log events to stderr in `format`.
pub fn init(format: Format) {
    let builder = tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(Level::INFO);
    // A second initialisation (none happens) would be refused; nothing to do then.
    let _ = match format {
        Format::Text => builder.event_format(Text).try_init(),
        Format::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
    };
}

/// The text form.
struct Text;

/// The message and the other fields of an event.
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            use fmt::Write as _;
            let _ = write!(self.rest, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use fmt::Write as _;
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }
}

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        let level = match *event.metadata().level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            _ => "",
        };
        writeln!(w, "sirocco: {level}{}{}", f.message, f.rest)
    }
}
