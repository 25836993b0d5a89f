//! Finds the SeetaFace frontal model that the rustface crate ships in its package
//! (model/seeta_fd_frontal_v1.0.bin) and tells the compiler where it is, so that
//! cpu.face_detection embeds it with include_bytes!: nothing is downloaded or read at run time.

use std::path::{Path, PathBuf};
use std::process::Command;

const MODEL: &str = "model/seeta_fd_frontal_v1.0.bin";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-env-changed=CARGO_HOME"); // the registry the model's path is in
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"));
    let manifest = Path::new(&var("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    // The resolved packages of this crate, for the target only (the ones cargo has fetched).
    let out = Command::new(var("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &var("TARGET")])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata writes JSON");
    let model: PathBuf = metadata["packages"]
        .as_array()
        .expect("cargo metadata lists packages")
        .iter()
        .filter_map(|package| {
            Some(
                Path::new(package["manifest_path"].as_str()?)
                    .parent()?
                    .join(MODEL),
            )
        })
        .find(|model| model.is_file())
        .unwrap_or_else(|| panic!("no package of the build has {MODEL} (the rustface crate)"));
    println!("cargo:rustc-env=SEETAFACE_MODEL={}", model.display());
}
