//! The order a conversation's messages are written in, threads kept beside their parents.
//!
//! Hearth has no threads yet and shows a room's messages by time (`created_at`, then id). So
//! a thread's replies are written right after their parent, oldest first, each stamped with its
//! own time unless that is later than the next message outside the thread: then with that
//! message's time (the earlier id keeps the reply before it). A reply so moved says when it was
//! really written (see [`Item::moved`]). A reply whose parent is not in the export stands on
//! its own, at its time.
//!
//! What is skipped: entries that are not messages, and the events Slack records as messages
//! (joins, leaves, topic and name changes, pins, …; [`is_event`]).

use super::shapes::{ts_millis, Message};

/// A message in the order written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// Its index in the conversation's message list.
    pub index: usize,
    /// The index of its thread's parent, for a reply.
    pub parent: Option<usize>,
    /// The time it is stamped with (`created_at`), ms.
    pub at: i64,
    /// Its own time, ms, when a reply is stamped earlier than it was written.
    pub moved: Option<i64>,
}

/// The subtypes that are events, not something a person said: skipped.
pub fn is_event(subtype: &str) -> bool {
    matches!(
        subtype,
        "channel_join"
            | "channel_leave"
            | "group_join"
            | "group_leave"
            | "channel_topic"
            | "channel_purpose"
            | "channel_name"
            | "channel_archive"
            | "channel_unarchive"
            | "group_topic"
            | "group_purpose"
            | "group_name"
            | "group_archive"
            | "group_unarchive"
            | "pinned_item"
            | "unpinned_item"
            | "bot_add"
            | "bot_remove"
            | "bot_enable"
            | "bot_disable"
            | "channel_convert_to_private"
            | "channel_convert_to_public"
            | "reminder_add"
            | "huddle_thread"
            | "sh_room_created"
    )
}

/// Whether `message` is kept: a message (not an event) with a readable `ts`.
pub fn is_kept(message: &Message) -> bool {
    message.kind.as_deref().is_none_or(|k| k == "message")
        && !message.subtype.as_deref().is_some_and(is_event)
        && ts_millis(&message.ts).is_some()
}

/// The kept messages of one conversation in the order to write them (see the
/// [module docs](self)).
pub fn order(messages: &[Message]) -> Vec<Item> {
    let mut kept: Vec<(i64, usize)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| is_kept(m))
        .filter_map(|(i, m)| Some((ts_millis(&m.ts)?, i)))
        .collect();
    kept.sort_by(|a, b| (a.0, &messages[a.1].ts, a.1).cmp(&(b.0, &messages[b.1].ts, b.1)));
    let mut by_ts = std::collections::HashMap::new();
    for &(_, i) in &kept {
        by_ts.entry(messages[i].ts.as_str()).or_insert(i);
    }
    let parent_of = |i: usize| -> Option<usize> {
        let thread = messages[i].thread_ts.as_deref()?;
        if thread == messages[i].ts {
            return None;
        }
        by_ts.get(thread).copied().filter(|&p| p != i)
    };
    let mut replies: std::collections::HashMap<usize, Vec<(i64, usize)>> =
        std::collections::HashMap::new();
    let mut top: Vec<(i64, usize)> = Vec::new();
    for &(at, i) in &kept {
        match parent_of(i) {
            Some(p) if parent_of(p).is_none() => replies.entry(p).or_default().push((at, i)),
            _ => top.push((at, i)),
        }
    }
    let mut out = Vec::with_capacity(kept.len());
    for (k, &(at, i)) in top.iter().enumerate() {
        out.push(Item {
            index: i,
            parent: None,
            at,
            moved: None,
        });
        let next = top.get(k + 1).map(|&(t, _)| t);
        for &(own, r) in replies.get(&i).into_iter().flatten() {
            let stamped = next.map_or(own, |n| own.min(n)).max(at);
            out.push(Item {
                index: r,
                parent: Some(i),
                at: stamped,
                moved: (stamped != own).then_some(own),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(json: &str) -> Vec<Message> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn replies_follow_their_parent_in_time_order() {
        let m = msgs(
            r#"[
            {"type":"message","ts":"100.000000","text":"parent","thread_ts":"100.000000","reply_count":2},
            {"type":"message","ts":"200.000000","text":"next"},
            {"type":"message","ts":"150.000000","text":"reply 1","thread_ts":"100.000000"},
            {"type":"message","ts":"300.000000","text":"late reply","thread_ts":"100.000000"},
            {"type":"message","subtype":"channel_join","ts":"50.000000","text":"joined"},
            {"type":"message","ts":"400.000000","text":"orphan","thread_ts":"90.000000"},
            {"type":"message","ts":"bad","text":"no time"}
        ]"#,
        );
        let order = order(&m);
        let texts: Vec<&str> = order.iter().map(|it| m[it.index].text.as_str()).collect();
        assert_eq!(texts, ["parent", "reply 1", "late reply", "next", "orphan"]);
        assert_eq!(order[1].at, 150_000);
        assert_eq!(order[1].moved, None);
        assert_eq!(order[1].parent, Some(0));
        assert_eq!(order[2].at, 200_000, "stamped with the next message's time");
        assert_eq!(order[2].moved, Some(300_000));
        assert_eq!(order[3].parent, None);
        assert_eq!(order[4].parent, None, "its parent is not in the export");
        let stamps: Vec<i64> = order.iter().map(|it| it.at).collect();
        assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
    }

    #[test]
    fn the_last_thread_keeps_its_times() {
        let m = msgs(
            r#"[{"ts":"1.0","text":"p","thread_ts":"1.0"},{"ts":"9.5","text":"r","thread_ts":"1.0"}]"#,
        );
        let order = order(&m);
        assert_eq!(order[1].at, 9_500);
        assert_eq!(order[1].moved, None);
    }
}
