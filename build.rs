//! Builds the room page's browser scripts into the binary: the vendored ES modules listed in
//! `vendor/javascript/pins` and the page's own modules in `assets/js/`. Writes
//! `$OUT_DIR/browser_assets.rs`, included by `src/web/assets.rs`.

use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=vendor/javascript");
    println!("cargo:rerun-if-changed=assets/js");
    println!("cargo:rerun-if-changed=templates/css");
    let root = std::env::var("CARGO_MANIFEST_DIR")?;
    let root = Path::new(&root);
    let mut out = String::new();

    let pins = std::fs::read_to_string(root.join("vendor/javascript/pins"))?;
    let mut versions = Vec::new();
    let mut files = String::new();
    for (n, line) in pins.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.first().copied() {
            Some("package") if fields.len() == 4 => versions.push((fields[1], fields[2])),
            Some("file") if fields.len() == 5 => {
                let (package, file, integrity) = (fields[1], fields[2], fields[3]);
                let version = versions
                    .iter()
                    .find(|(name, _)| *name == package)
                    .map(|(_, version)| *version)
                    .ok_or_else(|| format!("pins line {}: {package} has no package line", n + 1))?;
                let vendored = format!("vendor/javascript/{package}/{file}");
                if !root.join(&vendored).is_file() {
                    return Err(format!("pins line {}: {vendored} is missing", n + 1).into());
                }
                if !integrity.starts_with("sha384-") {
                    return Err(format!("pins line {}: no sha384 integrity", n + 1).into());
                }
                let specifiers: Vec<&str> = match fields[4] {
                    "-" => Vec::new(),
                    list => list.split(',').collect(),
                };
                writeln!(
                    files,
                    "    VendoredFile {{ package: {package:?}, version: {version:?}, file: {file:?}, \
                     integrity: {integrity:?}, specifiers: &{specifiers:?}, \
                     bytes: include_bytes!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {:?})) }},",
                    format!("/{vendored}")
                )?;
            }
            None => {}
            Some(word) if word.starts_with('#') => {}
            Some(_) => return Err(format!("pins line {}: not understood: {line}", n + 1).into()),
        }
    }
    writeln!(
        out,
        "/// The vendored ES modules, in the order of `vendor/javascript/pins`.\n\
         pub static VENDORED: &[VendoredFile] = &[\n{files}];"
    )?;

    let mut scripts: Vec<String> = std::fs::read_dir(root.join("assets/js"))?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".js"))
        .collect();
    scripts.sort();
    writeln!(
        out,
        "/// The page's own modules (`assets/js/`), by file name.\n\
         pub static OWN_SCRIPTS: &[(&str, &[u8])] = &["
    )?;
    for name in scripts {
        writeln!(
            out,
            "    ({name:?}, include_bytes!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {:?}))),",
            format!("/assets/js/{name}")
        )?;
    }
    writeln!(out, "];")?;

    // The stylesheet: every `templates/css/*.css`, in file-name order, served as one file.
    let mut sheets: Vec<String> = std::fs::read_dir(root.join("templates/css"))?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".css"))
        .collect();
    sheets.sort();
    writeln!(
        out,
        "/// The stylesheet's parts (`templates/css/`), in the order they are concatenated.\n\
         pub static STYLESHEET_PARTS: &[(&str, &str)] = &["
    )?;
    for name in sheets {
        writeln!(
            out,
            "    ({name:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {:?}))),",
            format!("/templates/css/{name}")
        )?;
    }
    writeln!(out, "];")?;

    let dest = Path::new(&std::env::var("OUT_DIR")?).join("browser_assets.rs");
    std::fs::write(dest, out)?;
    Ok(())
}
