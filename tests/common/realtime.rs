//! What the realtime tests share: the installed reference's protocol dir
//! of a bundled alias, and a memory sink that names a state dir.

use palaver::engine::{Event, EventSink, MemorySink};
use palaver::json::Map;
use std::path::PathBuf;

/// The installed reference's protocol dir of bundled `alias` (from its
/// protocols/index.json), asked of the reference's own Python.
pub fn reference_protocol_dir(py: &str, alias: &str) -> PathBuf {
    let out = std::process::Command::new(py)
        .args([
            "-c",
            "import aigenora, json, pathlib, sys\n\
             root = pathlib.Path(aigenora.__file__).parent / 'protocols'\n\
             idx = json.loads((root / 'index.json').read_text())\n\
             print(next(root / p['path'] for p in idx['protocols'] if p['alias'] == sys.argv[1]))",
            alias,
        ])
        .output()
        .expect("run the reference's Python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A memory sink that also names a state dir, so the realtime journals are
/// written there (an empty dir: none are written).
#[derive(Default)]
pub struct DirSink {
    pub mem: MemorySink,
    pub dir: PathBuf,
}

impl EventSink for DirSink {
    fn emit(&self, e: Event) {
        self.mem.emit(e)
    }
    fn snapshot(&self, p: Map) {
        self.mem.snapshot(p)
    }
    fn detail(&self, r: Map) {
        self.mem.detail(r)
    }
    fn state_dir(&self) -> Option<PathBuf> {
        (!self.dir.as_os_str().is_empty()).then(|| self.dir.clone())
    }
}

/// The data of the last event of `kind` in `sink`.
pub fn last_event(sink: &MemorySink, kind: &str) -> Option<Map> {
    let e = sink.events.lock().unwrap();
    e.iter()
        .rev()
        .find(|e| e.kind == kind)
        .map(|e| e.data.clone())
}
