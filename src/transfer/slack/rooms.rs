//! Which rooms the export's conversations become, and who is in each.
//!
//! - A public channel (`channels.json`) is an open room. As in Campfire every active user is a
//!   member of an open room; the channel's members see it in their sidebar (involvement
//!   `mentions`), everyone else has it hidden (`invisible`, how a member leaves an open room),
//!   so Slack's choice of channels carries over and every channel can still be joined.
//! - A private channel (`groups.json`) is a closed room of its members.
//! - A direct message (`dms.json`) and a group direct message (`mpims.json`; in older exports
//!   an `mpdm-…` entry of `groups.json`) are direct rooms of their members (involvement
//!   `everything`).
//!
//! The workspace's default channel comes first, so it is Hearth's first room (which cannot be
//! deleted); then public, private, direct and group direct conversations, each oldest first.

use super::people::People;
use super::shapes::Conversation;
use crate::db::{Involvement, RoomKind, Status};

/// A room to write.
#[derive(Debug, Clone)]
pub struct Room {
    /// The conversation's Slack id.
    pub slack_id: String,
    /// The room's name (None for a direct room).
    pub name: Option<String>,
    /// Open, closed or direct.
    pub kind: RoomKind,
    /// Its creator (an index into [`People::list`]).
    pub creator: Option<usize>,
    /// When it was created, ms.
    pub created_at: i64,
    /// Its members (indexes into [`People::list`]) and their involvement.
    pub members: Vec<(usize, Involvement)>,
    /// The folders its day files may be in, in the order tried.
    pub folders: Vec<String>,
}

/// The conversations of the export's four lists, as rooms in the order written.
#[derive(Debug, Default)]
pub struct Lists {
    /// `channels.json`.
    pub channels: Vec<Conversation>,
    /// `groups.json`.
    pub groups: Vec<Conversation>,
    /// `dms.json`.
    pub dms: Vec<Conversation>,
    /// `mpims.json`.
    pub mpims: Vec<Conversation>,
}

/// The rooms of `lists`, members found (or added as placeholders) in `people`.
pub fn plan(lists: &Lists, people: &mut People) -> Vec<Room> {
    let mut channels: Vec<&Conversation> = lists.channels.iter().collect();
    channels.sort_by_key(|c| (!c.is_general, c.created.unwrap_or(0)));
    let (mut mpims, mut groups): (Vec<&Conversation>, Vec<&Conversation>) = lists
        .groups
        .iter()
        .partition(|g| g.name.as_deref().is_some_and(|n| n.starts_with("mpdm-")));
    groups.sort_by_key(|c| c.created.unwrap_or(0));
    mpims.extend(lists.mpims.iter());
    mpims.sort_by_key(|c| c.created.unwrap_or(0));
    let mut dms: Vec<&Conversation> = lists.dms.iter().collect();
    dms.sort_by_key(|c| c.created.unwrap_or(0));
    let mut seen = std::collections::HashSet::new();
    let mut rooms = Vec::new();
    let ordered = channels
        .into_iter()
        .map(|c| (c, RoomKind::Open))
        .chain(groups.into_iter().map(|c| (c, RoomKind::Closed)))
        .chain(dms.into_iter().map(|c| (c, RoomKind::Direct)))
        .chain(mpims.into_iter().map(|c| (c, RoomKind::Direct)));
    for (conversation, kind) in ordered {
        if conversation.id.is_empty() || !seen.insert(conversation.id.clone()) {
            continue;
        }
        rooms.push(room(conversation, kind, people));
    }
    rooms
}

fn room(c: &Conversation, kind: RoomKind, people: &mut People) -> Room {
    let mut listed: Vec<&str> = c.members.iter().map(String::as_str).collect();
    if let Some(user) = c.user.as_deref() {
        listed.push(user);
    }
    let mut members: Vec<(usize, Involvement)> = Vec::new();
    for id in listed {
        let i = people.user(id, None);
        if !members.iter().any(|(m, _)| *m == i) {
            members.push((i, Involvement::default_for(kind)));
        }
    }
    if kind == RoomKind::Open {
        for (i, person) in people.list.iter().enumerate() {
            if person.status == Status::Active && !members.iter().any(|(m, _)| *m == i) {
                members.push((i, Involvement::Invisible));
            }
        }
    }
    let name = match kind {
        RoomKind::Direct => None,
        _ => Some(c.name.clone().unwrap_or_else(|| c.id.clone())),
    };
    let folders = [c.name.clone(), Some(c.id.clone())]
        .into_iter()
        .flatten()
        .filter(|f| !f.is_empty())
        .collect();
    Room {
        slack_id: c.id.clone(),
        name,
        kind,
        creator: c.creator.as_deref().and_then(|id| people.find(id)),
        created_at: c.created.unwrap_or(0).saturating_mul(1000),
        members,
        folders,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::slack::shapes::User;

    fn conv(json: &str) -> Conversation {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn kinds_order_and_members() {
        let users: Vec<User> = serde_json::from_str(
            r#"[{"id":"U1","name":"a","is_admin":true},{"id":"U2","name":"b"},{"id":"U3","name":"c","deleted":true}]"#,
        )
        .unwrap();
        let mut people = People::from_users(&users);
        let lists = Lists {
            channels: vec![
                conv(r#"{"id":"C2","name":"random","created":20,"members":["U1"]}"#),
                conv(
                    r#"{"id":"C1","name":"general","created":30,"is_general":true,"members":["U1","U2","U3"]}"#,
                ),
            ],
            groups: vec![
                conv(r#"{"id":"G1","name":"secret","created":5,"members":["U2"]}"#),
                conv(r#"{"id":"G2","name":"mpdm-a--b-1","created":6,"members":["U1","U2"]}"#),
            ],
            dms: vec![conv(r#"{"id":"D1","created":7,"members":["U1","U2"]}"#)],
            mpims: vec![],
        };
        let rooms = plan(&lists, &mut people);
        let ids: Vec<&str> = rooms.iter().map(|r| r.slack_id.as_str()).collect();
        assert_eq!(ids, ["C1", "C2", "G1", "D1", "G2"]);
        assert_eq!(rooms[0].kind, RoomKind::Open);
        assert_eq!(rooms[0].created_at, 30_000);
        assert_eq!(
            rooms[0].members.len(),
            3,
            "the deactivated member stays listed"
        );
        assert_eq!(
            rooms[1].members,
            vec![(0, Involvement::Mentions), (1, Involvement::Invisible)]
        );
        assert_eq!(rooms[2].kind, RoomKind::Closed);
        assert_eq!(rooms[2].members, vec![(1, Involvement::Mentions)]);
        assert_eq!(rooms[3].kind, RoomKind::Direct);
        assert_eq!(rooms[3].name, None);
        assert_eq!(rooms[3].folders, ["D1"]);
        assert_eq!(rooms[4].kind, RoomKind::Direct);
        assert_eq!(rooms[4].folders, ["mpdm-a--b-1", "G2"]);
        assert_eq!(rooms[4].members[0].1, Involvement::Everything);
    }
}
