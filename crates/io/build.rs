//! Compiles the XDP programs (the filter, `sirocco ctl`'s) from C with clang at build time; the object is embedded in the
//! binary and loaded with aya at run time.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=bpf/arp.h");
    println!("cargo:rerun-if-changed=bpf/dns_answer.h");
    for name in ["filter", "ctl"] {
        compile(&format!("bpf/{name}.c"), &out.join(format!("{name}.o")), &[]);
    }
    // The filter without the DNS answers, for every server that does not answer in the driver.
    compile("bpf/filter.c", &out.join("filter_plain.o"), &["-DNO_DNS_ANSWERS"]);
}

fn compile(src: &str, obj: &std::path::Path, defines: &[&str]) {
    println!("cargo:rerun-if-changed={src}");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let arch_include = format!("/usr/include/{}-linux-gnu", std::env::var("CARGO_CFG_TARGET_ARCH").unwrap());
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"])
        .arg(format!("-I{arch_include}"))
        .args(defines)
        .args(["-c", src, "-o"])
        .arg(obj)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("clang failed to compile {src} ({s}); install clang and libbpf-dev"),
        Err(e) => panic!(
            "cannot run {clang} to compile {src}: {e}; install clang and libbpf-dev (apt-get install clang libbpf-dev)"
        ),
    }
}
