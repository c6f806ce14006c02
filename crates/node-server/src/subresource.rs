//! The `status` subresource's write rules, as the API server applies them to a type that
//! has one: a create or a write to the object itself leaves `status` as it was (a create
//! starts without one); a write to `/status` changes nothing but `status`.

use serde_json::Value;

use crate::registry::ResourceType;

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// The object itself (`/<plural>/<name>`).
    Main,
    /// Its `status` subresource (`/<plural>/<name>/status`).
    Status,
}

/// A new object of `kind`: a type with a status subresource starts without a status.
pub fn on_create(kind: &ResourceType, obj: &mut Value) {
    if kind.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
}

/// Restrict the write of `after` over `before` to the part `w` addresses.
pub fn on_update(kind: &ResourceType, w: Write, before: &Value, after: &mut Value) {
    match w {
        Write::Main if kind.status => set_status(after, before.get("status").cloned()),
        Write::Main => {}
        Write::Status => {
            let status = after.get("status").cloned();
            *after = before.clone();
            set_status(after, status);
        }
    }
}

fn set_status(obj: &mut Value, status: Option<Value>) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    match status {
        Some(s) => {
            m.insert("status".into(), s);
        }
        None => {
            m.remove("status");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{CONFIG_MAPS, CRDS};
    use serde_json::json;

    #[test]
    fn main_writes_keep_the_status_and_status_writes_keep_the_rest() {
        let before = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"ok": false}});
        let mut after = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 2}, "status": {"ok": true}});
        on_update(&CRDS, Write::Main, &before, &mut after);
        assert_eq!(
            after,
            json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 2}, "status": {"ok": false}})
        );
        let mut after = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 2}, "status": {"ok": true}});
        on_update(&CRDS, Write::Status, &before, &mut after);
        assert_eq!(
            after,
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"ok": true}})
        );
        // A status write without a status removes it; a main write cannot add one.
        let mut after = json!({"spec": {"x": 3}});
        on_update(&CRDS, Write::Status, &before, &mut after);
        assert!(after.get("status").is_none() && after["spec"]["x"] == 1);
        let mut after = json!({"spec": {"x": 3}, "status": {"ok": true}});
        on_update(&CRDS, Write::Main, &json!({"spec": {}}), &mut after);
        assert!(after.get("status").is_none());
    }

    #[test]
    fn types_without_a_status_subresource_take_everything() {
        let before = json!({"data": {"a": "1"}});
        let mut after = json!({"data": {"a": "2"}, "status": {"x": 1}});
        on_update(&CONFIG_MAPS, Write::Main, &before, &mut after);
        assert_eq!(after["status"]["x"], 1);
        let mut o = json!({"spec": {}, "status": {"x": 1}});
        on_create(&CRDS, &mut o);
        assert!(o.get("status").is_none());
        let mut o = json!({"status": {"x": 1}});
        on_create(&CONFIG_MAPS, &mut o);
        assert!(o.get("status").is_some());
    }
}
