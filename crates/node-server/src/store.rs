//! The API server's object store: objects of every served type (pods, ConfigMaps, custom
//! resources, …) as JSON, keyed by type (`(group, plural)`), namespace and name; one
//! global resource-version counter (like etcd's revision), a bounded per-type event
//! history (the watch cache) for resuming watches, and a broadcast of every change.
//! Watches from a version older than the history's floor get `410 Expired`. Like etcd
//! behind the API server, it refuses objects over 1.5 MiB.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::broadcast;

pub use crate::registry::Kind;
use crate::registry::{GroupResource, ResourceType};
use crate::status::{ApiError, Resource};

/// etcd's default request limit: larger objects are refused.
pub const MAX_OBJECT_BYTES: usize = 1024 * 1024 + 512 * 1024;

/// A watch event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resource version the change produced.
    pub rv: u64,
    /// The object's type.
    pub kind: GroupResource,
    /// What happened.
    pub etype: EventType,
    /// The object after the change (the last state for deletions).
    pub object: Arc<Value>,
}

type Key = (GroupResource, String, String);

struct Inner {
    rv: u64,
    objects: BTreeMap<Key, Arc<Value>>,
    history: HashMap<GroupResource, VecDeque<Arc<Event>>>,
    /// Per type: events at or below this version are no longer in the history.
    floor: HashMap<GroupResource, u64>,
    cap: usize,
    /// The version of the last compaction: the floor of types with no history yet.
    compacted: u64,
}

/// Where a watch starts.
pub enum WatchStart {
    /// Synthetic `ADDED` events for the current objects, then changes after `rv`.
    Current(Vec<Arc<Value>>, u64),
    /// Replayed history after the requested version, then live changes.
    Replay(Vec<Arc<Event>>),
}

/// Live changes after a [`WatchStart`].
pub type Subscription = broadcast::Receiver<Arc<Event>>;

/// The object store.
pub struct Store {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Event>>,
}

