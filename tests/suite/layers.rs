//! The layout holds: every `crate::` and `super::` path in `src/` is read as an import edge
//! between files, and the test fails on an import cycle between files or on an import from a
//! lower floor of the house to a higher one (the floors of `src/lib.rs`' Layout).
//!
//! Edges from a file to the module file of a folder that contains it (a child naming its
//! parent's items, `super::Name`) are left out: a folder's `mod.rs` is its face, and
//! re-exporting a child's item from it is not a loop of dependencies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors of the house, bottom-up, read from the one place they are written: the numbered
/// list under "## Layout" in `src/lib.rs`' crate docs. Item *n* of that list is floor *n*; its
/// modules are the intra-doc links it names that are a single word (`[`db`]`, not
/// `[`pubsub::Bus`]`). A top-level module may import only from its own floor or below (and, on
/// its own floor, without cycles).
fn floors() -> Vec<Vec<String>> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("src/lib.rs");
    let mut floors: Vec<Vec<String>> = Vec::new();
    let mut in_layout = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim_start();
        if doc.starts_with("## ") {
            in_layout = doc == "## Layout";
            continue;
        }
        if !in_layout {
            continue;
        }
        let numbered = doc
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if numbered {
            floors.push(Vec::new());
        }
        let Some(floor) = floors.last_mut() else {
            continue;
        };
        for link in doc.split("[`").skip(1) {
            let name = link.split('`').next().unwrap_or_default();
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                floor.push(name.to_owned());
            }
        }
    }
    assert!(
        floors.len() >= 2,
        "src/lib.rs has no numbered \"## Layout\" list"
    );
    floors
}

fn floor_of(floors: &[Vec<String>], top: &str) -> Option<usize> {
    floors
        .iter()
        .position(|floor| floor.iter().any(|m| m == top))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/cable/channels/mod.rs` → `["cable", "channels"]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts
}

/// The file that defines module `path`, if any.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    if path.is_empty() {
        return Some(src.join("lib.rs"));
    }
    let joined: PathBuf = path.iter().collect();
    let flat = src.join(&joined).with_extension("rs");
    if flat.is_file() {
        return Some(flat);
    }
    let nested = src.join(&joined).join("mod.rs");
    nested.is_file().then_some(nested)
}

/// The longest prefix of `path` that names a module file.
fn resolve(src: &Path, path: &[String]) -> Option<(Vec<String>, PathBuf)> {
    (1..=path.len())
        .rev()
        .find_map(|n| file_of(src, &path[..n]).map(|f| (path[..n].to_vec(), f)))
}

/// Code without comments (line comments, doc comments) and string literals' contents.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let mut in_string = false;
        let mut prev = ' ';
        for c in line.chars() {
            if c == '"' && prev != '\\' {
                in_string = !in_string;
                out.push(' ');
            } else if !in_string {
                out.push(c);
            }
            prev = c;
        }
        out.push('\n');
    }
    out
}

/// Every `crate::…` / `super::…` / `self::…` path in `code`, with `use a::{b, c::d}` groups
/// expanded one level, as segment lists (`["crate", "db", "rooms", "Room"]`).
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_');
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let root = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|r| rest.starts_with(r));
        let (true, Some(_)) = (starts_word, root) else {
            i += 1;
            continue;
        };
        // Read `seg(::seg)*` and, if it ends in `::{`, the group up to the matching brace.
        let mut j = i;
        let mut segments = Vec::new();
        let mut current = String::new();
        while j < bytes.len() {
            let c = bytes[j];
            if c.is_alphanumeric() || c == '_' {
                current.push(c);
                j += 1;
            } else if c == ':' && bytes.get(j + 1) == Some(&':') {
                segments.push(std::mem::take(&mut current));
                j += 2;
            } else {
                break;
            }
        }
        if !current.is_empty() {
            segments.push(current);
        }
        if bytes.get(j) == Some(&'{') {
            let mut depth = 0;
            let mut k = j;
            let mut group = String::new();
            while k < bytes.len() {
                match bytes[k] {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                if depth >= 1 && !(depth == 1 && bytes[k] == '{') {
                    group.push(bytes[k]);
                }
                k += 1;
            }
            for item in split_top_level(&group) {
                let mut full = segments.clone();
                full.extend(
                    item.split("::")
                        .map(|s| s.trim().trim_start_matches('{').to_owned())
                        .take_while(|s| !s.is_empty() && !s.contains(['{', ' ', ',']))
                        .filter(|s| s != "self"),
                );
                found.push(full);
            }
            i = k.max(j + 1);
        } else {
            found.push(segments);
            i = j.max(i + 1);
        }
    }
    found
}

