//! `sirocco pipeline`: a BESS pipeline between interfaces, from a script. The interfaces the
//! script's PortInc/PortOut modules name are taken whole (every frame to the pipeline); one
//! worker runs every task in turn, run to completion.

mod client;
mod control;
mod report;
mod serve;
mod xdp_port;

use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PipelineCmd {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub run: PipelineArgs,
}

/// Talking to a running pipeline through its `--control` socket.
#[derive(clap::Subcommand)]
pub enum Action {
    /// Print the running pipeline as a script (modules, links, classes, workers).
    Show(CtlArgs),
    /// Print every module's counters and cycles per packet, every port's and class's.
    Stats {
        #[command(flatten)]
        ctl: CtlArgs,
        /// The reply as JSON, as the socket gives it.
        #[arg(long)]
        json: bool,
    },
    /// Add statements to the running pipeline: modules, and links (a link from a connected
    /// output gate replaces the old one, which puts a module into a path). Nothing in
    /// flight is lost.
    Add {
        #[command(flatten)]
        ctl: CtlArgs,
        /// The statements, one per argument (or one per line of --file).
        #[arg(value_name = "STATEMENT")]
        statements: Vec<String>,
        /// Read the statements from this file.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Remove a module from the running pipeline; where it sat in a path, its upstream is
    /// joined to its downstream. Refused while it holds packets.
    Remove {
        #[command(flatten)]
        ctl: CtlArgs,
        /// The module's name.
        module: String,
    },
}

#[derive(Args)]
pub struct CtlArgs {
    /// The running pipeline's control socket (its --control).
    #[arg(long, value_name = "PATH")]
    pub control: PathBuf,
}

#[derive(Args)]
pub struct PipelineArgs {
    /// The pipeline script: modules, links, traffic classes, workers (see
    /// docs/pipeline.md; scripts/pipeline/ has examples).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Listen for `sirocco pipeline show|stats|add|remove` on this Unix socket.
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// CPUs to pin the workers to, one per `worker` of the script in order [default: each
    /// worker's cpu=; a script without workers is not pinned].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cpus: Option<Vec<usize>>,
    /// Packet buffers of the pipeline (2 KiB each): enough for what queues and delay lines
    /// hold at once.
    #[arg(long, default_value_t = 65_536, value_name = "N", value_parser = clap::value_parser!(u32).range(256..=4_194_304))]
    pub buffers: u32,
    /// Use AF_XDP copy mode even where the driver has zero-copy.
    #[arg(long)]
    pub copy: bool,
    /// Stop after this many seconds [default: run until SIGINT/SIGTERM].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Empty runs of every task before the worker sleeps until a port has frames.
    #[arg(long, default_value_t = 2000, value_name = "N")]
    pub idle_spins: u32,
    /// On exit, also write every module's and port's counters as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub counters: Option<PathBuf>,
}

pub fn run(c: PipelineCmd) -> Result<(), String> {
    match c.action {
        None => serve::serve(c.run),
        Some(a) => client::client(a),
    }
}