impl Store {
    /// A store whose watch history keeps `cap` events per kind.
    pub fn new(cap: usize) -> Self {
        let (tx, _) = broadcast::channel(4096);
        Self {
            inner: Mutex::new(Inner {
                rv: 0,
                objects: BTreeMap::new(),
                history: HashMap::new(),
                floor: HashMap::new(),
                cap: cap.max(1),
                compacted: 0,
            }),
            tx,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Create an object; fills `uid`, `resourceVersion`, `creationTimestamp`, namespace
    /// (cluster-scoped types: none, `ns` is `""`), `generation` where the type keeps one.
    ///
    /// # Errors
    /// 409 `AlreadyExists`; 500 for an object over etcd's limit.
    pub fn create(&self, kind: &ResourceType, ns: &str, mut obj: Value) -> Result<Arc<Value>, ApiError> {
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        let mut g = self.lock();
        let key = (kind.key(), ns.to_string(), name.clone());
        if g.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&kind.resource, &name));
        }
        let (api_version, k) = kind.type_meta();
        obj["apiVersion"] = json!(api_version);
        obj["kind"] = json!(k);
        let meta = &mut obj["metadata"];
        if kind.namespaced {
            meta["namespace"] = json!(ns);
        } else if let Some(m) = meta.as_object_mut() {
            m.remove("namespace");
        }
        if meta.get("uid").and_then(Value::as_str).is_none() {
            meta["uid"] = json!(new_uid());
        }
        meta["creationTimestamp"] = json!(now_rfc3339());
        if kind.generation {
            meta["generation"] = json!(1);
        }
        meta["resourceVersion"] = json!((g.rv + 1).to_string());
        check_size(&obj)?;
        g.rv += 1;
        let rv = g.rv;
        let obj = Arc::new(obj);
        g.objects.insert(key, obj.clone());
        self.record(&mut g, kind.key(), EventType::Added, obj.clone(), rv);
        Ok(obj)
    }

    /// The object, if present.
    pub fn get(&self, kind: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.lock()
            .objects
            .get(&(kind.key(), ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Every object of `kind` (in `ns` when given) and the store's version.
    pub fn list(&self, kind: &ResourceType, ns: Option<&str>) -> (Vec<Arc<Value>>, u64) {
        let g = self.lock();
        let gr = kind.key();
        let items = g
            .objects
            .iter()
            .filter(|((k, n, _), _)| *k == gr && ns.is_none_or(|ns| ns == n))
            .map(|(_, v)| v.clone())
            .collect();
        (items, g.rv)
    }

    /// Change an object with `f`. A change that leaves the object equal produces no new
    /// version and no event, as with the API server.
    ///
    /// `metadata.generation` is bumped by a change outside `metadata` (and `status`, for a
    /// type with a status subresource) where the type keeps one.
    ///
    /// # Errors
    /// 404 when absent; whatever `f` returns; 500 for an object over etcd's limit.
    pub fn update(
        &self,
        kind: &ResourceType,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value) -> Result<(), ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        let mut g = self.lock();
        let key = (kind.key(), ns.to_string(), name.to_string());
        let Some(cur) = g.objects.get(&key).cloned() else {
            return Err(ApiError::not_found(&kind.resource, name));
        };
        let mut next = (*cur).clone();
        f(&mut next)?;
        // Identity fields are the server's.
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "namespace",
            "name",
            "generation",
        ] {
            match cur["metadata"].get(field) {
                Some(v) => next["metadata"][field] = v.clone(),
                None => {
                    if let Some(m) = next["metadata"].as_object_mut() {
                        m.remove(field);
                    }
                }
            }
        }
        next["apiVersion"] = cur["apiVersion"].clone();
        next["kind"] = cur["kind"].clone();
        if next == *cur {
            return Ok(cur);
        }
        if kind.generation && spec_changed(&cur, &next, kind.status) {
            let gen_ = cur["metadata"]["generation"].as_i64().unwrap_or(1);
            next["metadata"]["generation"] = json!(gen_ + 1);
        }
        next["metadata"]["resourceVersion"] = json!((g.rv + 1).to_string());
        check_size(&next)?;
        g.rv += 1;
        let rv = g.rv;
        let next = Arc::new(next);
        g.objects.insert(key, next.clone());
        self.record(&mut g, kind.key(), EventType::Modified, next.clone(), rv);
        Ok(next)
    }

    /// Remove an object; the `DELETED` event carries it with a new version.
    pub fn delete(&self, kind: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        let mut g = self.lock();
        let cur = g
            .objects
            .remove(&(kind.key(), ns.to_string(), name.to_string()))?;
        g.rv += 1;
        let rv = g.rv;
        let mut last = (*cur).clone();
        last["metadata"]["resourceVersion"] = json!(rv.to_string());
        let last = Arc::new(last);
        self.record(&mut g, kind.key(), EventType::Deleted, last.clone(), rv);
        Some(last)
    }

    /// Subscribe to changes of `kind`, starting as `rv` asks (`None`: current state).
    ///
    /// # Errors
    /// `(requested, oldest available)` when `rv` is older than the history.
    pub fn watch(
        &self,
        kind: &ResourceType,
        rv: Option<u64>,
    ) -> Result<(WatchStart, Subscription), (u64, u64)> {
        let g = self.lock();
        let kind = kind.key();
        let rx = self.tx.subscribe();
        match rv {
            None => {
                let items = g
                    .objects
                    .iter()
                    .filter(|((k, _, _), _)| *k == kind)
                    .map(|(_, v)| v.clone())
                    .collect();
                Ok((WatchStart::Current(items, g.rv), rx))
            }
            Some(rv) => {
                let floor = g.floor.get(&kind).copied().unwrap_or(g.compacted);
                if rv < floor {
                    return Err((rv, floor + 1));
                }
                let backlog = g
                    .history
                    .get(&kind)
                    .map(|h| h.iter().filter(|e| e.rv > rv).cloned().collect())
                    .unwrap_or_default();
                Ok((WatchStart::Replay(backlog), rx))
            }
        }
    }

    /// Drop the whole watch history (like an etcd compaction): every watch from an
    /// earlier version now gets `410 Expired`. Returns the current version.
    pub fn compact(&self) -> u64 {
        let mut g = self.lock();
        let rv = g.rv;
        let kinds: Vec<GroupResource> = g
            .objects
            .keys()
            .map(|(k, _, _)| k.clone())
            .chain(g.history.keys().cloned())
            .collect();
        g.history.clear();
        g.compacted = rv;
        for kind in kinds {
            g.floor.insert(kind, rv);
        }
        rv
    }

    /// The current resource version.
    pub fn version(&self) -> u64 {
        self.lock().rv
    }

    fn record(&self, g: &mut Inner, kind: GroupResource, etype: EventType, object: Arc<Value>, rv: u64) {
        let ev = Arc::new(Event {
            rv,
            kind: kind.clone(),
            etype,
            object,
        });
        let cap = g.cap;
        let h = g.history.entry(kind.clone()).or_default();
        h.push_back(ev.clone());
        let mut evicted = None;
        while h.len() > cap {
            evicted = h.pop_front().map(|e| e.rv);
        }
        if let Some(e) = evicted {
            g.floor.insert(kind, e);
        }
        let _ = self.tx.send(ev);
    }
}