fn split_top_level(group: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// File → files it imports (see the module docs for what counts).
fn import_graph(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph = BTreeMap::new();
    for file in files {
        if file.ends_with("main.rs") || file.ends_with("lib.rs") {
            continue;
        }
        let module = module_of(src, &file);
        let text = std::fs::read_to_string(&file).expect("readable");
        let mut edges = BTreeSet::new();
        for path in paths(&code_only(&text)) {
            let mut absolute: Vec<String> = match path[0].as_str() {
                "crate" => Vec::new(),
                "self" => module.clone(),
                _ => {
                    // `super` of a flat file `a/b.rs` (module a::b) is `a`; of `a/b/mod.rs`
                    // (module a::b) it is also `a`.
                    let mut m = module.clone();
                    m.pop();
                    m
                }
            };
            let mut rest = path[1..].iter().peekable();
            while rest.peek().is_some_and(|s| *s == "super") {
                absolute.pop();
                rest.next();
            }
            absolute.extend(rest.cloned());
            let Some((target_module, target)) = resolve(src, &absolute) else {
                continue;
            };
            if target == file {
                continue;
            }
            // A child naming its ancestor's items: the folder's face, not a dependency loop.
            if module.starts_with(&target_module) {
                continue;
            }
            edges.insert(target);
        }
        graph.insert(file, edges);
    }
    graph
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn top_module(src: &Path, file: &Path) -> String {
    module_of(src, file).first().cloned().unwrap_or_default()
}

#[test]
fn no_file_imports_a_higher_floor() {
    let src = src_dir();
    let floors = floors();
    let graph = import_graph(&src);
    let mut upward = Vec::new();
    for (file, edges) in &graph {
        let from = top_module(&src, file);
        let from_floor = floor_of(&floors, &from).unwrap_or_else(|| {
            panic!("{from} is on no floor: name it in the Layout of src/lib.rs' crate docs")
        });
        for target in edges {
            let to = top_module(&src, target);
            let to_floor = floor_of(&floors, &to).unwrap_or(usize::MAX);
            if to_floor > from_floor {
                upward.push(format!(
                    "{} (floor {from_floor}) -> {} (floor {to_floor})",
                    file.strip_prefix(&src).unwrap_or(file).display(),
                    target.strip_prefix(&src).unwrap_or(target).display()
                ));
            }
        }
    }
    assert!(upward.is_empty(), "imports that run up: {upward:#?}");
}

/// The Layout names every top-level module of `src/lib.rs` once, and nothing else: a module
/// added without a floor, or a floor naming one that is gone, fails here.
#[test]
fn the_layout_names_every_module_once() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("src/lib.rs");
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| {
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
        })
        .map(|l| l.trim_end_matches(';').trim().to_owned())
        .collect();
    let mut named = BTreeMap::<String, usize>::new();
    for module in floors().into_iter().flatten() {
        *named.entry(module).or_default() += 1;
    }
    let twice: Vec<_> = named
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(m, _)| m)
        .collect();
    assert!(twice.is_empty(), "named on more than one floor: {twice:?}");
    let named: BTreeSet<String> = named.into_keys().collect();
    let missing: Vec<_> = declared.difference(&named).collect();
    let stale: Vec<_> = named.difference(&declared).collect();
    assert!(
        missing.is_empty(),
        "modules on no floor of the Layout: {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "the Layout names modules src/lib.rs lacks: {stale:?}"
    );
}

#[test]
fn no_import_cycle_between_files() {
    let src = src_dir();
    let graph = import_graph(&src);
    // Depth-first search with colours; a grey target closes a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    fn visit(
        node: &PathBuf,
        graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        colour: &mut BTreeMap<PathBuf, Colour>,
        stack: &mut Vec<PathBuf>,
        cycles: &mut Vec<Vec<PathBuf>>,
    ) {
        colour.insert(node.clone(), Colour::Grey);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            match colour.get(next).copied().unwrap_or(Colour::White) {
                Colour::White => visit(next, graph, colour, stack, cycles),
                Colour::Grey => {
                    let start = stack.iter().position(|n| n == next).unwrap_or(0);
                    cycles.push(stack[start..].to_vec());
                }
                Colour::Black => {}
            }
        }
        stack.pop();
        colour.insert(node.clone(), Colour::Black);
    }
    let mut colour = BTreeMap::new();
    let mut cycles = Vec::new();
    for node in graph.keys() {
        if colour.get(node).copied().unwrap_or(Colour::White) == Colour::White {
            visit(node, &graph, &mut colour, &mut Vec::new(), &mut cycles);
        }
    }
    let shown: Vec<String> = cycles
        .iter()
        .map(|c| {
            c.iter()
                .map(|f| f.strip_prefix(&src).unwrap_or(f).display().to_string())
                .collect::<Vec<_>>()
                .join(" -> ")
        })
        .collect();
    assert!(shown.is_empty(), "import cycles: {shown:#?}");
}

#[test]
fn the_reader_sees_through_use_groups() {
    let found = paths("use super::{frame::Frame, index::{Index, Subscribed}, writer};");
    assert!(found.contains(&vec!["super".into(), "frame".into(), "Frame".into()]));
    assert!(found.contains(&vec!["super".into(), "index".into()]));
    assert!(found.contains(&vec!["super".into(), "writer".into()]));
    let found = paths(&code_only(
        "let x = crate::db::rooms::find(&pool); // crate::app::nothing\nlet s = \"crate::web\";",
    ));
    assert_eq!(
        found,
        vec![vec!["crate", "db", "rooms", "find"]],
        "{found:?}"
    );
}
