use super::*;

#[test]
fn transitions_follow_the_state_machine_and_count_revisions() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::new(d.path());
    let t = s
        .insert_task("dev", "t:1", "ab", "goal", "assist", Some(5), "in")
        .unwrap();
    assert_eq!((t.state.as_str(), t.revision), ("received", 1));
    let t = s
        .transition("dev", "t:1", "queued", Some(("queued", "q")), |_| {})
        .unwrap();
    assert_eq!((t.state.as_str(), t.revision), ("queued", 2));
    assert!(matches!(
        s.transition("dev", "t:1", "completed", None, |_| {}),
        Err(StoreError::Illegal(..))
    ));
    // Same state: nothing changes.
    assert_eq!(
        s.transition("dev", "t:1", "queued", Some(("x", "")), |_| {})
            .unwrap()
            .revision,
        2
    );
    let ev = s.events("dev", "t:1").unwrap();
    assert_eq!(
        ev.iter()
            .map(|e| (e.event_id, e.kind.as_str()))
            .collect::<Vec<_>>(),
        vec![(1, "received"), (2, "queued")]
    );
    assert_eq!(s.get_task("dev", "t:1").unwrap().unwrap(), {
        let mut want = t.clone();
        want.revision = 2;
        want
    });
    assert!(s.get_task("dev", "t:2").unwrap().is_none());
    assert_eq!(s.list_tasks().unwrap().len(), 1);
}

#[test]
fn notes_are_idempotent_and_delivered_once() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::new(d.path());
    s.insert_task("dev", "t", "ab", "g", "assist", None, "in")
        .unwrap();
    assert!(s.add_note("dev", "t", "worker", "n2", "b").unwrap());
    assert!(s.add_note("dev", "t", "worker", "n1", "a").unwrap());
    assert!(!s.add_note("dev", "t", "worker", "n1", "again").unwrap());
    assert!(s.add_note("dev", "t", "coordinator", "n1", "c").unwrap());
    let p = s.pending_notes("dev", "t", "worker", 50).unwrap();
    assert_eq!(p.len(), 2);
    s.mark_delivered("dev", "t", "worker", &["n1".into()])
        .unwrap();
    let p = s.pending_notes("dev", "t", "worker", 50).unwrap();
    assert_eq!(
        p.iter().map(|n| n.note_id.as_str()).collect::<Vec<_>>(),
        ["n2"]
    );
    assert_eq!(
        s.pending_notes("dev", "t", "coordinator", 50)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_torn_last_line_is_skipped_and_a_damaged_file_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::new(d.path());
    s.insert_task("dev", "t", "ab", "g", "assist", None, "in")
        .unwrap();
    let events = s.dir("dev", "t").join("events.jsonl");
    let mut f = OpenOptions::new().append(true).open(&events).unwrap();
    f.write_all(b"{\"event_id\":2,\"ki").unwrap();
    assert_eq!(s.events("dev", "t").unwrap().len(), 1);
    fs::write(s.dir("dev", "t").join("task.json"), "{not json").unwrap();
    assert!(matches!(
        s.get_task("dev", "t"),
        Err(StoreError::Damaged(_))
    ));
}

#[test]
fn task_roots_use_the_reference_layout() {
    let s = Store::new(Path::new("/d"));
    assert_eq!(
        s.task_root("engine-guest", "a.b:c"),
        Path::new("/d/collab/tasks/engine-guest/abc")
    );
    assert_eq!(
        s.task_root("..", ".."),
        Path::new("/d/collab/tasks/peer/task")
    );
}