/// Whether `next` differs from `cur` outside `metadata` (and outside `status` when the
/// type has a status subresource): the changes that bump `metadata.generation`.
pub fn spec_changed(cur: &Value, next: &Value, status_subresource: bool) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            if status_subresource {
                m.remove("status");
            }
        }
        v
    };
    strip(cur) != strip(next)
}

fn check_size(obj: &Value) -> Result<(), ApiError> {
    let n = serde_json::to_vec(obj).map_or(0, |b| b.len());
    if n > MAX_OBJECT_BYTES {
        tracing::debug!(bytes = n, "object refused: over etcd's request limit");
        return Err(ApiError::object_too_large());
    }
    Ok(())
}

/// Name a new object as the API server does: its `metadata.name`, else `generateName`
/// plus five random characters (written back into the object).
///
/// # Errors
/// 422 when it has neither.
pub fn assign_name(obj: &mut Value, resource: &Resource) -> Result<String, ApiError> {
    let name = match obj["metadata"]["name"].as_str().filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => match obj["metadata"]["generateName"].as_str() {
            Some(prefix) => format!("{prefix}{}", &new_uid()[..5]),
            None => {
                return Err(ApiError::invalid(
                    resource,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                ));
            }
        },
    };
    obj["metadata"]["name"] = json!(name);
    Ok(name)
}

/// A body's `metadata.namespace`, when given (not empty), must be the request's.
///
/// # Errors
/// 400 as the API server words it.
pub fn check_namespace(obj: &Value, ns: &str) -> Result<(), ApiError> {
    match obj["metadata"]["namespace"].as_str() {
        Some(b) if !b.is_empty() && b != ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

/// A random UUID (version 4) string.
pub fn new_uid() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random number generator");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Now, RFC 3339 with second precision (`metav1.Time`).
pub fn now_rfc3339() -> String {
    let t = argoexec_node::status::now();
    let s = serde_json::to_value(&t).ok();
    s.and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> Value {
        json!({"metadata": {"name": name}})
    }

    use crate::registry::{CONFIG_MAPS, CRDS, PODS as POD_TYPE, TASK_RESULTS};

    #[test]
    fn versions_increase_and_noop_updates_keep_them() {
        let s = Store::new(10);
        let a = s.create(&TASK_RESULTS, "ns", obj("a")).unwrap();
        assert_eq!(a["metadata"]["resourceVersion"], "1");
        assert_eq!(a["metadata"]["generation"], 1);
        assert_eq!(s.create(&TASK_RESULTS, "ns", obj("a")).unwrap_err().code, 409);
        let same = s.update(&TASK_RESULTS, "ns", "a", |_| Ok(())).unwrap();
        assert_eq!(same["metadata"]["resourceVersion"], "1");
        let b = s
            .update(&TASK_RESULTS, "ns", "a", |v| {
                v["x"] = json!(1);
                Ok(())
            })
            .unwrap();
        assert_eq!(b["metadata"]["resourceVersion"], "2");
        assert_eq!(b["metadata"]["uid"], a["metadata"]["uid"]);
        assert_eq!(s.update(&POD_TYPE, "ns", "a", |_| Ok(())).unwrap_err().code, 404);
    }

    #[test]
    fn watch_replays_history_and_expires_old_versions() {
        let s = Store::new(2);
        for n in ["a", "b", "c"] {
            s.create(&TASK_RESULTS, "ns", obj(n)).unwrap();
        }
        // History keeps versions 2 and 3; the floor is 1.
        let Ok((WatchStart::Replay(ev), _)) = s.watch(&TASK_RESULTS, Some(1)) else {
            panic!("expected a replay");
        };
        assert_eq!(ev.iter().map(|e| e.rv).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(s.watch(&TASK_RESULTS, Some(0)).err(), Some((0, 2)));
        let rv = s.compact();
        assert_eq!(s.watch(&TASK_RESULTS, Some(rv - 1)).err(), Some((2, 4)));
        assert!(s.watch(&TASK_RESULTS, Some(rv)).is_ok());
        assert!(s.watch(&POD_TYPE, Some(rv)).is_ok());
    }

    #[test]
    fn names_are_given_or_generated() {
        let mut o = json!({"metadata": {"generateName": "x-"}});
        let n = assign_name(&mut o, &crate::status::PODS).unwrap();
        assert!(
            n.starts_with("x-") && n.len() == 7 && o["metadata"]["name"] == n.as_str(),
            "{n}"
        );
        let mut o = json!({"metadata": {"name": "a", "generateName": "x-"}});
        assert_eq!(assign_name(&mut o, &crate::status::PODS).unwrap(), "a");
        let e = assign_name(&mut json!({"metadata": {}}), &crate::status::SECRETS).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains("name or generateName is required"),
            "{}",
            e.message
        );
    }

    #[test]
    fn generation_follows_spec_changes_only() {
        let s = Store::new(10);
        // Task results: no status subresource, so only metadata is left out.
        s.create(&TASK_RESULTS, "ns", obj("a")).unwrap();
        fn set(path: &'static str, v: Value) -> impl FnOnce(&mut Value) -> Result<(), ApiError> {
            move |o| {
                let (a, b) = path.split_once('.').unwrap_or((path, ""));
                o[a][b] = v;
                Ok(())
            }
        }
        let o = s
            .update(
                &TASK_RESULTS,
                "ns",
                "a",
                set("metadata.labels", json!({"x": "1"})),
            )
            .unwrap();
        assert_eq!(o["metadata"]["generation"], 1);
        let o = s
            .update(&TASK_RESULTS, "ns", "a", set("status.phase", json!("x")))
            .unwrap();
        assert_eq!(o["metadata"]["generation"], 2);
        // A CRD has a status subresource: status changes keep the generation.
        let o = s.create(&CRDS, "", obj("w.example.com")).unwrap();
        assert!(o["metadata"].get("namespace").is_none());
        let o = s
            .update(&CRDS, "", "w.example.com", set("status.x", json!(1)))
            .unwrap();
        assert_eq!(o["metadata"]["generation"], 1);
        let o = s
            .update(&CRDS, "", "w.example.com", set("spec.group", json!("g")))
            .unwrap();
        assert_eq!(o["metadata"]["generation"], 2);
        // A client cannot set the generation.
        let o = s
            .update(&CRDS, "", "w.example.com", set("metadata.generation", json!(9)))
            .unwrap();
        assert_eq!(o["metadata"]["generation"], 2);
        // ConfigMaps keep none.
        let o = s.create(&CONFIG_MAPS, "ns", obj("c")).unwrap();
        assert!(o["metadata"].get("generation").is_none());
    }

    #[test]
    fn objects_over_etcds_limit_are_refused() {
        let s = Store::new(10);
        let mut big = obj("big");
        big["data"] = json!({"k": "x".repeat(MAX_OBJECT_BYTES)});
        let e = s.create(&CONFIG_MAPS, "ns", big).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (500, "etcdserver: request is too large")
        );
        assert_eq!(s.version(), 0);
        s.create(&CONFIG_MAPS, "ns", obj("c")).unwrap();
        let e = s
            .update(&CONFIG_MAPS, "ns", "c", |o| {
                o["data"] = json!({"k": "x".repeat(MAX_OBJECT_BYTES)});
                Ok(())
            })
            .unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            s.get(&CONFIG_MAPS, "ns", "c").unwrap()["metadata"]["resourceVersion"],
            "1"
        );
    }

    #[test]
    fn uids_look_like_uuids() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, new_uid());
    }
}
